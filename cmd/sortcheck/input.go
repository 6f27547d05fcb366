package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/directline-go/directline/activity/jsonscan"
	"github.com/directline-go/directline/sortkeys"
)

// InputError is unusable input: Line is 1-based (0 when the input as a whole is at fault), Column
// the 1-based byte column (0 when not given).
type InputError struct {
	Line, Column int
	Reason       string
}

func (e *InputError) Error() string {
	switch {
	case e.Line == 0:
		return "input: " + e.Reason
	case e.Column > 0:
		return fmt.Sprintf("input line %d:%d: %s", e.Line, e.Column, e.Reason)
	}
	return fmt.Sprintf("input line %d: %s", e.Line, e.Reason)
}

// Log is an activity log read from one of the supported formats.
type Log struct {
	// Format names the detected format (see formats).
	Format string
	Events []sortkeys.Event
	// Lines[i] and Columns[i] are the 1-based input line and byte column where Events[i]
	// starts.
	Lines, Columns []int
	// Profile and UserID come from a conformance vector; "" otherwise. ProfileAt is where the
	// profile stands, for an error about it: its Reason is empty.
	Profile   string
	ProfileAt InputError
	UserID    string
	// Expects counts the vector's expect checkpoints, which are not events of the replay;
	// Checkpoints holds them.
	Expects     int
	Checkpoints []Checkpoint
}

// Checkpoint is a conformance vector's expect event: the order (and screen, when given) after
// the first After events, at input line Line and byte column Column.
type Checkpoint struct {
	After         int
	Line, Column  int
	Order, Screen []string
}

// Detected input formats.
const (
	FormatJSONLines   = "jsonl"
	FormatTranscript  = "transcript"
	FormatActivitySet = "activity-sets"
	FormatVector      = "vector"
	FormatServiceLog  = "service-log"
)

var knownOps = map[sortkeys.Op]bool{
	sortkeys.OpIncoming: true, sortkeys.OpPost: true, sortkeys.OpFulfilled: true,
	sortkeys.OpDelete: true, sortkeys.OpAdvance: true, sortkeys.OpExpect: true,
}

// reader walks JSON values in data and knows the line of every byte offset.
type reader struct {
	data     []byte
	newlines []int
	// oneLine: the input is a single line, where a line number alone does not say where.
	oneLine bool
	log     *Log
	// shortcut takes valid objects of a stream and plain events without encoding/json.
	shortcut bool
	// progress, when set, hears how many bytes of data have been read.
	progress func(done, total int)
	// sawSet: an ActivitySet was read, so the input is a capture, whose keep-alive frames
	// ("", {}, {"watermark":...}) carry no activities.
	sawSet bool
	// Until then such frames are read as they would be elsewhere (a {} as an activity, a string
	// as an error), and remembered to be taken back: tentative holds the indexes of the events
	// they became, frameErr the error of the first string.
	tentative []int
	frameErr  error
}

// ReadLog detects the format of data and returns its events:
//   - JSON Lines (or concatenated JSON values), each an activity, a conformance event {"op":...},
//     an ActivitySet {"activities":[...],"watermark":"N"} or a line of the service's log export
//     {"seq":N,"kind":...,"activity":{...}};
//   - a JSON array of activities (Bot Framework Emulator .transcript) or of ActivitySets
//     (a WebSocket capture, whose keep-alive frames "", {} and {"watermark":"N"} are skipped);
//   - a conformance vector {"name",...,"events":[...]}; expect checkpoints are dropped.
//
// Activities become incoming events. Errors are *InputError. progress, when not nil, is called
// now and then with the bytes read so far and the input's length.
func ReadLog(data []byte, progress func(done, total int)) (*Log, error) {
	return readLog(data, true, progress)
}

