package findings

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
)

// act is the part of one activity revision the rules read. It is read from the raw JSON, not from
// activity.Decode alone, so that members of the wrong type can still be judged.
type act struct {
	typ, id, text, role, clientID, replyTo string

	tsPresent bool
	tsRaw     json.RawMessage
	ts        string // the timestamp string; "" when absent or not a string
	tsString  bool

	localTS        string
	localTSPresent bool

	seqKind seqKind
	seq     float64
	seqRaw  json.RawMessage

	raw json.RawMessage
	// decodeErr is activity.Decode's error when a member has the wrong JSON type.
	decodeErr error

	entities []json.RawMessage
	cd       map[string]json.RawMessage
}

type seqKind int

const (
	seqAbsent seqKind = iota
	seqNumber
	seqOther
)

const maxSafeInteger = 1<<53 - 1

// parseAct reads one activity. ok is false when raw is not a JSON object.
func parseAct(raw json.RawMessage, userID string) (*act, bool) {
	m, ok := members(raw)
	if !ok {
		return nil, false
	}
	for k, v := range m {
		// Web Chat treats null like absent (observeActivitySaga.ts).
		if isNull(v) {
			delete(m, k)
		}
	}
	a := &act{}
	a.typ, _ = str(m["type"])
	a.id, _ = str(m["id"])
	a.text, _ = str(m["text"])
	a.replyTo, _ = str(m["replyToId"])
	a.tsRaw, a.tsPresent = m["timestamp"]
	a.ts, a.tsString = str(a.tsRaw)
	if raw, ok := m["localTimestamp"]; ok {
		a.localTS, _ = str(raw)
		a.localTSPresent = true
	}
	// The activity is valid JSON: its members are read without validating them again.
	a.cd, _ = validMembers(m["channelData"])
	if e := jsonscan.TrimSpace(m["entities"]); len(e) > 0 && e[0] == '[' {
		_ = jsonscan.Elements(e, func(v []byte) { a.entities = append(a.entities, v) })
	}
	a.clientID, _ = str(a.cd[activity.KeyClientActivityID])
	if raw, ok := a.cd[activity.KeySequenceID]; ok && !isNull(raw) {
		a.seqRaw = raw
		if n, ok := number(raw); ok {
			a.seqKind, a.seq = seqNumber, n
		} else {
			a.seqKind = seqOther
		}
	}
	a.role = inferRole(m["from"], userID)
	a.raw = raw
	if !plainShape(m) {
		_, a.decodeErr = activity.Decode(raw)
	}
	return a, true
}

// decoded returns the activity as activity.Decode reads it, or nil when it does not decode.
// Only livestream revisions need it, so the full decode is not paid for every activity.
func (a *act) decoded() *activity.Activity {
	if a.decodeErr != nil {
		return nil
	}
	d, err := activity.Decode(a.raw)
	if err != nil {
		a.decodeErr = err
		return nil
	}
	return d
}

// plainShape reports whether the members activity.Decode types have the JSON types it wants
// (strings, objects with string id/name/role, arrays). It may answer false for a valid activity
// (attachments are left to activity.Decode), never true for one Decode rejects.
func plainShape(m map[string]json.RawMessage) bool {
	for _, k := range []string{"type", "id", "timestamp", "channelId", "serviceUrl", "replyToId", "text"} {
		if v, ok := m[k]; ok && !startsWith(v, '"') {
			return false
		}
	}
	// An empty attachments array is all a sent message usually has, and nothing in it can fail.
	if v, ok := m["attachments"]; ok && !isEmptyArray(v) {
		return false
	}
	if v, ok := m["entities"]; ok && !startsWith(v, '[') {
		return false
	}
	if v, ok := m["channelData"]; ok && !startsWith(v, '{') {
		return false
	}
	for _, k := range []string{"from", "recipient", "conversation"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		acc, ok := validMembers(v)
		if !ok {
			return false
		}
		for _, f := range []string{"id", "name", "role"} {
			if fv, ok := acc[f]; ok && !isNull(fv) && !startsWith(fv, '"') {
				return false
			}
		}
	}
	return true
}

func startsWith(raw json.RawMessage, c byte) bool {
	t := jsonscan.TrimSpace(raw)
	return len(t) > 0 && t[0] == c
}

// inferRole applies Web Chat's role inference (observeActivitySaga.ts): no from → channel; no
// role → user when from.id is the user id, bot when it is set, channel otherwise.
func inferRole(raw json.RawMessage, userID string) string {
	from, ok := validMembers(raw)
	if !ok {
		return "channel"
	}
	if role, ok := str(from["role"]); ok && role != "" {
		return role
	}
	id, _ := str(from["id"])
	switch {
	case id != "" && id == userID:
		return activity.RoleUser
	case id != "":
		return activity.RoleBot
	}
	return "channel"
}

// name is how findings and the model name an activity: its id, else its clientActivityID.
func (a *act) name() string {
	if a.id != "" {
		return a.id
	}
	return a.clientID
}

// seqIsInteger: an integer within JavaScript's safe range.
func (a *act) seqIsInteger() bool {
	return a.seq == math.Trunc(a.seq) && math.Abs(a.seq) <= maxSafeInteger
}

