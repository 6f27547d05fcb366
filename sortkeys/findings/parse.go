package findings

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
)

// act is the part of one activity revision the rules read. It is read from the raw JSON, not from
// activity.Decode alone, so that members of the wrong type can still be judged. Its raw values are
// slices of the activity, which the caller keeps anyway; only what a rule compares as a string is
// copied. Nothing keeps an act once its rules have run (see delivered and post).
type act struct {
	typ, id, role, clientID, replyTo string
	// idOther says the id member is there but not a string (ActivityMalformed reports it).
	idOther bool
	// textRaw is the text member as sent; text decodes it for the few rules that compare texts.
	textRaw json.RawMessage

	tsRaw    json.RawMessage // nil when absent
	ts       string          // the timestamp string; "" when absent or not a string
	tsString bool

	localTS        string
	localTSPresent bool

	seqKind seqKind
	seq     float64
	seqRaw  json.RawMessage

	raw json.RawMessage
	// decodeErr is activity.Decode's error when a member has the wrong JSON type.
	decodeErr error
	// full is activity.Decode's reading when parse needed it (plainShape did not hold).
	full *activity.Activity
	// cdObject says channelData is an object.
	cdObject bool
	// roleInferred says from has an id and no role: role is what Web Chat infers from them.
	roleInferred bool
	// from is the from object's members, as read.
	from account

	entities []json.RawMessage
	// stream holds channelData's livestream members; streamMeta reads it when it has streamType.
	stream streamFields
}

type seqKind uint8

const (
	seqAbsent seqKind = iota
	seqNumber
	seqOther
)

const maxSafeInteger = 1<<53 - 1

// activityMembers are the raw values of the top-level members the rules and plainShape read.
type activityMembers struct {
	typ, id, text, replyTo, timestamp, localTimestamp, channelID, serviceURL []byte
	from, recipient, conversation, channelData, entities, attachments        []byte
}

// field returns where the value of the member named key goes, nil for a member nothing reads.
func (m *activityMembers) field(key []byte) *[]byte {
	switch string(key) {
	case "type":
		return &m.typ
	case "id":
		return &m.id
	case "text":
		return &m.text
	case "replyToId":
		return &m.replyTo
	case "timestamp":
		return &m.timestamp
	case "localTimestamp":
		return &m.localTimestamp
	case "channelId":
		return &m.channelID
	case "serviceUrl":
		return &m.serviceURL
	case "from":
		return &m.from
	case "recipient":
		return &m.recipient
	case "conversation":
		return &m.conversation
	case "channelData":
		return &m.channelData
	case "entities":
		return &m.entities
	case "attachments":
		return &m.attachments
	}
	return nil
}

// readActivity reads the members of the activity raw in one pass. ok is false where json.Unmarshal
// into a map[string]json.RawMessage fails or leaves the map nil: raw is not a JSON object. A value
// is nil when the member is absent or null: Web Chat treats null like absent
// (observeActivitySaga.ts).
//
// The scanner checks structure, not literals or the inside of strings, so json.Valid still runs;
// that sortkeys.Replay.Apply took the activity does not make it valid JSON either, as its scan
// accepts {"a":tru}.
func readActivity(raw json.RawMessage) (m activityMembers, ok bool) {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' || !json.Valid(raw) {
		return m, false
	}
	readObject(t, m.set)
	return m, true
}

// set stores the value of a member where field says. A repeated member leaves its last value, as
// json.Unmarshal into a map does, and counts as absent when that is null.
func (m *activityMembers) set(key, val []byte) {
	if p := m.field(key); p != nil {
		*p = val
		if isNull(val) {
			*p = nil
		}
	}
}

// readObject calls set with the key and value of each member of the JSON object raw, in order.
// Keys come unescaped, as encoding/json reads them; a key with invalid UTF-8, which encoding/json
// reads with replacement characters, matches no name a reader knows either way. raw must be valid
// JSON (an activity readActivity has validated, or a member of one); ok is false when it is not
// an object.
//
// The readers below take a set method rather than handing readObject their field: a pointer
// returned through a func value would move each reader to the heap.
func readObject(raw []byte, set func(key, val []byte)) bool {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	_ = jsonscan.Members(t, set)
	return true
}

// store puts the value of a member where a reader's field points (nowhere for nil), so that a
// repeated key leaves its last value, as in a map. Below the top level, null is a value as any.
func store(p *[]byte, val []byte) {
	if p != nil {
		*p = val
	}
}

// account is what the rules read of from, recipient or conversation.
type account struct{ id, name, role []byte }

func (acc *account) field(key []byte) *[]byte {
	switch string(key) {
	case "id":
		return &acc.id
	case "name":
		return &acc.name
	case "role":
		return &acc.role
	}
	return nil
}

func (acc *account) set(key, val []byte) { store(acc.field(key), val) }

