package activity

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// AppendJSON appends a's JSON to dst, written without reflection: the known members in schema
// order (empty strings and nil objects left out), then the unknown members sorted by name. Raw
// values are compacted and checked as encoding/json does with a json.Marshaler's output
// (channelData with its members sorted, entities, attachments, the members of from, recipient and
// conversation); the top-level unknown members are written as they are. HTML characters are not
// escaped. Errors are encoding/json's for an invalid raw value (each raw value must be one JSON
// value, as Decode makes them); dst is then returned as it was.
func AppendJSON(dst []byte, a *Activity) ([]byte, error) {
	e := encoder{buf: bytes.NewBuffer(dst)}
	e.buf.Grow(sizeHint(a))
	e.activity(a)
	if e.err != nil {
		return dst, e.err
	}
	return e.buf.Bytes(), nil
}

// encodeWith returns what f writes, or its error.
func encodeWith(f func(e *encoder)) ([]byte, error) {
	e := encoder{buf: new(bytes.Buffer)}
	f(&e)
	if e.err != nil {
		return nil, e.err
	}
	return e.buf.Bytes(), nil
}

// Unstamped is an activity encoded once without the members the store stamps, so that each
// stamped encoding (AppendStamped) is a copy with those members spliced in instead of a new
// encoding of the whole activity.
type Unstamped struct {
	// JSON is what AppendJSON writes for the activity with ID and Timestamp empty and without
	// channelData["webchat:sequence-id"].
	JSON []byte
	// idAt is where id and timestamp go (after type); seqAt is where the sequence id goes:
	// inside channelData, or where channelData goes when the activity has none.
	idAt, seqAt int
	// hasChannelData: seqAt is inside a channelData object.
	hasChannelData bool
}

// EncodeUnstamped encodes a as Unstamped. a is not modified. Errors are AppendJSON's.
func EncodeUnstamped(a *Activity) (Unstamped, error) {
	e := encoder{buf: bytes.NewBuffer(make([]byte, 0, sizeHint(a))), unstamped: true}
	e.activity(a)
	if e.err != nil {
		return Unstamped{}, e.err
	}
	return Unstamped{JSON: e.buf.Bytes(), idAt: e.idAt, seqAt: e.seqAt, hasChannelData: a.ChannelData != nil}, nil
}

// AppendStamped appends to dst the JSON of the activity stamped with id, sequence id seq and
// timestamp: the same bytes as AppendJSON after Stamp(id, seq, timestamp). It only copies.
func (u Unstamped) AppendStamped(dst []byte, id string, seq uint64, timestamp string) []byte {
	t := u.JSON
	dst = append(dst, t[:u.idAt]...)
	if id != "" {
		dst = appendMember(dst, "id")
		dst = appendJSONString(dst, id)
	}
	if timestamp != "" {
		dst = appendMember(dst, "timestamp")
		dst = appendJSONString(dst, timestamp)
	}
	if u.seqAt > u.idAt {
		dst = separate(dst, t, u.idAt)
		dst = append(dst, t[u.idAt:u.seqAt]...)
	}
	if u.hasChannelData {
		dst = appendMember(dst, KeySequenceID)
		dst = strconv.AppendUint(dst, seq, 10)
	} else {
		dst = appendMember(dst, "channelData")
		dst = append(dst, `{"`+KeySequenceID+`":`...)
		dst = strconv.AppendUint(dst, seq, 10)
		dst = append(dst, '}')
	}
	dst = separate(dst, t, u.seqAt)
	return append(dst, t[u.seqAt:]...)
}

// appendMember starts a member named name, after a comma unless it is the object's first.
func appendMember(dst []byte, name string) []byte {
	if dst[len(dst)-1] != '{' {
		dst = append(dst, ',')
	}
	dst = appendJSONString(dst, name)
	return append(dst, ':')
}

// separate adds the comma between members spliced in at t[at] and a member of t that was the
// first of its object (the others carry their own leading comma).
func separate(dst, t []byte, at int) []byte {
	if t[at] == '"' && dst[len(dst)-1] != '{' {
		dst = append(dst, ',')
	}
	return dst
}

// sizeHint is a little more than the length of a's encoding when no value needs escaping, so
// that the buffer is allocated once.
func sizeHint(a *Activity) int {
	n := 160 + len(a.Type) + len(a.ID) + len(a.Timestamp) + len(a.ChannelID) + len(a.ServiceURL) +
		len(a.ReplyToID) + len(a.Text) + rawSize(a.ChannelData) + rawSize(a.Extra)
	for _, c := range [...]*ChannelAccount{a.From, a.Recipient} {
		if c != nil {
			n += 32 + len(c.ID) + len(c.Name) + len(c.Role) + rawSize(c.Extra)
		}
	}
	if c := a.Conversation; c != nil {
		n += 24 + len(c.ID) + len(c.Name) + rawSize(c.Extra)
	}
	for _, v := range a.Entities {
		n += len(v) + 1
	}
	for _, t := range a.Attachments {
		if t != nil {
			n += 64 + len(t.ContentType) + len(t.ContentURL) + len(t.Name) + len(t.ThumbnailURL) + len(t.Content) + rawSize(t.Extra)
		}
	}
	return n
}

func rawSize(m map[string]json.RawMessage) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v) + 4
	}
	return n
}

// encoder writes AppendJSON's encoding member by member.
type encoder struct {
	buf *bytes.Buffer
	n   []int // members written in each open object
	err error
	// unstamped leaves out id, timestamp and channelData["webchat:sequence-id"] and records
	// where they go (see Unstamped).
	unstamped   bool
	idAt, seqAt int
}