// readLog is ReadLog; without the shortcut, every value goes through encoding/json's decoder
// (the tests compare the two).
func readLog(data []byte, shortcut bool, progress func(done, total int)) (*Log, error) {
	data, err := fromUTF16(data)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte(bom))
	r := &reader{data: data, log: &Log{}, shortcut: shortcut, progress: progress}
	r.newlines = make([]int, 0, bytes.Count(data, []byte{'\n'}))
	for i, b := range data {
		if b == '\n' {
			r.newlines = append(r.newlines, i)
		}
	}
	// The service answers 400 to a body that is not UTF-8; read on, ids that differ only in
	// invalid bytes would merge, as each decodes to U+FFFD.
	if i := invalidUTF8(data); i >= 0 {
		return nil, r.errAtColumn(i, "invalid UTF-8")
	}
	last := len(bytes.TrimRight(data, " \t\r\n"))
	r.oneLine = len(r.newlines) == 0 || r.newlines[0] >= last
	// A log of a million events takes about 80 MB of events and lines: sized up front rather
	// than doubled, fresh memory is touched once. Logs hold an event per line or fewer, and no
	// event is under 32 bytes of JSON.
	est := min(len(r.newlines)+1, len(data)/32+1)
	r.log.Events, r.log.Lines, r.log.Columns = make([]sortkeys.Event, 0, est), make([]int, 0, est), make([]int, 0, est)
	start := jsonscan.SkipSpace(data, 0)
	switch {
	case start == len(data):
		return nil, &InputError{Reason: "empty input"}
	case data[start] == '[':
		r.log.Format = FormatTranscript
		end, err := r.array(data[start:], start, r.element)
		if err != nil {
			return nil, r.firstError(err)
		}
		if rest := jsonscan.SkipSpace(data, end); rest != len(data) {
			return nil, r.after(rest, "JSON array")
		}
	default:
		if err := r.stream(); err != nil {
			return nil, r.firstError(err)
		}
	}
	if err := r.firstError(nil); err != nil {
		return nil, err
	}
	if len(r.log.Events) == 0 {
		return nil, &InputError{Reason: "no activities"}
	}
	if r.progress != nil {
		// add reports every few thousand events; the bar ends full.
		r.progress(len(r.data), len(r.data))
	}
	return r.log, nil
}

func (r *reader) line(off int) int { return 1 + sort.SearchInts(r.newlines, off) }

// column is the 1-based byte column of offset off.
func (r *reader) column(off int) int { return off - r.lineStart(r.line(off)) + 1 }

// errAt is an InputError at offset off: its line, and its column too in an input of one line.
func (r *reader) errAt(off int, reason string) *InputError {
	e := &InputError{Line: r.line(off), Reason: reason}
	if r.oneLine {
		e.Column = r.column(off)
	}
	return e
}

// where is the place of Events[i] in the input: "line L", or "line L:C" (C the byte column) when
// another event starts on that line too, as in an array written on one line.
func (l *Log) where(i int) string {
	if (i > 0 && l.Lines[i-1] == l.Lines[i]) || (i+1 < len(l.Lines) && l.Lines[i+1] == l.Lines[i]) {
		return fmt.Sprintf("line %d:%d", l.Lines[i], l.Columns[i])
	}
	return fmt.Sprintf("line %d", l.Lines[i])
}

// stream reads a sequence of top-level JSON values (JSON Lines). With the shortcut, an object
// that is valid JSON by itself is taken as a slice of the input; from the first value that is not
// (or without the shortcut, from the start) the decoder reads on and reports what is wrong.
func (r *reader) stream() error {
	n, pos := 0, 0
	for r.shortcut {
		off := jsonscan.SkipSpace(r.data, pos)
		if off == len(r.data) {
			return nil
		}
		end, err := jsonscan.SkipValue(r.data, off)
		if r.data[off] != '{' || err != nil || !json.Valid(r.data[off:end]) {
			break
		}
		n++
		if done, err := r.value(r.data[off:end], off, end, n); done || err != nil {
			return err
		}
		pos = end
	}
	dec := json.NewDecoder(bytes.NewReader(r.data[pos:]))
	for {
		last := pos + int(dec.InputOffset())
		off := jsonscan.SkipSpace(r.data, last)
		// JSON Lines has no separators: the decoder would take the value after one for the next.
		if off < len(r.data) && (r.data[off] == ',' || r.data[off] == ':') {
			return r.separator(off, n)
		}
		// Values of a stream are objects; anything else on the line of the one before is not
		// another value but garbage after it.
		if n > 0 && off < len(r.data) && r.data[off] != '{' && bytes.IndexByte(r.data[last:off], '\n') < 0 {
			return r.after(off, "JSON value")
		}
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return r.streamError(err, off)
		}
		n++
		if done, err := r.value(raw, off, pos+int(dec.InputOffset()), n); done || err != nil {
			return err
		}
	}
}

