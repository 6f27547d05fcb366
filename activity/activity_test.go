package activity

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// roundTrip decodes and re-encodes, then compares both as generic JSON values.
func roundTrip(t *testing.T, in string) (*Activity, string) {
	t.Helper()
	a, err := Decode([]byte(in))
	if err != nil {
		t.Fatalf("Decode(%s): %v", in, err)
	}
	out, err := Encode(a)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return a, string(out)
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("bad JSON %s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("bad JSON %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func TestLosslessRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"web chat outgoing message", `{"type":"message","channelId":"webchat","from":{"id":"u1","name":"Ann","role":"user"},"locale":"en-US","localTimestamp":"2024-05-01T19:00:00.123+09:00","localTimezone":"Asia/Tokyo","text":"hi","channelData":{"clientActivityID":"c9","attachmentSizes":[1,2]},"entities":[{"type":"ClientCapabilities","requiresBotState":true,"supportsListening":true,"supportsTts":true}]}`},
		{"unknown top-level members", `{"type":"event","name":"webchat/join","value":{"language":"en","n":1.50},"x-custom":[1,{"a":null}],"suggestedActions":{"to":["u1"],"actions":[]}}`},
		{"attachments with content and unknown members", `{"type":"message","attachments":[{"contentType":"application/vnd.microsoft.card.adaptive","content":{"type":"AdaptiveCard","body":[]},"name":"card","x":true},{"contentType":"image/png","contentUrl":"blob:abc","thumbnailUrl":"data:x"}]}`},
		{"nested unknown members in accounts", `{"type":"message","from":{"id":"b","aadObjectId":"z","properties":{"k":1}},"recipient":{"id":"u","role":"user"},"conversation":{"id":"c1","isGroup":false,"tenantId":"t"}}`},
		{"livestream in entities", `{"type":"typing","id":"a|0000002","text":"A b","entities":[{"type":"streaminfo","streamId":"a|0000001","streamSequence":2,"streamType":"streaming"},{"type":"https://schema.org/Message","@type":"Message","@id":"","isPartOf":{"@id":"_:g","@type":"HowTo"},"position":2}]}`},
		{"service fields", `{"type":"message","id":"c|0000001","timestamp":"2024-05-01T10:00:07.100Z","serviceUrl":"http://127.0.0.1:3000/","replyToId":"c|0000000","channelData":{"webchat:sequence-id":1}}`},
		{"unicode and escapes", `{"type":"message","text":"\u003cb\u003e \"quoted\" \u00e9 😀","value":"\u2028"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, out := roundTrip(t, tc.in)
			if !jsonEqual(t, tc.in, out) {
				t.Errorf("round trip changed the activity\n in: %s\nout: %s", tc.in, out)
			}
			// A second round trip is stable byte for byte.
			_, out2 := roundTrip(t, out)
			if out2 != out {
				t.Errorf("encoding not deterministic\n1: %s\n2: %s", out, out2)
			}
		})
	}
}

func TestNullMembersAreDropped(t *testing.T) {
	_, out := roundTrip(t, `{"type":"message","text":null,"from":null,"channelData":null,"entities":null,"attachments":null,"value":null}`)
	if !jsonEqual(t, out, `{"type":"message","value":null}`) {
		t.Errorf("got %s", out)
	}
}

func TestLocalTimestampByteForByte(t *testing.T) {
	// R22: the client's localTimestamp (offset included) is returned exactly as sent.
	const lt = `"2024-05-01T19:00:00.123+09:00"`
	a, out := roundTrip(t, `{"type":"message","localTimestamp":`+lt+`}`)
	if got := a.LocalTimestamp(); got != "2024-05-01T19:00:00.123+09:00" {
		t.Errorf("LocalTimestamp() = %q", got)
	}
	if !strings.Contains(out, `"localTimestamp":`+lt) {
		t.Errorf("localTimestamp not kept byte for byte: %s", out)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		in     string
		field  string
		reason string // a part of the reason, if it matters
	}{
		{`[]`, "activity", "must be a JSON object"},
		{`"message"`, "activity", "must be a JSON object"},
		{`{"type":5}`, "type", ""},
		{`{"type":"message","text":{"a":1}}`, "text", ""},
		{`{"type":"message","from":"u1"}`, "from", ""},
		{`{"type":"message","from":{"id":7}}`, "from.id", ""},
		{`{"type":"message","recipient":[]}`, "recipient", ""},
		{`{"type":"message","conversation":{"id":true}}`, "conversation.id", ""},
		{`{"type":"message","channelData":[]}`, "channelData", ""},
		{`{"type":"message","channelData":"x"}`, "channelData", ""},
		{`{"type":"message","entities":{}}`, "entities", ""},
		{`{"type":"message","attachments":{}}`, "attachments", ""},
		{`{"type":"message","attachments":[1]}`, "attachments[0]", ""},
		{`{"type":"message","attachments":[{"contentUrl":5}]}`, "attachments[0].contentUrl", ""},
		{`{"type":"message"`, "activity", "is not valid JSON: unexpected end of JSON input"},
		{`{"type":"message",}`, "activity", "is not valid JSON: invalid character '}'"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Decode(%s) error = %v, want *FieldError", tc.in, err)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Reason, tc.reason) {
				t.Errorf("field %q, reason %q; want %q, %q", fe.Field, fe.Reason, tc.field, tc.reason)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		a     Activity
		field string // "" = valid
	}{
		{"message", Activity{Type: "message"}, ""},
		{"no type", Activity{}, "type"},
		{"overlong type", Activity{Type: strings.Repeat("x", 65)}, "type"},
		{"object entities", Activity{Type: "message", Entities: []json.RawMessage{json.RawMessage(` {"type":"x"}`), json.RawMessage(`{}`)}}, ""},
		{"null entity", Activity{Type: "message", Entities: []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`null`)}}, "entities[1]"},
		{"string entity", Activity{Type: "message", Entities: []json.RawMessage{json.RawMessage(`"x"`)}}, "entities[0]"},
		{"array entity", Activity{Type: "message", Entities: []json.RawMessage{json.RawMessage(`[{}]`)}}, "entities[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.a.Validate()
			var fe *FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
				t.Fatalf("got %v, want a FieldError on %s", err, tc.field)
			}
		})
	}
}

func TestFormatAndParseID(t *testing.T) {
	tests := []struct {
		conv string
		seq  uint64
		id   string
	}{
		{"abc", 1, "abc|0000001"},
		{"abc", 0, "abc|0000000"},
		{"x-us", 1234567, "x-us|1234567"},
		{"x", 12345678, "x|12345678"},
		{"a|b", 42, "a|b|0000042"},
	}
	for _, tc := range tests {
		if got := FormatID(tc.conv, tc.seq); got != tc.id {
			t.Errorf("FormatID(%q, %d) = %q, want %q", tc.conv, tc.seq, got, tc.id)
		}
		conv, seq, err := ParseID(tc.id)
		if err != nil || conv != tc.conv || seq != tc.seq {
			t.Errorf("ParseID(%q) = %q, %d, %v", tc.id, conv, seq, err)
		}
	}
	for _, bad := range []string{"", "abc", "|0000001", "abc|", "abc|12a", "abc|-1", "abc|99999999999999999999999"} {
		if _, _, err := ParseID(bad); !errors.Is(err, ErrBadID) {
			t.Errorf("ParseID(%q) err = %v, want ErrBadID", bad, err)
		}
	}
}

func TestStamp(t *testing.T) {
	a, _ := Decode([]byte(`{"type":"message","channelData":{"clientActivityID":"c1","webchat:sequence-id":"12"}}`))
	orig := a.ChannelData
	ts := FormatTimestamp(time.Date(2024, 5, 1, 10, 0, 7, 100_400_000, time.FixedZone("x", 3600)))
	a.Stamp("c|0000012", 12, ts)
	if ts != "2024-05-01T09:00:07.100Z" {
		t.Errorf("FormatTimestamp = %q", ts)
	}
	if seq, ok := a.SequenceID(); !ok || seq != 12 {
		t.Errorf("SequenceID() = %d, %v", seq, ok)
	}
	if string(a.ChannelData[KeySequenceID]) != "12" {
		t.Errorf("sequence id must be a JSON integer, got %s", a.ChannelData[KeySequenceID])
	}
	if string(orig[KeySequenceID]) != `"12"` {
		t.Error("Stamp modified the channelData map it was given")
	}
	if a.ClientActivityID() != "c1" || a.ID != "c|0000012" || a.Timestamp != ts {
		t.Errorf("stamped activity = %+v", a)
	}
}

func TestClone(t *testing.T) {
	a, _ := Decode([]byte(`{"type":"message","from":{"id":"u"},"channelData":{"a":1},"attachments":[{"contentUrl":"x"}],"value":1}`))
	c := a.Clone()
	c.From.ID = "v"
	c.SetChannelData("a", json.RawMessage("2"))
	c.Attachments[0].ContentURL = "y"
	c.Extra["value"] = json.RawMessage("2")
	out, _ := Encode(a)
	if !jsonEqual(t, string(out), `{"type":"message","from":{"id":"u"},"channelData":{"a":1},"attachments":[{"contentUrl":"x"}],"value":1}`) {
		t.Errorf("Clone shares state with the original: %s", out)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","text":"hi","channelData":{"clientActivityID":"c"}}`,
		`{"type":"typing","id":"x","entities":[{"type":"streaminfo","streamSequence":1,"streamType":"streaming"}]}`,
		`{"type":"message","attachments":[{"contentType":"a","content":{"b":[1,2]}}],"z":null}`,
		`{"entities":[{"type":"https://schema.org/Message","@id":"","@type":"Message","isPartOf":[{"@id":"_:a","@type":"HowTo"}],"position":[3]}]}`,
		`[]`, `null`, `{`, `{"from":{"id":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Decode(data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a *FieldError: %v", err)
			}
			return
		}
		// Readers must never panic on decoded input.
		a.Livestream()
		a.PartGrouping()
		a.MirrorStreamInfo()
		out, err := Encode(a)
		if err != nil {
			t.Fatalf("Encode after Decode: %v", err)
		}
		b, err := Decode(out)
		if err != nil {
			t.Fatalf("re-Decode of %s: %v", out, err)
		}
		out2, err := Encode(b)
		if err != nil || string(out2) != string(out) {
			t.Fatalf("unstable encoding:\n%s\n%s", out, out2)
		}
	})
}

func TestEncodeDoesNotEscapeHTML(t *testing.T) {
	_, out := roundTrip(t, `{"type":"message","text":"<b>a & b</b>","from":{"id":"<u>"},"channelData":{"k":"<x>"}}`)
	for _, want := range []string{`"text":"<b>a & b</b>"`, `"id":"<u>"`, `"k":"<x>"`} {
		if !strings.Contains(out, want) {
			t.Errorf("%s missing from %s", want, out)
		}
	}
}

// FuzzAppendJSONString: the string writer of the encoder gives exactly encoding/json's bytes
// (HTML escaping off) for any string, valid UTF-8 or not.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "<b>a & b</b>", "\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029 é 😀", "bad \xff\xfe utf-8 \xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString([]byte("prefix"), s); string(got) != "prefix"+string(want) {
			t.Fatalf("%q: got %s, want %s", s, got[len("prefix"):], want)
		}
	})
}