// readAccount reads an account member; ok is false when it is absent or not an object.
func readAccount(raw []byte) (acc account, ok bool) {
	ok = readObject(raw, acc.set)
	return acc, ok
}

// streamFields are the livestream members of channelData or of a streaminfo entity.
type streamFields struct{ streamType, streamID, streamSeq []byte }

func (s *streamFields) field(key []byte) *[]byte {
	switch string(key) {
	case "streamType":
		return &s.streamType
	case "streamId":
		return &s.streamID
	case "streamSequence":
		return &s.streamSeq
	}
	return nil
}

// channelData is what the rules read of channelData.
type channelData struct {
	clientID, seqID []byte
	stream          streamFields
}

func (cd *channelData) field(key []byte) *[]byte {
	switch string(key) {
	case activity.KeyClientActivityID:
		return &cd.clientID
	case activity.KeySequenceID:
		return &cd.seqID
	}
	return cd.stream.field(key)
}

func (cd *channelData) set(key, val []byte) { store(cd.field(key), val) }

// entity is what the rules read of one entity: its type, the schema.org Message members and the
// streaminfo members.
type entity struct {
	typ, atID, isPartOf, position []byte
	stream                        streamFields
}

func (e *entity) field(key []byte) *[]byte {
	switch string(key) {
	case "type":
		return &e.typ
	case "@id":
		return &e.atID
	case "isPartOf":
		return &e.isPartOf
	case "position":
		return &e.position
	}
	return e.stream.field(key)
}

func (e *entity) set(key, val []byte) { store(e.field(key), val) }

// parse reads one activity into a. ok is false when raw is not a JSON object.
func (a *act) parse(raw json.RawMessage, userID string) bool {
	m, ok := readActivity(raw)
	if !ok {
		return false
	}
	a.typ, _ = str(m.typ)
	a.id, _ = str(m.id)
	a.idOther = a.id == "" && m.id != nil && !isNull(m.id) && m.id[0] != '"'
	a.textRaw = m.text
	a.replyTo, _ = str(m.replyTo)
	a.tsRaw = m.timestamp
	a.ts, a.tsString = str(m.timestamp)
	if m.localTimestamp != nil {
		a.localTS, _ = str(m.localTimestamp)
		a.localTSPresent = true
	}
	var cd channelData
	a.cdObject = readObject(m.channelData, cd.set)
	a.stream = cd.stream
	if e := m.entities; len(e) > 0 && e[0] == '[' {
		_ = jsonscan.Elements(e, func(v []byte) { a.entities = append(a.entities, v) })
	}
	a.clientID, _ = str(cd.clientID)
	if cd.seqID != nil && !isNull(cd.seqID) {
		a.seqRaw = cd.seqID
		if n, ok := number(cd.seqID); ok {
			a.seqKind, a.seq = seqNumber, n
		} else {
			a.seqKind = seqOther
		}
	}
	from, isObject := readAccount(m.from)
	a.role, a.roleInferred = inferRole(from, isObject, userID)
	a.from = from
	a.raw = raw
	if !plainShape(&m, from, isObject) {
		a.full, a.decodeErr = activity.Decode(raw)
	}
	return true
}

// text is the text member when it is a string, else "".
func (a *act) text() string {
	s, _ := str(a.textRaw)
	return s
}

// decoded returns the activity as activity.Decode reads it, or nil when it does not decode.
// Only livestream revisions need it, and only what Livestream reads of it: id, type, text,
// attachments, the entities and channelData's livestream members. When plainShape held, parse
// has read those already (Decode could not fail, and attachments are absent or empty), so they
// are put together without decoding again (TestDecodedMatchesDecode, FuzzDecoded).
func (a *act) decoded() *activity.Activity {
	switch {
	case a.decodeErr != nil:
		return nil
	case a.full != nil:
		return a.full
	}
	d := &activity.Activity{ID: a.id, Type: a.typ, Text: a.text(), Entities: a.entities}
	if a.cdObject {
		d.ChannelData = make(map[string]json.RawMessage, 3)
		keep := func(k string, v []byte) {
			if v != nil {
				d.ChannelData[k] = v
			}
		}
		keep("streamType", a.stream.streamType)
		keep("streamId", a.stream.streamID)
		keep("streamSequence", a.stream.streamSeq)
	}
	return d
}