// value takes raw, the n-th top-level value of a stream, from offset off to end. done is true
// when it is a conformance vector, which is the whole input.
func (r *reader) value(raw json.RawMessage, off, end, n int) (done bool, err error) {
	if n == 1 && hasMember(raw, "events") {
		if rest := jsonscan.SkipSpace(r.data, end); rest != len(r.data) {
			return true, r.after(rest, "conformance vector")
		}
		return true, r.vector(raw, off)
	}
	if r.log.Format == "" {
		r.log.Format = FormatJSONLines
	}
	return false, r.element(raw, off)
}

// streamError reports a value that does not decode. In JSON Lines a truncated line is only
// detected on the next line, which is valid JSON by itself: then the line the value starts on is
// reported, as JSON by itself. In a value written over several lines the error is where it is.
func (r *reader) streamError(err error, off int) error {
	ie := r.syntax(err, off).(*InputError)
	if start := r.line(off); ie.Line > start && json.Valid(r.lineBytes(ie.Line)) {
		var v json.RawMessage
		lerr := json.Unmarshal(r.lineBytes(start)[off-r.lineStart(start):], &v)
		at := off
		if se := (*json.SyntaxError)(nil); errors.As(lerr, &se) {
			at = off + int(se.Offset) - 1
		}
		return r.invalid(at, lerr)
	}
	return ie
}

// after reports unexpected data at offset off after a value, with its column: it often follows
// on the value's own line.
func (r *reader) after(off int, what string) error {
	return r.errAtColumn(off, "unexpected data after the "+what)
}

// errAtColumn is an InputError at offset off with its line and column, for a fault that a line
// number alone does not find: a byte among others on a line.
func (r *reader) errAtColumn(off int, reason string) *InputError {
	e := r.errAt(off, reason)
	e.Column = r.column(off)
	return e
}

// separator reports the ',' or ':' at offset off of a stream, after n values, with its column.
func (r *reader) separator(off, n int) error {
	if n > 0 {
		return r.after(off, "JSON value")
	}
	return r.errAtColumn(off, fmt.Sprintf("unexpected %q before the first JSON value", r.data[off]))
}

// lineStart is the offset where the 1-based line starts.
func (r *reader) lineStart(line int) int {
	if line == 1 {
		return 0
	}
	return r.newlines[line-2] + 1
}

// lineBytes is the 1-based line, without its newline.
func (r *reader) lineBytes(line int) []byte {
	end := len(r.data)
	if line-1 < len(r.newlines) {
		end = r.newlines[line-1]
	}
	return r.data[r.lineStart(line):end]
}

// element takes one value of a JSON Lines stream or a top-level array.
func (r *reader) element(raw json.RawMessage, off int) error {
	frame := isEmptyFrame(raw)
	if frame && r.sawSet {
		return nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		err := r.errAt(off, "expected a JSON object (an activity, an ActivitySet or an event)")
		if !frame {
			return err
		}
		if r.frameErr == nil {
			r.frameErr = err
		}
		return nil
	}
	if frame {
		r.tentative = append(r.tentative, len(r.log.Events))
	}
	switch {
	case hasMember(raw, "op"):
		return r.event(raw, off)
	case hasMember(raw, "seq") && hasMember(raw, "activity"):
		return r.logEntry(raw, off)
	case hasMember(raw, "activities"):
		// A capture is an array of ActivitySets or, written a frame per line, JSON Lines of them.
		if r.log.Format == FormatTranscript || r.log.Format == FormatJSONLines {
			r.log.Format = FormatActivitySet
		}
		if !r.sawSet {
			r.sawSet = true
			r.dropTentative()
		}
		return r.activitySet(raw, off)
	}
	r.add(sortkeys.Event{Op: sortkeys.OpIncoming, Activity: raw}, off)
	return nil
}

// isEmptyFrame reports whether raw could be a keep-alive frame of a WebSocket capture: an empty
// string, or an object with no member but watermark. An activity always has other members.
func isEmptyFrame(raw json.RawMessage) bool {
	raw = jsonscan.TrimSpace(raw)
	if string(raw) == `""` {
		return true
	}
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	other := false
	_ = jsonscan.Members(raw, func(k, _ []byte) { other = other || string(k) != "watermark" })
	return !other
}

