package activity

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/directline-go/directline/activity/jsonscan"
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
		reason := "must be a JSON object"
		// Members come from JSON already read, so only a whole activity can be malformed.
		var se *json.SyntaxError
		if errors.As(err, &se) {
			reason = "is not valid JSON: " + se.Error()
		}
		return nil, &FieldError{Field: field, Reason: reason}
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
	return string(jsonscan.TrimSpace(raw)) == "null"
}
