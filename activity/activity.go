// Package activity holds the Bot Framework Activity (schema v3) with lossless JSON, the stamping of
// the fields the service owns (id, timestamp, sequence id), and readers for the metadata Web Chat
// orders by: livestreams (channelData or a streaminfo entity) and part groupings (schema.org
// Message entity).
//
// Lossless means: every member the service does not model (localTimestamp, localTimezone, value,
// name, suggestedActions, ...) and everything inside channelData and entities is kept as the raw
// JSON that arrived and written back unchanged. Only the modelled members (type, id, timestamp,
// channelId, serviceUrl, replyToId, text, from, recipient, conversation, channelData, entities,
// attachments) are dropped when their value is JSON null, as Web Chat treats those like absent;
// any other member keeps a null as sent.
package activity

import (
	"encoding/json"

	"github.com/directline-go/directline/activity/jsonscan"
)

// Activity types the service treats specially (Bot Framework Activity schema).
const (
	TypeMessage            = "message"
	TypeTyping             = "typing"
	TypeConversationUpdate = "conversationUpdate"
	TypeEvent              = "event"
	TypeInvoke             = "invoke"
	TypeEndOfConversation  = "endOfConversation"
)

// Roles of a ChannelAccount.
const (
	RoleUser = "user"
	RoleBot  = "bot"
)

// Activity is one Bot Framework activity. The typed members are the ones the service reads or owns;
// Extra keeps every other top-level member verbatim.
type Activity struct {
	Type         string
	ID           string
	Timestamp    string
	ChannelID    string
	ServiceURL   string
	From         *ChannelAccount
	Recipient    *ChannelAccount
	Conversation *ConversationAccount
	ReplyToID    string
	Text         string
	// ChannelData maps each channelData member to its raw JSON. Nil when absent.
	ChannelData map[string]json.RawMessage
	// Entities are kept raw; see Livestream and PartGrouping for the ones Web Chat reads.
	Entities    []json.RawMessage
	Attachments []*Attachment
	// Extra holds the unknown top-level members as raw JSON.
	Extra map[string]json.RawMessage
}

// ChannelAccount is a sender or recipient: {id, name, role, ...}.
type ChannelAccount struct {
	ID    string
	Name  string
	Role  string
	Extra map[string]json.RawMessage
}

// ConversationAccount identifies the conversation: {id, name, isGroup, ...}.
type ConversationAccount struct {
	ID    string
	Name  string
	Extra map[string]json.RawMessage
}

// Attachment is one entry of attachments: {contentType, contentUrl, content, name, thumbnailUrl}.
type Attachment struct {
	ContentType  string
	ContentURL   string
	Name         string
	ThumbnailURL string
	Content      json.RawMessage
	Extra        map[string]json.RawMessage
}

// Decode parses one activity. Malformed JSON or a known member of the wrong type gives a
// *FieldError. The activity shares no memory with data: its raw values share one copy of data and
// have no spare capacity, so appending to one never writes into another.
//
// Valid JSON is read in a single pass, without a map of every member and without encoding/json
// for strings that need no unescaping; input that pass does not read alone (invalid JSON, a member
// of the wrong type, a repeated member, attachments, keys that are not valid UTF-8) is read member
// by member with encoding/json, which gives the same activities and decides the errors.
func Decode(data []byte) (*Activity, error) {
	if !json.Valid(data) {
		return decodeMembers(data)
	}
	d := fastDecoder{buf: append([]byte(nil), data...)}
	a := new(Activity)
	if jsonscan.Members(d.buf, func(key, val []byte) { d.member(a, key, val) }) != nil || d.slow {
		return decodeMembers(data)
	}
	return a, nil
}

// UnmarshalJSON implements json.Unmarshaler as Decode; errors are *FieldError.
func (a *Activity) UnmarshalJSON(data []byte) error {
	d, err := Decode(data)
	if err != nil {
		return err
	}
	*a = *d
	return nil
}

