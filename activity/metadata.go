package activity

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/directline-go/directline/activity/jsonscan"
	whatwgurl "github.com/nlnwa/whatwg-url/url"
)

// Livestream kinds, as Web Chat's getActivityLivestreamingMetadata names them.
const (
	LivestreamInterim     = "interim activity"
	LivestreamInformative = "informative message"
	LivestreamFinal       = "final activity"
	LivestreamContentless = "contentless"
)

// Stream types carried in streamType.
const (
	StreamTypeStreaming   = "streaming"
	StreamTypeInformative = "informative"
	StreamTypeFinal       = "final"
)

// Livestream is the livestream metadata of one activity revision.
type Livestream struct {
	// Kind is one of the Livestream* constants.
	Kind string
	// SessionID is streamId, or the activity's own id for the first revision.
	SessionID string
	// StreamID is the streamId member as sent ("" on a first revision).
	StreamID string
	// StreamType is streaming, informative or final.
	StreamType string
	// Sequence is streamSequence (an integer >= 1), or +Inf for a final revision.
	Sequence float64
	// FromEntity is true when the metadata came from a streaminfo entity rather than channelData.
	FromEntity bool
}

// Livestream reads the livestream metadata exactly as Web Chat does (WEBCHAT-ORDERING §4.5, from
// packages/core/src/utils/getActivityLivestreamingMetadata.ts): channelData first, else the first
// entity of type "streaminfo"; the activity must match one of four shapes (interim, informative,
// final message, final typing) or it is not a livestream activity.
func (a *Activity) Livestream() (Livestream, bool) {
	return a.LivestreamWith(StreamMembersOf(a.ChannelData))
}

// StreamMembers are the members of channelData or of a streaminfo entity that the livestream
// readers look up, raw as sent: nil when absent, JSON null kept (Web Chat keeps a null inside
// channelData).
type StreamMembers struct {
	StreamType, StreamID, StreamSequence json.RawMessage
}

// StreamMembersOf picks the StreamMembers out of decoded members (a nil map has none). A member
// present with a nil value, which encodes as null, is null.
func StreamMembersOf(md map[string]json.RawMessage) StreamMembers {
	member := func(k string) json.RawMessage {
		v, ok := md[k]
		if ok && v == nil {
			return jsonNull
		}
		return v
	}
	return StreamMembers{StreamType: member("streamType"), StreamID: member("streamId"), StreamSequence: member("streamSequence")}
}

var jsonNull = json.RawMessage("null")

// LivestreamWith is Livestream for a reader that has picked channelData's StreamMembers out
// already, as a scan of the activity's bytes does: a.ChannelData is not read, the entities are.
func (a *Activity) LivestreamWith(cd StreamMembers) (Livestream, bool) {
	if ls, ok := a.livestreamFrom(cd); ok {
		return ls, true
	}
	if ent := a.streamInfoEntity(); ent != nil {
		if ls, ok := a.livestreamFrom(StreamMembersOf(ent)); ok {
			ls.FromEntity = true
			return ls, true
		}
	}
	return Livestream{}, false
}

