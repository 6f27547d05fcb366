package activity

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// Reference readers that decode with encoding/json, as the optimised readers in metadata.go must
// behave: the fuzz and table tests compare the two.

func refStringValue(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// refNumberValue reads a JSON number as JSON.parse does: beyond the float64 range it is ±Infinity.
func refNumberValue(raw json.RawMessage) (float64, bool) {
	var n json.Number
	if json.Unmarshal(raw, &n) != nil || !json.Valid(raw) {
		return 0, false
	}
	var v any
	if json.Unmarshal(raw, &v) == nil {
		f, ok := v.(float64)
		return f, ok
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	return f, err == nil || errors.Is(err, strconv.ErrRange)
}

func refStreamInfoEntity(a *Activity) map[string]json.RawMessage {
	for _, raw := range a.Entities {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		if s, _ := refStringValue(m["type"]); s == "streaminfo" {
			return m
		}
	}
	return nil
}

func refMessageEntity(a *Activity) (*MessageEntity, error) {
	for _, raw := range a.Entities {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		typ, _ := refStringValue(m["type"])
		id, idOK := refStringValue(m["@id"])
		if !strings.HasPrefix(typ, "https://schema.org/") || !idOK || id != "" {
			continue
		}
		return refParseMessageEntity(m)
	}
	return nil, nil
}

func refParseMessageEntity(m map[string]json.RawMessage) (*MessageEntity, error) {
	rawType, ok := m["@type"]
	if !ok || isNull(rawType) {
		return nil, ErrMessageEntityWithoutType
	}
	me := &MessageEntity{Valid: true}
	me.Type, _ = refStringValue(FirstValue(rawType))
	me.Abstract, _ = refStringValue(FirstValue(m["abstract"]))
	fail := func(why string) {
		if me.Valid {
			me.Valid, me.Problem = false, why
		}
	}
	if me.Type != "Message" {
		fail(`@type is not "Message"`)
	}
	if raw, present := m["isPartOf"]; present && !isNull(raw) {
		var po map[string]json.RawMessage
		if json.Unmarshal(FirstValue(raw), &po) != nil {
			fail("isPartOf is not an object")
		} else {
			pid, idOK := refStringValue(po["@id"])
			ptype, typeOK := refStringValue(po["@type"])
			switch {
			case !idOK || !IsIdentifier(pid):
				fail(`isPartOf["@id"] is not a blank node or URL`)
			case !typeOK:
				fail(`isPartOf["@type"] is not a string`)
			default:
				me.IsPartOf = &PartOf{ID: pid, Type: ptype}
			}
		}
	}
	if raw, present := m["position"]; present && !isNull(raw) {
		n, ok := refNumberValue(FirstValue(raw))
		if !ok {
			fail("position is not a number")
		} else {
			me.Position = &n
		}
	}
	if !me.Valid {
		me.IsPartOf, me.Position = nil, nil
	}
	return me, nil
}