// streamMeta is the livestream metadata as sent, valid or not: channelData when it carries
// streamType, else the first streaminfo entity.
type streamMeta struct {
	streamType, streamID string
	seqRaw               json.RawMessage
	seqPresent           bool
}

func (a *act) streamMeta() (streamMeta, bool) {
	src := a.cd
	if _, ok := src["streamType"]; !ok {
		src = nil
		for _, raw := range a.entities {
			if e, ok := validMembers(raw); ok {
				if t, _ := str(e["type"]); t == "streaminfo" {
					src = e
					break
				}
			}
		}
	}
	st, ok := str(src["streamType"])
	if !ok {
		return streamMeta{}, false
	}
	sm := streamMeta{streamType: st}
	sm.streamID, _ = str(src["streamId"])
	sm.seqRaw, sm.seqPresent = src["streamSequence"]
	return sm, true
}

// messageEntity returns the raw schema.org Message entity Web Chat reads: the first entity whose
// type starts with https://schema.org/ and whose @id is "" (getOrgSchemaMessage.ts).
func (a *act) messageEntity() map[string]json.RawMessage {
	for _, raw := range a.entities {
		e, ok := validMembers(raw)
		if !ok {
			continue
		}
		t, _ := str(e["type"])
		id, ok := str(e["@id"])
		if strings.HasPrefix(t, "https://schema.org/") && ok && id == "" {
			return e
		}
	}
	return nil
}

// partOf is the isPartOf of the Message entity as compact JSON ("" when absent), used to see
// whether it changes between revisions.
func (a *act) partOf() string {
	e := a.messageEntity()
	raw, ok := e["isPartOf"]
	if !ok || isNull(raw) {
		return ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

func str(raw json.RawMessage) (string, bool) { return jsonscan.StringValue(raw) }

// members reads the JSON object raw as json.Unmarshal into a map[string]json.RawMessage does: ok
// is false where that fails or leaves the map nil (null), and the values are the same bytes, here
// slices of raw rather than copies. After json.Valid, the member scan sees what encoding/json
// sees; keys are unescaped, and keys with invalid UTF-8 read with its replacement characters, as
// encoding/json reads them.
func members(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	return validMembers(raw)
}

// validMembers is members for a value already known to be valid JSON, such as a member of an
// activity members has read.
func validMembers(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	m := map[string]json.RawMessage{}
	jsonscan.Members(t, func(k, v []byte) {
		key, known := commonKey(k)
		if !known {
			key = string(k)
			if !utf8.Valid(k) {
				_ = json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &key)
			}
		}
		m[key] = v
	})
	return m, true
}

// commonKey returns the member names of activities, channelData, accounts and entities as
// constants, so that the maps of a long log do not allocate a copy of each.
func commonKey(k []byte) (string, bool) {
	switch string(k) {
	case "type":
		return "type", true
	case "id":
		return "id", true
	case "timestamp":
		return "timestamp", true
	case "localTimestamp":
		return "localTimestamp", true
	case "localTimezone":
		return "localTimezone", true
	case "locale":
		return "locale", true
	case "from":
		return "from", true
	case "recipient":
		return "recipient", true
	case "conversation":
		return "conversation", true
	case "channelId":
		return "channelId", true
	case "serviceUrl":
		return "serviceUrl", true
	case "text":
		return "text", true
	case "replyToId":
		return "replyToId", true
	case "channelData":
		return "channelData", true
	case "entities":
		return "entities", true
	case "attachments":
		return "attachments", true
	case "name":
		return "name", true
	case "role":
		return "role", true
	case activity.KeyClientActivityID:
		return activity.KeyClientActivityID, true
	case activity.KeySequenceID:
		return activity.KeySequenceID, true
	case "streamType":
		return "streamType", true
	case "streamId":
		return "streamId", true
	case "streamSequence":
		return "streamSequence", true
	case "@context":
		return "@context", true
	case "@id":
		return "@id", true
	case "@type":
		return "@type", true
	case "isPartOf":
		return "isPartOf", true
	case "position":
		return "position", true
	}
	return "", false
}

func number(raw json.RawMessage) (float64, bool) {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 || !(t[0] == '-' || (t[0] >= '0' && t[0] <= '9')) {
		return 0, false
	}
	var n float64
	if json.Unmarshal(t, &n) != nil {
		return 0, false
	}
	return n, true
}

func isEmptyArray(raw json.RawMessage) bool {
	t := jsonscan.TrimSpace(raw)
	return len(t) >= 2 && t[0] == '[' && len(jsonscan.TrimSpace(t[1:len(t)-1])) == 0
}

func isNull(raw json.RawMessage) bool { return string(jsonscan.TrimSpace(raw)) == "null" }

// jsonKind names the JSON type of raw for messages.
func jsonKind(raw json.RawMessage) string {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 {
		return "empty"
	}
	switch t[0] {
	case '"':
		return "a string " + string(t)
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "the number " + string(t)
}

func unmarshalFirst(raw json.RawMessage, dst any) error {
	return json.Unmarshal(activity.FirstValue(raw), dst)
}
