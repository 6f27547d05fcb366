package activity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// FieldError reports a member of an activity (or of one of its objects) whose JSON value has the
// wrong type. Field is the dotted path, for example "from.id" or "attachments[0].contentUrl".
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }

// members holds the members of one JSON object while it is decoded: known members are taken out
// one by one and what is left is kept verbatim as the object's unknown members.
type members struct {
	prefix string
	m      map[string]json.RawMessage
}

func splitObject(prefix string, data []byte) (*members, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		field := prefix
		if field == "" {
			field = "activity"
		}
		return nil, &FieldError{Field: field, Reason: "must be a JSON object"}
	}
	return &members{prefix: prefix, m: m}, nil
}

func (ms *members) path(name string) string {
	if ms.prefix == "" {
		return name
	}
	return ms.prefix + "." + name
}

// take decodes member name into dst and removes it. A missing member or JSON null leaves dst
// unchanged, as Web Chat treats null like absent.
func (ms *members) take(name string, dst any) error {
	raw, ok := ms.m[name]
	if !ok {
		return nil
	}
	delete(ms.m, name)
	if isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return &FieldError{Field: ms.path(name), Reason: "has the wrong type: " + typeReason(dst)}
	}
	return nil
}

// stringField names a string member and where it goes.
type stringField struct {
	name string
	dst  *string
}

// takeStrings takes each string member in turn; the first wrong type stops it.
func (ms *members) takeStrings(fields ...stringField) error {
	for _, f := range fields {
		if err := ms.take(f.name, f.dst); err != nil {
			return err
		}
	}
	return nil
}

// takeObject decodes an object-valued member with its own lossless decoder.
func (ms *members) takeObject(name string, dst interface{ decode(string, []byte) error }) (bool, error) {
	raw, ok := ms.m[name]
	if !ok {
		return false, nil
	}
	delete(ms.m, name)
	if isNull(raw) {
		return false, nil
	}
	return true, dst.decode(ms.path(name), raw)
}

// rest returns the unknown members, or nil when there are none.
func (ms *members) rest() map[string]json.RawMessage {
	if len(ms.m) == 0 {
		return nil
	}
	return ms.m
}

func typeReason(dst any) string {
	switch dst.(type) {
	case *string:
		return "expected a string"
	case *bool:
		return "expected a boolean"
	case *[]json.RawMessage, *[]*Attachment:
		return "expected an array"
	case *map[string]json.RawMessage:
		return "expected an object"
	default:
		return "unexpected JSON value"
	}
}

func isNull(raw json.RawMessage) bool {
	return len(TrimSpace(raw)) == 4 && string(TrimSpace(raw)) == "null"
}

// objectWriter writes a JSON object member by member; known members first, in schema order, then
// unknown members sorted by name so the encoding is deterministic.
type objectWriter struct {
	buf   bytes.Buffer
	n     int
	err   error
	known map[string]bool
	// enc encodes values other than strings into buf (HTML escaping off); made on first use.
	enc *json.Encoder
}

func newObjectWriter() *objectWriter {
	w := &objectWriter{known: map[string]bool{}}
	w.buf.WriteByte('{')
	return w
}

func (w *objectWriter) key(name string) {
	if w.n > 0 {
		w.buf.WriteByte(',')
	}
	w.n++
	w.writeString(name)
	w.buf.WriteByte(':')
}

// marshal is json.Marshal without HTML escaping, so "<", ">" and "&" come back as the sender
// wrote them rather than as \u003c escapes.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func (w *objectWriter) str(name, v string) {
	w.known[name] = true
	if v == "" {
		return
	}
	w.key(name)
	w.writeString(v)
}

// writeString writes s as a JSON string, appending in place: the room for s and its quotes is
// made first, so only escapes can make the append allocate.
func (w *objectWriter) writeString(s string) {
	w.buf.Grow(len(s) + 2)
	w.buf.Write(appendJSONString(w.buf.AvailableBuffer(), s))
}

func (w *objectWriter) value(name string, v any) {
	w.known[name] = true
	if w.err != nil {
		return
	}
	if w.enc == nil {
		w.enc = json.NewEncoder(&w.buf)
		w.enc.SetEscapeHTML(false)
	}
	// The encoder writes nothing when it fails, and then the whole object fails.
	w.key(name)
	if err := w.enc.Encode(v); err != nil {
		w.err = err
		return
	}
	w.buf.Truncate(w.buf.Len() - 1) // the encoder's newline
}

func (w *objectWriter) raw(name string, v json.RawMessage) {
	w.known[name] = true
	if len(v) == 0 {
		return
	}
	w.key(name)
	w.buf.Write(v)
}

func (w *objectWriter) extra(extra map[string]json.RawMessage) {
	names := make([]string, 0, len(extra))
	for k := range extra {
		if !w.known[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		w.key(k)
		w.buf.Write(extra[k])
	}
}

func (w *objectWriter) bytes() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	w.buf.WriteByte('}')
	return w.buf.Bytes(), nil
}