func (e *encoder) open() {
	e.buf.WriteByte('{')
	e.n = append(e.n, 0)
}

func (e *encoder) close() {
	e.buf.WriteByte('}')
	e.n = e.n[:len(e.n)-1]
}

func (e *encoder) key(name string) {
	if e.n[len(e.n)-1] > 0 {
		e.buf.WriteByte(',')
	}
	e.n[len(e.n)-1]++
	e.string(name)
	e.buf.WriteByte(':')
}

func (e *encoder) string(s string) {
	e.buf.Grow(len(s) + 2)
	e.buf.Write(appendJSONString(e.buf.AvailableBuffer(), s))
}

func (e *encoder) str(name, v string) {
	if v != "" {
		e.key(name)
		e.string(v)
	}
}

// compact writes a raw value as encoding/json does with a json.Marshaler's output: compacted,
// and an error for invalid JSON. A nil value is null (json.RawMessage's MarshalJSON).
func (e *encoder) compact(v json.RawMessage) {
	if e.err != nil {
		return
	}
	if v == nil {
		e.buf.WriteString("null")
		return
	}
	e.err = json.Compact(e.buf, v)
}

// extra writes the unknown members sorted by name, skipping names the type models; compact says
// whether values are compacted (members of nested objects) or written as they are (top level).
func (e *encoder) extra(extra map[string]json.RawMessage, known func(string) bool, compact bool) {
	if len(extra) == 0 {
		return
	}
	names := make([]string, 0, len(extra))
	for k := range extra {
		if !known(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		e.key(k)
		if compact {
			e.compact(extra[k])
		} else {
			e.buf.Write(extra[k])
		}
	}
}

func (e *encoder) activity(a *Activity) {
	e.open()
	e.str("type", a.Type)
	if e.unstamped {
		e.idAt = e.buf.Len()
	} else {
		e.str("id", a.ID)
		e.str("timestamp", a.Timestamp)
	}
	e.str("channelId", a.ChannelID)
	e.str("serviceUrl", a.ServiceURL)
	if a.From != nil {
		e.key("from")
		e.channelAccount(a.From)
	}
	if a.Recipient != nil {
		e.key("recipient")
		e.channelAccount(a.Recipient)
	}
	if a.Conversation != nil {
		e.key("conversation")
		e.conversationAccount(a.Conversation)
	}
	e.str("replyToId", a.ReplyToID)
	e.str("text", a.Text)
	if a.ChannelData != nil {
		e.key("channelData")
		e.channelData(a.ChannelData)
	} else if e.unstamped {
		e.seqAt = e.buf.Len()
	}
	if a.Entities != nil {
		e.key("entities")
		e.buf.WriteByte('[')
		for i, v := range a.Entities {
			if i > 0 {
				e.buf.WriteByte(',')
			}
			e.compact(v)
		}
		e.buf.WriteByte(']')
	}
	if a.Attachments != nil {
		e.key("attachments")
		e.buf.WriteByte('[')
		for i, t := range a.Attachments {
			if i > 0 {
				e.buf.WriteByte(',')
			}
			e.attachment(t)
		}
		e.buf.WriteByte(']')
	}
	e.extra(a.Extra, activityMember, false)
	e.close()
}

// channelData writes the map as encoding/json does: members sorted by name, values compacted.
func (e *encoder) channelData(m map[string]json.RawMessage) {
	names := make([]string, 0, len(m))
	for k := range m {
		if !e.unstamped || k != KeySequenceID {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	e.open()
	seqDone := !e.unstamped
	for _, k := range names {
		if !seqDone && k > KeySequenceID {
			e.seqAt, seqDone = e.buf.Len(), true
		}
		e.key(k)
		e.compact(m[k])
	}
	if !seqDone {
		e.seqAt = e.buf.Len()
	}
	e.close()
}

func (e *encoder) channelAccount(c *ChannelAccount) {
	e.open()
	e.str("id", c.ID)
	e.str("name", c.Name)
	e.str("role", c.Role)
	e.extra(c.Extra, channelAccountMember, true)
	e.close()
}

func (e *encoder) conversationAccount(c *ConversationAccount) {
	e.open()
	e.str("id", c.ID)
	e.str("name", c.Name)
	e.extra(c.Extra, conversationAccountMember, true)
	e.close()
}

func (e *encoder) attachment(t *Attachment) {
	if t == nil {
		e.buf.WriteString("null")
		return
	}
	e.open()
	e.str("contentType", t.ContentType)
	e.str("contentUrl", t.ContentURL)
	e.str("name", t.Name)
	e.str("thumbnailUrl", t.ThumbnailURL)
	if len(t.Content) > 0 {
		e.key("content")
		e.compact(t.Content)
	}
	e.extra(t.Extra, attachmentMember, true)
	e.close()
}

func activityMember(k string) bool {
	switch k {
	case "type", "id", "timestamp", "channelId", "serviceUrl", "from", "recipient", "conversation",
		"replyToId", "text", "channelData", "entities", "attachments":
		return true
	}
	return false
}

func channelAccountMember(k string) bool { return k == "id" || k == "name" || k == "role" }

func conversationAccountMember(k string) bool { return k == "id" || k == "name" }

func attachmentMember(k string) bool {
	switch k {
	case "contentType", "contentUrl", "name", "thumbnailUrl", "content":
		return true
	}
	return false
}