// plainShape reports whether the members activity.Decode types have the JSON types it wants
// (strings, objects with string id/name/role, arrays). It may answer false for a valid activity
// (attachments are left to activity.Decode), never true for one Decode rejects. from is m.from
// as readAccount read it.
func plainShape(m *activityMembers, from account, fromObject bool) bool {
	for _, v := range [...][]byte{m.typ, m.id, m.timestamp, m.channelID, m.serviceURL, m.replyTo, m.text} {
		if v != nil && !startsWith(v, '"') {
			return false
		}
	}
	// An empty attachments array is all a sent message usually has, and nothing in it can fail.
	if m.attachments != nil && !isEmptyArray(m.attachments) {
		return false
	}
	if m.entities != nil && !startsWith(m.entities, '[') {
		return false
	}
	if m.channelData != nil && !startsWith(m.channelData, '{') {
		return false
	}
	if m.from != nil && !(fromObject && from.plain()) {
		return false
	}
	for _, raw := range [...][]byte{m.recipient, m.conversation} {
		if raw == nil {
			continue
		}
		if acc, ok := readAccount(raw); !ok || !acc.plain() {
			return false
		}
	}
	return true
}

// plain reports whether id, name and role are strings where present and not null.
func (acc *account) plain() bool {
	for _, v := range [...][]byte{acc.id, acc.name, acc.role} {
		if v != nil && !isNull(v) && !startsWith(v, '"') {
			return false
		}
	}
	return true
}

func startsWith(raw json.RawMessage, c byte) bool {
	t := jsonscan.TrimSpace(raw)
	return len(t) > 0 && t[0] == c
}

// inferRole applies Web Chat's role inference (observeActivitySaga.ts): no from → channel; no
// role → user when from.id is the user id, bot when it is set, channel otherwise. isObject is
// false when from is absent or not an object. inferred says the role came from from.id.
func inferRole(from account, isObject bool, userID string) (role string, inferred bool) {
	if !isObject {
		return "channel", false
	}
	if role, ok := str(from.role); ok && role != "" {
		return role, false
	}
	id, _ := str(from.id)
	switch {
	case id != "" && id == userID:
		return activity.RoleUser, true
	case id != "":
		return activity.RoleBot, true
	}
	return "channel", false
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

// streamMeta is the livestream metadata as sent, valid or not: channelData when it carries a
// string streamType, else the first streaminfo entity.
type streamMeta struct {
	streamType, streamID string
	seqRaw               json.RawMessage
	seqPresent           bool
}

func (a *act) streamMeta() (streamMeta, bool) {
	src := a.stream
	// channelData's members count only with a string streamType; null members (as serializers
	// write absent ones) leave the streaminfo entity to say (WEBCHAT-ORDERING §4.5).
	if _, ok := str(src.streamType); !ok {
		src = streamFields{}
		for _, raw := range a.entities {
			var e entity
			if readObject(raw, e.set) {
				if t, _ := str(e.typ); t == "streaminfo" {
					src = e.stream
					break
				}
			}
		}
	}
	st, ok := str(src.streamType)
	if !ok {
		return streamMeta{}, false
	}
	sm := streamMeta{streamType: st}
	sm.streamID, _ = str(src.streamID)
	sm.seqRaw, sm.seqPresent = src.streamSeq, src.streamSeq != nil
	return sm, true
}

// messageEntity returns the schema.org Message entity Web Chat reads: the first entity whose
// type starts with https://schema.org/ and whose @id is "" (getOrgSchemaMessage.ts).
func (a *act) messageEntity() (entity, bool) {
	for _, raw := range a.entities {
		var e entity
		if !readObject(raw, e.set) {
			continue
		}
		t, _ := str(e.typ)
		id, ok := str(e.atID)
		if strings.HasPrefix(t, "https://schema.org/") && ok && id == "" {
			return e, true
		}
	}
	return entity{}, false
}

// partOf is the isPartOf of a Message entity as Web Chat reads it, as JSON ("" when absent), used
// to see whether it changes between revisions.
func partOf(isPartOf json.RawMessage) string {
	if isPartOf == nil || isNull(isPartOf) {
		return ""
	}
	// Web Chat reads the first element of an array and, of the node reference, its @id and
	// @type (WEBCHAT-ORDERING §4.6): the same grouping written in another member order, with
	// other members, or in a one-element array is no change.
	var v any
	if json.Unmarshal(activity.FirstValue(isPartOf), &v) != nil {
		return string(isPartOf)
	}
	if m, ok := v.(map[string]any); ok {
		v = map[string]any{"@id": m["@id"], "@type": m["@type"]}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(isPartOf)
	}
	return string(b)
}

func str(raw json.RawMessage) (string, bool) { return jsonscan.StringValue(raw) }

// number returns raw as JSON.parse reads it when it is a number, ±Infinity beyond float64's
// range; ok is false for any other value. raw is a value of an activity that has passed
// json.Valid, so a value starting like a number is a JSON number, which ParseFloat reads.
func number(raw json.RawMessage) (float64, bool) {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 || !(t[0] == '-' || (t[0] >= '0' && t[0] <= '9')) {
		return 0, false
	}
	// Beyond float64's range ParseFloat answers ±Inf with ErrRange: JSON.parse's Infinity.
	n, err := strconv.ParseFloat(string(t), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
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
