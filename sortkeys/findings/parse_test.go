package findings

import (
	"bytes"
	"encoding/json"
	"testing"
)

// membersByEncodingJSON is the reference members replaces.
func membersByEncodingJSON(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

func checkMembers(t *testing.T, raw []byte) {
	t.Helper()
	got, gotOK := members(raw)
	want, wantOK := membersByEncodingJSON(raw)
	if gotOK != wantOK || len(got) != len(want) {
		t.Fatalf("%q: members = %v %v, encoding/json = %v %v", raw, got, gotOK, want, wantOK)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || !bytes.Equal(g, v) {
			t.Fatalf("%q: member %q = %q (present %v), encoding/json %q", raw, k, g, ok, v)
		}
	}
}

// TestMembersMatchEncodingJSON: the scanning reader of an activity's members answers as decoding
// into a map[string]json.RawMessage does.
func TestMembersMatchEncodingJSON(t *testing.T) {
	for _, raw := range membersSeeds {
		checkMembers(t, []byte(raw))
	}
}

var membersSeeds = []string{
	`{}`, ` { } `, `null`, `[]`, `"x"`, `12`, ``, `{`, `{"a":1,}`, `{"a" 1}`, `{"a":tru}`, `{"a":1}x`,
	`{"type":"message","id":"a","from":{"id":"u","role":"user"},"channelData":{"webchat:sequence-id":3}}`,
	`{"a":1,"a":2}`, `{"\u0074ype":"message"}`, `{"k\"q":[1,{"x":"]"}]}`, "{\"\xff\xfek\":1}",
	"{\"caf\xc3\xa9\":\"\xe2\x82\"}", `{"a" : { "b" : [ 1 , 2 ] } , "c" : null }`, `{"a":"\ud800"}`,
	"{\"a\":\"\x01\"}", `{"a":1e999}`, `{"a":-0.5E+3,"b":true,"c":false}`,
	// Whitespace outside JSON's four: vertical tab, form feed, NEL and no-break space.
	"\v{}", "{}\f", "\u0085{}", "{}\u00a0", "\t\r\n{}\n",
}

func FuzzMembers(f *testing.F) {
	for _, s := range membersSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkMembers(t, raw) })
}
