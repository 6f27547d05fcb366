package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/directline-go/directline/activity"
)

// decode reads an ActivitySet (a stream frame or a GET answer) in one validating pass and one
// split, without encoding/json's reflection: what a client does for every frame it receives.
// With sparse, each activity is read by decodeSparse instead of activity.Decode. The set keeps
// no reference to data.
func (s *ActivitySet) decode(data []byte, sparse bool) error {
	if !validJSON(data) {
		// encoding/json names the syntax error and where it is.
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
		return errors.New("invalid JSON")
	}
	s.Activities, s.digests, s.Watermark = nil, nil, ""
	t := activity.TrimSpace(data)
	if string(t) == "null" {
		return nil
	}
	var activities, watermark []byte
	if !activity.ScanMembers(t, func(key, val []byte) {
		// encoding/json matches member names to struct fields ignoring case (bytes.EqualFold);
		// a later duplicate wins.
		switch {
		case bytes.EqualFold(key, []byte("activities")):
			activities = val
		case bytes.EqualFold(key, []byte("watermark")):
			watermark = val
		}
	}) {
		return errors.New("json: an ActivitySet must be a JSON object")
	}
	if activities != nil && string(activities) != "null" {
		if activities[0] != '[' {
			return errors.New("json: ActivitySet.activities must be an array")
		}
		// A stream frame usually holds one activity.
		s.Activities = make([]*activity.Activity, 0, 1)
		s.digests = make([]uint64, 0, 1)
		var err error
		scanElements(activities, func(r []byte) {
			if err != nil {
				return
			}
			var a *activity.Activity
			var d uint64
			if string(r) != "null" {
				if sparse {
					a, err = decodeSparse(r)
				} else {
					a, err = activity.Decode(r)
				}
				d = digest(r)
			}
			s.Activities = append(s.Activities, a)
			s.digests = append(s.digests, d)
		})
		if err != nil {
			return err
		}
	}
	w, err := decodeWatermark(watermark)
	s.Watermark = w
	return err
}

// decodeWatermark takes a watermark sent as a JSON string, a JSON number (offline-directline
// does) or null.
func decodeWatermark(w []byte) (string, error) {
	switch {
	case len(w) == 0 || string(w) == "null":
		return "", nil
	case w[0] == '"':
		s, ok := activity.StringValue(w)
		if !ok {
			return "", fmt.Errorf("watermark %s is not a JSON string", w)
		}
		return s, nil
	default:
		var n json.Number
		if err := json.Unmarshal(w, &n); err != nil {
			return "", fmt.Errorf("watermark %s is neither a string nor a number", w)
		}
		return n.String(), nil
	}
}

// decodeSparse reads only the members of an activity that ordering, deduplication and matching
// need (see SubscribeOptions.Sparse); the others are skipped unread. As in activity.Decode, a
// later duplicate member wins, null is absent, and a member it reads that has the wrong type is a
// *activity.FieldError.
func decodeSparse(raw []byte) (*activity.Activity, error) {
	var typ, id, timestamp, replyTo, from, channelData []byte
	if !activity.ScanMembers(raw, func(key, val []byte) {
		switch string(key) {
		case "type":
			typ = val
		case "id":
			id = val
		case "timestamp":
			timestamp = val
		case "replyToId":
			replyTo = val
		case "from":
			from = val
		case "channelData":
			channelData = val
		}
	}) {
		return nil, &activity.FieldError{Field: "activity", Reason: "must be a JSON object"}
	}
	a := new(activity.Activity)
	for _, f := range [...]struct {
		name string
		val  []byte
		dst  *string
	}{{"type", typ, &a.Type}, {"id", id, &a.ID}, {"timestamp", timestamp, &a.Timestamp}, {"replyToId", replyTo, &a.ReplyToID}} {
		if err := sparseString(f.name, f.val, f.dst); err != nil {
			return nil, err
		}
	}
	if from != nil && string(from) != "null" {
		var id, name, role []byte
		if !activity.ScanMembers(from, func(key, val []byte) {
			switch string(key) {
			case "id":
				id = val
			case "name":
				name = val
			case "role":
				role = val
			}
		}) {
			return nil, &activity.FieldError{Field: "from", Reason: "must be a JSON object"}
		}
		a.From = new(activity.ChannelAccount)
		if err := sparseString("from.id", id, &a.From.ID); err != nil {
			return nil, err
		}
		if err := sparseString("from.name", name, &a.From.Name); err != nil {
			return nil, err
		}
		if err := sparseString("from.role", role, &a.From.Role); err != nil {
			return nil, err
		}
	}
	if channelData != nil && string(channelData) != "null" {
		cd := make(map[string]json.RawMessage, 2)
		if !activity.ScanMembers(channelData, func(key, val []byte) {
			// Copied: the frame's buffer is read into again.
			if k := string(key); k == activity.KeySequenceID || k == activity.KeyClientActivityID {
				cd[k] = bytes.Clone(val)
			}
		}) {
			return nil, &activity.FieldError{Field: "channelData", Reason: "has the wrong type: expected an object"}
		}
		a.ChannelData = cd
	}
	return a, nil
}

