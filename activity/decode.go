package activity

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/directline-go/directline/activity/jsonscan"
)

// fastDecoder holds Decode's single-pass state; slow is set as soon as the input needs
// decodeMembers.
type fastDecoder struct {
	buf  []byte
	seen uint32 // known members met so far, one bit each
	slow bool
}

// Known top-level members, as bits of fastDecoder.seen.
var activityMembers = map[string]uint32{
	"type": 1 << 0, "id": 1 << 1, "timestamp": 1 << 2, "channelId": 1 << 3, "serviceUrl": 1 << 4,
	"replyToId": 1 << 5, "text": 1 << 6, "from": 1 << 7, "recipient": 1 << 8, "conversation": 1 << 9,
	"channelData": 1 << 10, "entities": 1 << 11, "attachments": 1 << 12,
}

func (d *fastDecoder) member(a *Activity, key, val []byte) {
	if d.slow {
		return
	}
	if !utf8.Valid(key) {
		d.slow = true
		return
	}
	bit, known := activityMembers[string(key)]
	if !known {
		if a.Extra == nil {
			a.Extra = map[string]json.RawMessage{}
		} else if _, dup := a.Extra[string(key)]; dup {
			d.slow = true
			return
		}
		a.Extra[string(key)] = raw(val)
		return
	}
	if d.seen&bit != 0 {
		d.slow = true
		return
	}
	d.seen |= bit
	if isNullLiteral(val) {
		return
	}
	switch string(key) {
	case "type":
		d.str(&a.Type, val)
	case "id":
		d.str(&a.ID, val)
	case "timestamp":
		d.str(&a.Timestamp, val)
	case "channelId":
		d.str(&a.ChannelID, val)
	case "serviceUrl":
		d.str(&a.ServiceURL, val)
	case "replyToId":
		d.str(&a.ReplyToID, val)
	case "text":
		d.str(&a.Text, val)
	case "from":
		a.From = d.channelAccount(val)
	case "recipient":
		a.Recipient = d.channelAccount(val)
	case "conversation":
		a.Conversation = d.conversationAccount(val)
	case "channelData":
		a.ChannelData = d.object(val)
	case "entities":
		a.Entities = d.array(val)
	default: // attachments: rare, and decoded with their own rules
		d.slow = true
	}
}

// isNullLiteral: val is the literal null (values come without surrounding spaces).
func isNullLiteral(val []byte) bool { return string(val) == "null" }

// raw returns val as a RawMessage without spare capacity.
func raw(val []byte) json.RawMessage { return val[:len(val):len(val)] }

func (d *fastDecoder) str(dst *string, val []byte) {
	s, ok := jsonscan.StringValue(val)
	if !ok {
		d.slow = true
		return
	}
	*dst = s
}

// object reads an object of raw values, as encoding/json fills a map[string]json.RawMessage.
func (d *fastDecoder) object(val []byte) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	if jsonscan.Members(val, func(key, v []byte) {
		if !utf8.Valid(key) {
			d.slow = true
		}
		m[string(key)] = raw(v)
	}) != nil {
		d.slow = true
	}
	return m
}

// array reads an array of raw values, as encoding/json fills a []json.RawMessage.
func (d *fastDecoder) array(val []byte) []json.RawMessage {
	out := []json.RawMessage{}
	if jsonscan.Elements(val, func(v []byte) { out = append(out, raw(v)) }) != nil {
		d.slow = true
		return nil
	}
	return out
}

// fields reads an account object: its string members into the named fields, the others into
// extra. Repeated members, members of the wrong type and what is not an object set slow.
func (d *fastDecoder) fields(val []byte, names []string, dst []*string) map[string]json.RawMessage {
	var extra map[string]json.RawMessage
	var seen uint32
	if jsonscan.Members(val, func(key, v []byte) {
		if !utf8.Valid(key) {
			d.slow = true
			return
		}
		for i, n := range names {
			if string(key) == n {
				if seen&(1<<i) != 0 {
					d.slow = true
				}
				seen |= 1 << i
				if !isNullLiteral(v) {
					d.str(dst[i], v)
				}
				return
			}
		}
		if extra == nil {
			extra = map[string]json.RawMessage{}
		} else if _, dup := extra[string(key)]; dup {
			d.slow = true
		}
		extra[string(key)] = raw(v)
	}) != nil {
		d.slow = true
	}
	return extra
}

func (d *fastDecoder) channelAccount(val []byte) *ChannelAccount {
	c := new(ChannelAccount)
	c.Extra = d.fields(val, []string{"id", "name", "role"}, []*string{&c.ID, &c.Name, &c.Role})
	return c
}

func (d *fastDecoder) conversationAccount(val []byte) *ConversationAccount {
	c := new(ConversationAccount)
	c.Extra = d.fields(val, []string{"id", "name"}, []*string{&c.ID, &c.Name})
	return c
}
