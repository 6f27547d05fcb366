package activity

import (
	"bytes"
	"encoding/json"
	"sort"
)

// The encoder the fast one replaced, kept as the reference that AppendJSON and MarshalJSON must
// match byte for byte: each object member by member, nested values through encoding/json.

// refMarshal is the reference encoding of a.
func refMarshal(a *Activity) ([]byte, error) {
	w := newObjectWriter()
	w.str("type", a.Type)
	w.str("id", a.ID)
	w.str("timestamp", a.Timestamp)
	w.str("channelId", a.ChannelID)
	w.str("serviceUrl", a.ServiceURL)
	w.known["from"], w.known["recipient"], w.known["conversation"] = true, true, true
	if a.From != nil {
		w.value("from", refChannelAccount{a.From})
	}
	if a.Recipient != nil {
		w.value("recipient", refChannelAccount{a.Recipient})
	}
	if a.Conversation != nil {
		w.value("conversation", refConversationAccount{a.Conversation})
	}
	w.str("replyToId", a.ReplyToID)
	w.str("text", a.Text)
	w.known["channelData"], w.known["entities"], w.known["attachments"] = true, true, true
	if a.ChannelData != nil {
		w.value("channelData", a.ChannelData)
	}
	if a.Entities != nil {
		w.value("entities", a.Entities)
	}
	if a.Attachments != nil {
		atts := make([]*refAttachment, len(a.Attachments))
		for i, t := range a.Attachments {
			if t != nil {
				atts[i] = &refAttachment{t}
			}
		}
		w.value("attachments", atts)
	}
	w.extra(a.Extra)
	return w.bytes()
}

type refChannelAccount struct{ c *ChannelAccount }

func (r refChannelAccount) MarshalJSON() ([]byte, error) {
	w := newObjectWriter()
	w.str("id", r.c.ID)
	w.str("name", r.c.Name)
	w.str("role", r.c.Role)
	w.extra(r.c.Extra)
	return w.bytes()
}

type refConversationAccount struct{ c *ConversationAccount }

func (r refConversationAccount) MarshalJSON() ([]byte, error) {
	w := newObjectWriter()
	w.str("id", r.c.ID)
	w.str("name", r.c.Name)
	w.extra(r.c.Extra)
	return w.bytes()
}

type refAttachment struct{ t *Attachment }

func (r *refAttachment) MarshalJSON() ([]byte, error) {
	w := newObjectWriter()
	w.str("contentType", r.t.ContentType)
	w.str("contentUrl", r.t.ContentURL)
	w.str("name", r.t.Name)
	w.str("thumbnailUrl", r.t.ThumbnailURL)
	w.raw("content", r.t.Content)
	w.extra(r.t.Extra)
	return w.bytes()
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