// decodeMembers is Decode by way of a map of every member, each decoded with encoding/json.
func decodeMembers(data []byte) (*Activity, error) {
	ms, err := splitObject("", data)
	if err != nil {
		return nil, err
	}
	a := new(Activity)
	if err := ms.takeStrings(stringField{"type", &a.Type}, stringField{"id", &a.ID},
		stringField{"timestamp", &a.Timestamp}, stringField{"channelId", &a.ChannelID},
		stringField{"serviceUrl", &a.ServiceURL}, stringField{"replyToId", &a.ReplyToID},
		stringField{"text", &a.Text}); err != nil {
		return nil, err
	}
	from, recipient, conv := new(ChannelAccount), new(ChannelAccount), new(ConversationAccount)
	if ok, err := ms.takeObject("from", from); err != nil {
		return nil, err
	} else if ok {
		a.From = from
	}
	if ok, err := ms.takeObject("recipient", recipient); err != nil {
		return nil, err
	} else if ok {
		a.Recipient = recipient
	}
	if ok, err := ms.takeObject("conversation", conv); err != nil {
		return nil, err
	} else if ok {
		a.Conversation = conv
	}
	if err := ms.take("channelData", &a.ChannelData); err != nil {
		return nil, err
	}
	if err := ms.take("entities", &a.Entities); err != nil {
		return nil, err
	}
	var atts []json.RawMessage
	if err := ms.take("attachments", &atts); err != nil {
		return nil, err
	}
	if atts != nil {
		a.Attachments = make([]*Attachment, len(atts))
		for i, raw := range atts {
			att := new(Attachment)
			if err := att.decode("attachments["+itoa(i)+"]", raw); err != nil {
				return nil, err
			}
			a.Attachments[i] = att
		}
	}
	a.Extra = ms.rest()
	return a, nil
}

// MarshalJSON implements json.Marshaler; see AppendJSON.
func (a *Activity) MarshalJSON() ([]byte, error) { return AppendJSON(nil, a) }

// Encode is MarshalJSON for callers that want a plain function.
func Encode(a *Activity) ([]byte, error) { return AppendJSON(nil, a) }

// Clone returns a deep copy (raw values are shared, as they are never modified in place).
func (a *Activity) Clone() *Activity {
	c := *a
	if a.From != nil {
		f := *a.From
		f.Extra = cloneRaw(a.From.Extra)
		c.From = &f
	}
	if a.Recipient != nil {
		r := *a.Recipient
		r.Extra = cloneRaw(a.Recipient.Extra)
		c.Recipient = &r
	}
	if a.Conversation != nil {
		cv := *a.Conversation
		cv.Extra = cloneRaw(a.Conversation.Extra)
		c.Conversation = &cv
	}
	c.ChannelData = cloneRaw(a.ChannelData)
	if a.Entities != nil {
		c.Entities = append([]json.RawMessage(nil), a.Entities...)
	}
	if a.Attachments != nil {
		c.Attachments = make([]*Attachment, len(a.Attachments))
		for i, att := range a.Attachments {
			ac := *att
			ac.Extra = cloneRaw(att.Extra)
			c.Attachments[i] = &ac
		}
	}
	c.Extra = cloneRaw(a.Extra)
	return &c
}

func cloneRaw(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	c := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (c *ChannelAccount) decode(prefix string, data []byte) error {
	ms, err := splitObject(prefix, data)
	if err != nil {
		return err
	}
	if err := ms.takeStrings(stringField{"id", &c.ID}, stringField{"name", &c.Name}, stringField{"role", &c.Role}); err != nil {
		return err
	}
	c.Extra = ms.rest()
	return nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *ChannelAccount) UnmarshalJSON(data []byte) error {
	*c = ChannelAccount{}
	return c.decode("", data)
}

// MarshalJSON implements json.Marshaler: known members first, then the others sorted by name,
// values compacted.
func (c *ChannelAccount) MarshalJSON() ([]byte, error) {
	return encodeWith(func(e *encoder) { e.channelAccount(c) })
}

func (c *ConversationAccount) decode(prefix string, data []byte) error {
	ms, err := splitObject(prefix, data)
	if err != nil {
		return err
	}
	if err := ms.takeStrings(stringField{"id", &c.ID}, stringField{"name", &c.Name}); err != nil {
		return err
	}
	c.Extra = ms.rest()
	return nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *ConversationAccount) UnmarshalJSON(data []byte) error {
	*c = ConversationAccount{}
	return c.decode("", data)
}

// MarshalJSON implements json.Marshaler: known members first, then the others sorted by name,
// values compacted.
func (c *ConversationAccount) MarshalJSON() ([]byte, error) {
	return encodeWith(func(e *encoder) { e.conversationAccount(c) })
}

func (t *Attachment) decode(prefix string, data []byte) error {
	ms, err := splitObject(prefix, data)
	if err != nil {
		return err
	}
	if err := ms.takeStrings(stringField{"contentType", &t.ContentType}, stringField{"contentUrl", &t.ContentURL},
		stringField{"name", &t.Name}, stringField{"thumbnailUrl", &t.ThumbnailURL}); err != nil {
		return err
	}
	if raw, ok := ms.m["content"]; ok {
		delete(ms.m, "content")
		if !isNull(raw) {
			t.Content = raw
		}
	}
	t.Extra = ms.rest()
	return nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *Attachment) UnmarshalJSON(data []byte) error {
	*t = Attachment{}
	return t.decode("", data)
}

// MarshalJSON implements json.Marshaler: known members first, then the others sorted by name,
// values compacted.
func (t *Attachment) MarshalJSON() ([]byte, error) {
	return encodeWith(func(e *encoder) { e.attachment(t) })
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