// sparseString decodes a string member (nil when absent; null leaves dst empty).
func sparseString(field string, val []byte, dst *string) error {
	if val == nil || string(val) == "null" {
		return nil
	}
	s, ok := activity.StringValue(val)
	if !ok {
		return &activity.FieldError{Field: field, Reason: "has the wrong type: expected a string"}
	}
	*dst = s
	return nil
}

// scanElements calls f with each element of the JSON array t, which json.Valid accepted.
func scanElements(t []byte, f func(val []byte)) {
	i := skipSpace(t, 1)
	if i >= len(t) || t[i] == ']' {
		return
	}
	for i < len(t) {
		end := skipValue(t, i)
		f(t[i:end])
		i = skipSpace(t, end)
		if i >= len(t) || t[i] != ',' {
			return
		}
		i = skipSpace(t, i+1)
	}
}

func skipSpace(t []byte, i int) int {
	for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index after the valid JSON value that starts at t[i].
func skipValue(t []byte, i int) int {
	switch t[i] {
	case '"':
		return skipString(t, i)
	case '{', '[':
		depth := 0
		for ; i < len(t); i++ {
			switch t[i] {
			case '"':
				i = skipString(t, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(t)
	}
	for i < len(t) && t[i] != ' ' && t[i] != '\t' && t[i] != '\n' && t[i] != '\r' && t[i] != ',' && t[i] != '}' && t[i] != ']' {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at t[i] == '"'.
func skipString(t []byte, i int) int {
	for i++; i < len(t); i++ {
		switch t[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(t)
}

// maxNesting is encoding/json's limit on nested objects and arrays.
const maxNesting = 10000

// validJSON reports what json.Valid reports, several times faster: a stream client checks every
// frame, and encoding/json's scanner, one indirect call per byte, was the largest cost of
// reading one.
func validJSON(t []byte) bool {
	var open []byte // the containers around i: '{' or '['
	i := skipSpace(t, 0)
	for {
		// A value starts at i.
		if i >= len(t) {
			return false
		}
		switch c := t[i]; {
		case c == '{' || c == '[':
			if len(open) >= maxNesting {
				return false
			}
			i = skipSpace(t, i+1)
			if i < len(t) && t[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				i++
				break
			}
			open = append(open, c)
			if c == '{' {
				if i = memberKey(t, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			i = validString(t, i)
		case c == '-' || c >= '0' && c <= '9':
			i = validNumber(t, i)
		case c == 't':
			i = literal(t, i, "true")
		case c == 'f':
			i = literal(t, i, "false")
		case c == 'n':
			i = literal(t, i, "null")
		default:
			return false
		}
		if i < 0 {
			return false
		}
		// After a value: close containers until a ',' asks for the next value.
		for {
			i = skipSpace(t, i)
			if len(open) == 0 {
				return i == len(t)
			}
			if i >= len(t) {
				return false
			}
			top := open[len(open)-1]
			if t[i] == top+2 {
				open = open[:len(open)-1]
				i++
				continue
			}
			if t[i] != ',' {
				return false
			}
			i = skipSpace(t, i+1)
			if top == '{' {
				if i = memberKey(t, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// memberKey checks `"key" :` at i and returns where the member's value starts, or -1.
func memberKey(t []byte, i int) int {
	if i >= len(t) || t[i] != '"' {
		return -1
	}
	if i = validString(t, i); i < 0 {
		return -1
	}
	i = skipSpace(t, i)
	if i >= len(t) || t[i] != ':' {
		return -1
	}
	return skipSpace(t, i+1)
}

// validString returns the index after the JSON string at t[i] == '"', or -1: no control
// characters, only JSON's escapes. Bytes that are not UTF-8 pass, as in encoding/json.
func validString(t []byte, i int) int {
	for i++; i < len(t); i++ {
		switch c := t[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(t) {
				return -1
			}
			switch t[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(t) {
					return -1
				}
				for _, h := range t[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// validNumber returns the index after the JSON number at i, or -1:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(t []byte, i int) int {
	digits := func() int {
		start := i
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		return i - start
	}
	if t[i] == '-' {
		i++
	}
	switch {
	case i < len(t) && t[i] == '0':
		i++
	case digits() == 0:
		return -1
	}
	if i < len(t) && t[i] == '.' {
		i++
		if digits() == 0 {
			return -1
		}
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			i++
		}
		if digits() == 0 {
			return -1
		}
	}
	return i
}

// literal returns the index after word at i, or -1.
func literal(t []byte, i int, word string) int {
	if len(t)-i < len(word) || string(t[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}