// streamInfoEntity returns the members of the first entity whose type is "streaminfo", or nil.
// Only that entity is decoded into a map; the others are skipped after a scan of their members.
func (a *Activity) streamInfoEntity() map[string]json.RawMessage {
	for _, raw := range a.Entities {
		var typ json.RawMessage
		if jsonscan.Members(raw, func(k, v []byte) {
			if string(k) == "type" {
				typ = v
			}
		}) != nil {
			continue
		}
		if s, _ := jsonscan.StringValue(typ); s != "streaminfo" {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		return m
	}
	return nil
}

// StreamInfo returns the members of the first "streaminfo" entity, or nil when there is none.
func (a *Activity) StreamInfo() map[string]json.RawMessage { return a.streamInfoEntity() }

func (a *Activity) livestreamFrom(md StreamMembers) (Livestream, bool) {
	if a.ID == "" {
		return Livestream{}, false
	}
	streamType, ok := streamTypeOf(md.StreamType)
	if !ok {
		return Livestream{}, false
	}
	streamID := ""
	// Web Chat's schema is optional(undefinedable(string())): absent is fine, null is not (only
	// top-level nulls are dropped on receipt, so a null inside channelData or an entity stays).
	if md.StreamID != nil {
		s, ok := jsonscan.StringValue(md.StreamID)
		if !ok {
			return Livestream{}, false
		}
		streamID = s
	}
	ls := Livestream{StreamID: streamID, StreamType: streamType, SessionID: streamID}
	if ls.SessionID == "" {
		ls.SessionID = a.ID
	}
	switch streamType {
	case StreamTypeStreaming, StreamTypeInformative:
		if a.Type != TypeTyping {
			return Livestream{}, false
		}
		seq, ok := numberValue(md.StreamSequence)
		if !ok || seq < 1 || seq != math.Trunc(seq) || math.IsInf(seq, 0) {
			return Livestream{}, false
		}
		ls.Sequence = seq
		switch {
		case a.contentless():
			ls.Kind = LivestreamContentless
		case streamType == StreamTypeStreaming:
			ls.Kind = LivestreamInterim
		default:
			ls.Kind = LivestreamInformative
		}
		return ls, true
	case StreamTypeFinal:
		if streamID == "" {
			return Livestream{}, false
		}
		switch a.Type {
		case TypeMessage:
		case TypeTyping:
			if a.Text != "" {
				return Livestream{}, false
			}
		default:
			return Livestream{}, false
		}
		ls.Kind = LivestreamFinal
		ls.Sequence = math.Inf(1)
		return ls, true
	}
	return Livestream{}, false
}

// streamTypeOf is the string value of a streamType member (ok false: not a string). The three
// stream types, as they are usually written, come back as their constants without a copy.
func streamTypeOf(raw json.RawMessage) (string, bool) {
	switch string(raw) {
	case `"` + StreamTypeStreaming + `"`:
		return StreamTypeStreaming, true
	case `"` + StreamTypeInformative + `"`:
		return StreamTypeInformative, true
	case `"` + StreamTypeFinal + `"`:
		return StreamTypeFinal, true
	}
	return jsonscan.StringValue(raw)
}

// MirrorStreamInfo copies streamId, streamSequence and streamType from a streaminfo entity into
// channelData when the livestream metadata is only in the entity, never overwriting a member the
// sender set: Web Chat 4.18 reads livestream metadata from channelData only. It reports whether
// anything was copied.
func (a *Activity) MirrorStreamInfo() bool {
	ls, ok := a.Livestream()
	if !ok || !ls.FromEntity {
		return false
	}
	ent := a.streamInfoEntity()
	copied := false
	for _, k := range []string{"streamId", "streamSequence", "streamType"} {
		raw, present := ent[k]
		if !present {
			continue
		}
		if _, set := a.ChannelData[k]; set {
			continue
		}
		a.SetChannelData(k, raw)
		copied = true
	}
	return copied
}

// contentless: no text, no attachments and no Message-entity abstract.
func (a *Activity) contentless() bool {
	if a.Text != "" || len(a.Attachments) > 0 {
		return false
	}
	msg, err := a.MessageEntity()
	return err != nil || msg == nil || msg.Abstract == ""
}

// MessageEntity is the schema.org Message entity Web Chat reads (WEBCHAT-ORDERING §4.6).
type MessageEntity struct {
	// Type is @type; Web Chat requires "Message".
	Type string
	// Abstract is the abstract text, if any.
	Abstract string
	// IsPartOf is the grouping, or nil when absent or invalid.
	IsPartOf *PartOf
	// Position is the part's position, or nil when absent.
	Position *float64
	// Valid is false when Web Chat's checks reject the entity (bad @type, isPartOf without a
	// valid @id or string @type, non-numeric position): such an activity is not grouped at all.
	Valid bool
	// Problem says why Valid is false.
	Problem string
}

// PartOf is isPartOf: {"@id": identifier, "@type": "HowTo" | ...}.
type PartOf struct {
	ID   string
	Type string
}

// ErrMessageEntityWithoutType mirrors Web Chat's parse failure for a schema.org-typed entity that
// lacks @type.
var ErrMessageEntityWithoutType = &FieldError{Field: "entities", Reason: "schema.org entity without @type"}

// MessageEntity finds the first entity whose type starts with "https://schema.org/" and whose @id
// is "" and checks it as Web Chat's valibot schema does. It returns nil, nil when there is none.
// An entity that is not valid JSON is skipped.
func (a *Activity) MessageEntity() (*MessageEntity, error) {
	for _, raw := range a.Entities {
		var e entityMembers
		if jsonscan.Members(raw, e.set) != nil {
			continue
		}
		typ, _ := jsonscan.StringValue(e.typ)
		id, idOK := jsonscan.StringValue(e.id)
		if !strings.HasPrefix(typ, "https://schema.org/") || !idOK || id != "" {
			continue
		}
		// The scan does not check literals; the entity that is read must be valid JSON.
		if !json.Valid(raw) {
			continue
		}
		return parseMessageEntity(&e)
	}
	return nil, nil
}

// entityMembers holds the raw members of an entity that the Message entity reader looks at (nil:
// absent); a repeated member keeps its last value, as decoding into a map does.
type entityMembers struct {
	typ, id, atType, abstract, isPartOf, position json.RawMessage
}

func (e *entityMembers) set(key, v []byte) {
	switch string(key) {
	case "type":
		e.typ = v
	case "@id":
		e.id = v
	case "@type":
		e.atType = v
	case "abstract":
		e.abstract = v
	case "isPartOf":
		e.isPartOf = v
	case "position":
		e.position = v
	}
}

func parseMessageEntity(m *entityMembers) (*MessageEntity, error) {
	if m.atType == nil || isNull(m.atType) {
		return nil, ErrMessageEntityWithoutType
	}
	me := &MessageEntity{Valid: true}
	me.Type, _ = jsonscan.StringValue(FirstValue(m.atType))
	me.Abstract, _ = jsonscan.StringValue(FirstValue(m.abstract))
	fail := func(why string) {
		if me.Valid {
			me.Valid, me.Problem = false, why
		}
	}
	if me.Type != "Message" {
		fail(`@type is not "Message"`)
	}
	if raw := m.isPartOf; raw != nil && !isNull(raw) {
		// As decoding into a map: null is an empty map, an object is read, anything else fails.
		po := jsonscan.TrimSpace(FirstValue(raw))
		var pidRaw, ptypeRaw json.RawMessage
		isObject := len(po) > 0 && po[0] == '{' && jsonscan.Members(po, func(k, v []byte) {
			switch string(k) {
			case "@id":
				pidRaw = v
			case "@type":
				ptypeRaw = v
			}
		}) == nil
		if !isObject && !isNull(po) {
			fail("isPartOf is not an object")
		} else {
			pid, idOK := jsonscan.StringValue(pidRaw)
			ptype, typeOK := jsonscan.StringValue(ptypeRaw)
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
	if raw := m.position; raw != nil && !isNull(raw) {
		n, ok := numberValue(FirstValue(raw))
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

// PartGrouping returns the HowTo part grouping Web Chat keeps together when sorting: the id of the
// grouping and the part's position (nil when absent). ok is false when the activity has no valid
// Message entity with an isPartOf of @type "HowTo".
func (a *Activity) PartGrouping() (groupID string, position *float64, ok bool) {
	me, err := a.MessageEntity()
	if err != nil || me == nil || !me.Valid || me.IsPartOf == nil || me.IsPartOf.Type != "HowTo" {
		return "", nil, false
	}
	return me.IsPartOf.ID, me.Position, true
}

// IsIdentifier reports whether s is a valid schema.org node identifier for Web Chat: a blank node
// ("_:" prefix) or a string the URL constructor accepts (packages/core-graph Identifier.ts, through
// valibot's url()). The URL check is the WHATWG URL Standard's parser, which browsers and Node
// implement: ports above 65535, bad IPv4 or IPv6 hosts and forbidden host code points fail, while
// tabs, newlines and leading control characters are stripped first.
func IsIdentifier(s string) bool {
	if strings.HasPrefix(s, "_:") {
		return true
	}
	_, err := whatwgurl.Parse(s)
	return err == nil
}

// FirstValue reduces a JSON array to its first element (nil for an empty array), as Web Chat's
// schema.org CreativeWork parser does for single-valued properties such as isPartOf and position;
// any other value is returned as it is.
func FirstValue(raw json.RawMessage) json.RawMessage {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 || t[0] != '[' {
		return raw
	}
	var arr []json.RawMessage
	if json.Unmarshal(t, &arr) != nil || len(arr) == 0 {
		return nil
	}
	return arr[0]
}

// numberValue returns raw as a float64 when it is a JSON number (not a numeric string), as
// JSON.parse reads it: a number beyond the float64 range is ±Infinity, still a number.
func numberValue(raw json.RawMessage) (float64, bool) {
	t := jsonscan.TrimSpace(raw)
	if !isJSONNumber(t) {
		return 0, false
	}
	// Up to 15 digits without fraction or exponent are exact in a float64.
	if len(t) <= 15 {
		neg := t[0] == '-'
		digits := t
		if neg {
			digits = t[1:]
		}
		n, plain := 0, true
		for _, c := range digits {
			if c < '0' || c > '9' {
				plain = false
				break
			}
			n = n*10 + int(c-'0')
		}
		if plain {
			if neg {
				return -float64(n), true
			}
			return float64(n), true
		}
	}
	// The grammar is checked, so the only error left is ErrRange, with f already ±Inf.
	f, _ := strconv.ParseFloat(string(t), 64)
	return f, true
}

// isJSONNumber checks the JSON number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(t []byte) bool {
	i := 0
	if i < len(t) && t[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		return i - start
	}
	switch {
	case i < len(t) && t[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(t) && t[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(t)
}
