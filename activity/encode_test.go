package activity

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodeCases are activities as clients, bots and the store make them, with whitespace inside raw
// values, keys around "webchat:sequence-id" in sort order, and members the types do not model.
var encodeCases = []string{
	`{"type":"message","from":{"id":"dl_user","name":"User"},"text":"Hello","locale":"en-US"}`,
	`{"type":"message","channelId":"webchat","from":{"id":"u1","name":"Ann","role":"user"},"locale":"en-US","localTimestamp":"2024-05-01T19:00:00.123+09:00","text":"hi","channelData":{"clientActivityID":"c9","attachmentSizes":[1, 2]},"entities":[{"type":"ClientCapabilities", "requiresBotState":true}]}`,
	`{"type":"event","name":"webchat/join","value":{"language":"en", "n":1.50},"x-custom":[1, {"a":null}],"suggestedActions":{"to":["u1"],"actions":[]}}`,
	`{"type":"message","attachments":[{"contentType":"application/vnd.microsoft.card.adaptive","content":{"type":"AdaptiveCard", "body":[]},"name":"card","x":true},{"contentType":"image/png","contentUrl":"blob:abc","thumbnailUrl":"data:x"}]}`,
	`{"type":"message","from":{"id":"b","aadObjectId":"z","properties":{"k": 1}},"recipient":{"id":"u","role":"user"},"conversation":{"id":"c1","isGroup":false,"tenantId":"t"}}`,
	`{"type":"typing","id":"a|0000002","text":"A b","entities":[{"type":"streaminfo","streamId":"a|0000001","streamSequence":2}]}`,
	`{"type":"message","id":"c|0000001","timestamp":"2024-05-01T10:00:07.100Z","serviceUrl":"http://127.0.0.1:3000/","replyToId":"c|0000000","channelData":{"webchat:sequence-id":1}}`,
	`{"type":"message","channelData":{"a":1,"webchat:sequence-id":7,"webchat:z":2,"zz":3}}`,
	`{"type":"message","channelData":{"webchat:a":1,"webchat:sequence-idx":2}}`,
	`{"type":"message","channelData":{"zeta":{"b" : [ 1 ]}}}`,
	`{"type":"message","channelData":{}}`,
	`{"type":"message","channelData":{"webchat:sequence-id":3}}`,
	`{"type":"message","text":"\u003cb\u003e \"quoted\" \u00e9 😀","value":"\u2028"}`,
	`{"channelId":"directline","text":"no type"}`,
	`{"id":"only an id"}`,
	`{}`,
	`{"type":"message","entities":[],"attachments":[]}`,
	`{"text":"x","zzz":1,"aaa":{"b":2}}`,
}

// TestAppendJSONMatchesReference: the encoder writes the reference encoder's bytes, through
// AppendJSON, MarshalJSON and encoding/json alike.
func TestAppendJSONMatchesReference(t *testing.T) {
	for _, in := range encodeCases {
		a, err := Decode([]byte(in))
		if err != nil {
			t.Fatalf("Decode(%s): %v", in, err)
		}
		checkAppendJSON(t, a)
	}
	// Activities built in code: nil raw values, nil attachments, a nil channelData value.
	built := []*Activity{
		{Type: TypeMessage, ChannelData: map[string]json.RawMessage{"a": nil}},
		{Type: TypeMessage, Entities: []json.RawMessage{nil, json.RawMessage(`{"x" : 1}`)}},
		{Type: TypeMessage, Attachments: []*Attachment{nil, {Name: "n"}}},
		{Type: TypeMessage, From: &ChannelAccount{ID: "u", Extra: map[string]json.RawMessage{"id": json.RawMessage(`"shadowed"`), "x": json.RawMessage(`[ ]`)}}},
		{Type: TypeMessage, Extra: map[string]json.RawMessage{"text": json.RawMessage(`"shadowed"`), "v": json.RawMessage(` 1 `)}},
	}
	for _, a := range built {
		checkAppendJSON(t, a)
	}
}

func checkAppendJSON(t *testing.T, a *Activity) {
	t.Helper()
	want, err := refMarshal(a)
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte("prefix")
	got, err := AppendJSON(prefix, a)
	if err != nil {
		t.Fatalf("AppendJSON: %v", err)
	}
	if string(got) != "prefix"+string(want) {
		t.Errorf("AppendJSON\n got: %s\nwant: prefix%s", got, want)
	}
	if m, err := a.MarshalJSON(); err != nil || string(m) != string(want) {
		t.Errorf("MarshalJSON = %s, %v; want %s", m, err, want)
	}
	// encoding/json compacts what a json.Marshaler writes, the top-level unknown members too.
	var compact bytes.Buffer
	if err := json.Compact(&compact, want); err != nil {
		t.Fatal(err)
	}
	if m, err := marshal(a); err != nil || string(m) != compact.String() {
		t.Errorf("encoding/json = %s, %v; want %s", m, err, compact.String())
	}
}