// dropTentative takes back the events that keep-alive frames became before the first ActivitySet.
func (r *reader) dropTentative() {
	r.frameErr = nil
	if len(r.tentative) == 0 {
		return
	}
	l, kept, next := r.log, 0, 0
	for i := range l.Events {
		if next < len(r.tentative) && r.tentative[next] == i {
			next++
			continue
		}
		l.Events[kept], l.Lines[kept], l.Columns[kept] = l.Events[i], l.Lines[i], l.Columns[i]
		kept++
	}
	clear(l.Events[kept:])
	l.Events, l.Lines, l.Columns = l.Events[:kept], l.Lines[:kept], l.Columns[:kept]
	r.tentative = nil
}

// firstError is the error to report when reading ended with err (nil when it did not): a string
// frame's error comes first in the input when no ActivitySet showed that it was a keep-alive.
func (r *reader) firstError(err error) error {
	if r.frameErr != nil {
		return r.frameErr
	}
	return err
}

func (r *reader) add(ev sortkeys.Event, off int) {
	r.log.Events = append(r.log.Events, ev)
	r.log.Lines = append(r.log.Lines, r.line(off))
	r.log.Columns = append(r.log.Columns, r.column(off))
	if r.progress != nil && len(r.log.Events)%4096 == 0 {
		r.progress(off, len(r.data))
	}
}