// TestAppendJSONInvalidRaw: an invalid raw value in a member that encoding/json checks is an
// error, as it is for MarshalJSON.
func TestAppendJSONInvalidRaw(t *testing.T) {
	for _, a := range []*Activity{
		{Type: TypeMessage, ChannelData: map[string]json.RawMessage{"a": json.RawMessage(`{`)}},
		{Type: TypeMessage, Entities: []json.RawMessage{json.RawMessage(`1 2`)}},
		{Type: TypeMessage, Attachments: []*Attachment{{Content: json.RawMessage(`nul`)}}},
		{Type: TypeMessage, From: &ChannelAccount{ID: "u", Extra: map[string]json.RawMessage{"x": json.RawMessage(`]`)}}},
	} {
		if _, err := refMarshal(a); err == nil {
			t.Fatalf("the reference encoder accepted %+v", a)
		}
		if _, err := a.MarshalJSON(); err == nil {
			t.Fatalf("MarshalJSON accepted %+v", a)
		}
		if out, err := AppendJSON(nil, a); err == nil {
			t.Errorf("AppendJSON accepted %+v: %s", a, out)
		}
		if _, err := EncodeUnstamped(a); err == nil {
			t.Errorf("EncodeUnstamped accepted %+v", a)
		}
	}
}

// TestAppendStampedMatchesStamp: splicing the stamp into the unstamped encoding gives the bytes of
// the stamped activity's encoding, whatever id, timestamp and sequence id the activity had.
func TestAppendStampedMatchesStamp(t *testing.T) {
	for _, in := range encodeCases {
		checkStamped(t, []byte(in))
	}
}

func checkStamped(t *testing.T, in []byte) {
	t.Helper()
	a, err := Decode(in)
	if err != nil {
		return
	}
	before, err := a.MarshalJSON()
	if err != nil {
		return
	}
	u, err := EncodeUnstamped(a)
	if err != nil {
		t.Fatalf("EncodeUnstamped(%s): %v", in, err)
	}
	if after, _ := a.MarshalJSON(); string(after) != string(before) {
		t.Fatalf("EncodeUnstamped modified the activity: %s", after)
	}
	for _, st := range []struct {
		id  string
		seq uint64
		ts  string
	}{
		{FormatID("conv", 42), 42, "2026-12-01T02:40:00.123Z"},
		{FormatID("c\"<x>", 12345678), 12345678, "2026-12-01T02:40:00.000Z"},
		{"", 1, ""},
	} {
		// A fresh decode rather than Clone, which drops empty entities.
		c, err := Decode(in)
		if err != nil {
			t.Fatal(err)
		}
		c.Stamp(st.id, st.seq, st.ts)
		want, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got := u.AppendStamped([]byte("x"), st.id, st.seq, st.ts)
		if string(got) != "x"+string(want) {
			t.Errorf("AppendStamped of %s\n got: %s\nwant: x%s", in, got, want)
		}
	}
}

func FuzzAppendStamped(f *testing.F) {
	for _, s := range encodeCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Decode(data)
		if err != nil {
			return
		}
		want, err := refMarshal(a)
		if err != nil {
			t.Fatalf("reference encoding after Decode: %v", err)
		}
		got, err := AppendJSON(nil, a)
		if err != nil || string(got) != string(want) {
			t.Fatalf("AppendJSON = %s, %v; want %s", got, err, want)
		}
		checkStamped(t, data)
	})
}

func BenchmarkEncode(b *testing.B) {
	a, err := Decode([]byte(encodeCases[1]))
	if err != nil {
		b.Fatal(err)
	}
	a.Stamp(FormatID("conv", 42), 42, "2026-12-01T02:40:00.123Z")
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := refMarshal(a); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := AppendJSON(nil, a); err != nil {
				b.Fatal(err)
			}
		}
	})
	u, err := EncodeUnstamped(a)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("AppendStamped", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			u.AppendStamped(nil, FormatID("conv", 42), 42, "2026-12-01T02:40:00.123Z")
		}
	})
}