// logEntry takes one line of the service's log export (GET .../conversations/{id}/log):
// {"seq":N,"kind":"activity"|"revision","ephemeral":bool,"activity":{...}}.
func (r *reader) logEntry(raw json.RawMessage, off int) error {
	var e struct {
		Activity json.RawMessage `json:"activity"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || len(e.Activity) == 0 || e.Activity[0] != '{' {
		return r.errAt(off, "log entry without an activity object")
	}
	if r.log.Format == FormatJSONLines {
		r.log.Format = FormatServiceLog
	}
	r.add(sortkeys.Event{Op: sortkeys.OpIncoming, Activity: e.Activity}, off)
	return nil
}

// activitySet takes {"activities":[...],"watermark":"N"} (Direct Line 3.0 ActivitySet).
func (r *reader) activitySet(raw json.RawMessage, off int) error {
	return r.object(raw, off, func(key string, v json.RawMessage, voff int) error {
		if key != "activities" {
			return nil
		}
		if isNullJSON(v) {
			return nil
		}
		return r.elements(v, voff, func(a json.RawMessage, aoff int) error {
			if len(a) == 0 || a[0] != '{' {
				return r.errAt(aoff, "ActivitySet.activities must hold activity objects")
			}
			r.add(sortkeys.Event{Op: sortkeys.OpIncoming, Activity: a}, aoff)
			return nil
		})
	})
}

func (r *reader) event(raw json.RawMessage, off int) error {
	var ev sortkeys.Event
	ok := false
	if r.shortcut {
		ev, ok = plainEvent(raw)
	}
	if !ok {
		if err := json.Unmarshal(raw, &ev); err != nil {
			return r.errAt(off, "event: "+err.Error())
		}
	}
	if !knownOps[ev.Op] {
		return r.errAt(off, fmt.Sprintf("unknown op %q", ev.Op))
	}
	switch ev.Op {
	case sortkeys.OpExpect:
		var want struct{ Order, Screen []string }
		if err := json.Unmarshal(raw, &want); err != nil {
			return r.errAt(off, "expect: "+err.Error())
		}
		if want.Order == nil {
			return r.errAt(off, "expect without order")
		}
		r.log.Expects++
		r.log.Checkpoints = append(r.log.Checkpoints, Checkpoint{After: len(r.log.Events), Line: r.line(off), Column: r.column(off),
			Order: want.Order, Screen: want.Screen})
		return nil
	case sortkeys.OpIncoming, sortkeys.OpPost, sortkeys.OpFulfilled:
		if len(ev.Activity) == 0 || ev.Activity[0] != '{' {
			return r.errAt(off, fmt.Sprintf("%s event without an activity object", ev.Op))
		}
	case sortkeys.OpDelete:
		// The replay would ignore it, as deleting an id nothing has.
		if ev.ActivityID == "" {
			return r.errAt(off, "delete event without an activityID")
		}
	}
	r.add(ev, off)
	return nil
}

// vector takes a conformance vector (conformance README "File format").
func (r *reader) vector(raw json.RawMessage, off int) error {
	r.log.Format = FormatVector
	return r.object(raw, off, func(key string, v json.RawMessage, voff int) error {
		switch key {
		case "profile":
			if json.Unmarshal(v, &r.log.Profile) != nil {
				return r.errAt(voff, "profile must be a string")
			}
			r.log.ProfileAt = *r.errAt(voff, "")
		case "userID":
			if json.Unmarshal(v, &r.log.UserID) != nil {
				return r.errAt(voff, "userID must be a string")
			}
		case "events":
			// Of repeated members JSON.parse keeps the last, as for profile and userID.
			l := r.log
			l.Events, l.Lines, l.Columns, l.Checkpoints, l.Expects = l.Events[:0], l.Lines[:0], l.Columns[:0], nil, 0
			return r.elements(v, voff, func(e json.RawMessage, eoff int) error {
				if len(e) == 0 || e[0] != '{' {
					return r.errAt(eoff, "expected an event object")
				}
				return r.event(e, eoff)
			})
		}
		return nil
	})
}

// array calls fn for every element of the JSON array at the start of raw, which starts at offset
// base, and returns the offset after the array. raw need not be valid JSON: errors name the line
// where decoding stopped.
func (r *reader) array(raw []byte, base int, fn func(json.RawMessage, int) error) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return 0, r.syntax(err, base)
	}
	if tok != json.Delim('[') {
		return 0, r.errAt(base, "expected a JSON array")
	}
	for dec.More() {
		off := base + skipSep(raw, int(dec.InputOffset()))
		var el json.RawMessage
		if err := dec.Decode(&el); err != nil {
			return 0, r.syntax(err, base)
		}
		if err := fn(el, off); err != nil {
			return 0, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return 0, r.syntax(err, base)
	}
	return base + int(dec.InputOffset()), nil
}

// The values below come from a value the decoder has already read whole, so they are valid JSON:
// the structural scanner walks them as encoding/json would, without checking them again.

// elements calls fn for every element of the JSON array raw, which starts at offset base.
func (r *reader) elements(raw json.RawMessage, base int, fn func(json.RawMessage, int) error) error {
	if t := jsonscan.TrimSpace(raw); len(t) == 0 || t[0] != '[' {
		return r.errAt(base, "expected a JSON array")
	}
	var err error
	_ = jsonscan.Elements(raw, func(v []byte) {
		if err == nil {
			err = fn(v, base+offsetIn(raw, v))
		}
	})
	return err
}

// object calls fn for every member of the JSON object raw, which starts at offset base.
func (r *reader) object(raw json.RawMessage, base int, fn func(string, json.RawMessage, int) error) error {
	if t := jsonscan.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return r.errAt(base, "expected a JSON object")
	}
	var err error
	_ = jsonscan.Members(raw, func(k, v []byte) {
		if err == nil {
			err = fn(string(k), v, base+offsetIn(raw, v))
		}
	})
	return err
}

// offsetIn is the offset of v, a slice of raw, within raw.
func offsetIn(raw, v []byte) int { return cap(raw) - cap(v) }

// plainEvent reads a conformance event without encoding/json when every member is one it reads
// with the JSON type it wants (op, clientActivityID and activityID strings, activity an object,
// at a number) or a member it ignores; ok is false otherwise, and encoding/json then decides,
// with its case-insensitive key matching, its handling of null and its errors.
func plainEvent(raw json.RawMessage) (ev sortkeys.Event, ok bool) {
	ok = true
	_ = jsonscan.Members(raw, func(k, v []byte) {
		if !ok {
			return
		}
		switch string(k) {
		case "op":
			var s string
			s, ok = jsonscan.StringValue(v)
			ev.Op = sortkeys.Op(s)
		case "activity":
			ok = v[0] == '{'
			ev.Activity = v
		case "clientActivityID":
			ev.ClientActivityID, ok = jsonscan.StringValue(v)
		case "activityID":
			ev.ActivityID, ok = jsonscan.StringValue(v)
		case "at":
			f, err := strconv.ParseFloat(string(v), 64)
			ok = err == nil && (v[0] == '-' || v[0] >= '0' && v[0] <= '9')
			ev.At = &f
		default:
			for _, name := range eventMembers {
				if strings.EqualFold(string(k), name) {
					ok = false
				}
			}
		}
	})
	return ev, ok
}

// eventMembers are the JSON names of sortkeys.Event's fields.
var eventMembers = []string{"op", "activity", "clientActivityID", "activityID", "at"}

// syntax turns an error decoding the value that starts at offset from, or a later value of the
// array that starts there, into an InputError at the place where the input goes wrong.
func (r *reader) syntax(err error, from int) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// The decoder's offsets leave out the bytes its Token and More calls read (an array's
		// brackets, commas and blank lines), so the value is scanned again from its start.
		var v json.RawMessage
		if errors.As(json.Unmarshal(r.data[from:], &v), &se) {
			return r.invalid(from+int(se.Offset)-1, se)
		}
	}
	// An array that ends early ends in io.EOF, a value in io.ErrUnexpectedEOF.
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return r.errAt(len(r.data)-1, "invalid JSON: unexpected end of input")
	}
	return r.errAt(from, "invalid JSON: "+err.Error())
}

// invalid is the syntax error err at offset at. A byte order mark there is named: the decoder
// calls its first byte the character 'ï'.
func (r *reader) invalid(at int, err error) *InputError {
	if bytes.HasPrefix(r.data[at:], []byte(bom)) {
		return r.errAt(at, "invalid JSON: a byte order mark (U+FEFF), which may only start the input")
	}
	return r.errAt(at, "invalid JSON: "+err.Error())
}

// bom is the UTF-8 byte order mark, U+FEFF.
const bom = "\xef\xbb\xbf"

// fromUTF16 returns data in UTF-8 when it is UTF-16, as PowerShell's > and Out-File write it: with
// a byte order mark, or without one, when a NUL beside the first character (JSON text starts with
// an ASCII one) gives the order. Line numbers stay; byte columns are those of the UTF-8.
func fromUTF16(data []byte) ([]byte, error) {
	var order binary.ByteOrder
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe, 0, 0}), bytes.HasPrefix(data, []byte{0, 0, 0xfe, 0xff}):
		return nil, &InputError{Reason: "the input is UTF-32, which is not read: save it as UTF-8"}
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		order, data = binary.LittleEndian, data[2:]
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		order, data = binary.BigEndian, data[2:]
	case len(data) >= 2 && data[0] != 0 && data[1] == 0:
		order = binary.LittleEndian
	case len(data) >= 2 && data[0] == 0 && data[1] != 0:
		order = binary.BigEndian
	default:
		return data, nil
	}
	if len(data)%2 != 0 {
		return nil, &InputError{Reason: fmt.Sprintf("the input is UTF-16 (%s) but has an odd number of bytes: is it cut short?", order)}
	}
	out := make([]byte, 0, len(data)/2*3)
	for i := 0; i < len(data); i += 2 {
		r := rune(order.Uint16(data[i:]))
		if utf16.IsSurrogate(r) && i+3 < len(data) {
			if pair := utf16.DecodeRune(r, rune(order.Uint16(data[i+2:]))); pair != utf8.RuneError {
				r = pair
				i += 2
			}
		}
		// A lone surrogate becomes U+FFFD, as in any UTF-8 text.
		out = utf8.AppendRune(out, r)
	}
	return out, nil
}

// invalidUTF8 is the offset of the first byte of data that is not UTF-8, -1 when there is none.
func invalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// skipSep skips whitespace and the commas between the elements of an array.
func skipSep(data []byte, off int) int {
	for off < len(data) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',':
			off++
		default:
			return off
		}
	}
	return off
}

// hasMember reports whether the object raw, valid JSON, has a member named name.
func hasMember(raw json.RawMessage, name string) bool {
	found := false
	_ = jsonscan.Members(raw, func(k, _ []byte) { found = found || string(k) == name })
	return found
}

func isNullJSON(raw json.RawMessage) bool { return string(jsonscan.TrimSpace(raw)) == "null" }
