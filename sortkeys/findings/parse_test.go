package findings

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/directline-go/directline/activity"
)

// unmarshalMembers is the reference the readers are checked against: json.Unmarshal into a map.
func unmarshalMembers(raw []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// memberNames are every name a reader's field knows, and a few it does not.
var memberNames = []string{
	"type", "id", "text", "replyToId", "timestamp", "localTimestamp", "channelId", "serviceUrl",
	"from", "recipient", "conversation", "channelData", "entities", "attachments", "name", "role",
	"clientActivityID", "webchat:sequence-id", "streamType", "streamId", "streamSequence", "@id",
	"isPartOf", "position", "a", "Type", "@type",
}

// checkReader compares what field received for each name with the reference map want.
func checkReader(t *testing.T, raw []byte, field func([]byte) *[]byte, want map[string]json.RawMessage) {
	t.Helper()
	for _, name := range memberNames {
		p := field([]byte(name))
		if p == nil {
			continue
		}
		w, ok := want[name]
		if ok != (*p != nil) || !bytes.Equal(*p, w) {
			t.Fatalf("%q: member %q = %q, encoding/json %q (present %v)", raw, name, *p, w, ok)
		}
	}
}

func checkMembers(t *testing.T, raw []byte) {
	t.Helper()
	m, ok := readActivity(raw)
	want, wantOK := unmarshalMembers(raw)
	if ok != wantOK {
		t.Fatalf("%q: readActivity ok = %v, encoding/json %v", raw, ok, wantOK)
	}
	if !ok {
		return
	}
	top := map[string]json.RawMessage{}
	for k, v := range want {
		// Web Chat treats a null member like an absent one.
		if !isNull(v) {
			top[k] = v
		}
	}
	checkReader(t, raw, m.field, top)
	// Members of the objects inside, null included, and of each entity.
	var objects [][]byte
	for _, v := range want {
		objects = append(objects, v)
		var elems []json.RawMessage
		if json.Unmarshal(v, &elems) == nil {
			for _, e := range elems {
				objects = append(objects, e)
			}
		}
	}
	for _, v := range objects {
		inner, isObject := unmarshalMembers(v)
		var acc account
		var cd channelData
		var e entity
		readers := []struct {
			set   func(key, val []byte)
			field func([]byte) *[]byte
		}{{acc.set, acc.field}, {cd.set, cd.field}, {e.set, e.field}}
		for _, r := range readers {
			if readObject(v, r.set) != isObject {
				t.Fatalf("%q: readObject(%q) ok = %v, encoding/json %v", raw, v, !isObject, isObject)
			}
			checkReader(t, v, r.field, inner)
		}
	}
}

// TestMembersMatchEncodingJSON: the one-pass readers of an activity and of the objects in it see
// each member as decoding into a map[string]json.RawMessage does.
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
	// Repeated and null members at the top and inside, escaped and invalid UTF-8 keys.
	`{"type":"message","type":null,"id":null,"id":"x","from":{"role":"bot","role":null}}`,
	`{"channelData":{"streamType":"final"},"channelData":null}`,
	`{"channelData":null,"channelData":{"streamType":null,"streamId":"s","streamId":1}}`,
	`{"\u0069d":"a","from":{"\u0072ole":"user","i\u0064":"u"},"ty\u0070e":5}`,
	"{\"t\xffype\":\"x\",\"from\":{\"r\xc3ole\":1}}",
	`{"entities":[{"type":"streaminfo","streamType":"streaming","streamSequence":null},null,3,{"@id":"","isPartOf":{"@id":"_:a"},"position":[1]}]}`,
	`{ "channelData" : { "clientActivityID" : "c" , "webchat:sequence-id" : 1.5 } , "text" : [ ] }`,
}

func FuzzMembers(f *testing.F) {
	for _, s := range membersSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkMembers(t, raw) })
}

// checkDecoded compares act.decoded, which puts an activity together from what parse read, with
// activity.Decode, as Livestream reads each: the same metadata, or none for both.
func checkDecoded(t *testing.T, raw []byte) {
	t.Helper()
	var a act
	if !a.parse(raw, "u") {
		return
	}
	full, err := activity.Decode(raw)
	got := a.decoded()
	if (err != nil) != (got == nil) {
		t.Fatalf("%q: decoded %v, activity.Decode error %v", raw, got != nil, err)
	}
	if err != nil {
		return
	}
	gotLS, gotOK := got.Livestream()
	wantLS, wantOK := full.Livestream()
	if gotOK != wantOK || gotLS != wantLS {
		t.Fatalf("%q: Livestream %+v %v, from activity.Decode %+v %v", raw, gotLS, gotOK, wantLS, wantOK)
	}
}

var decodedSeeds = []string{
	`{"type":"typing","id":"r1","text":"Hel","channelData":{"streamType":"streaming","streamSequence":1}}`,
	`{"type":"typing","id":"r2","text":"","channelData":{"streamType":"streaming","streamSequence":2,"streamId":"r1"}}`,
	`{"type":"typing","id":"r3","attachments":[],"channelData":{"streamType":"informative","streamSequence":3,"streamId":"r1"}}`,
	`{"type":"message","id":"f","text":"Hello","channelData":{"streamType":"final","streamId":"r1"}}`,
	`{"type":"typing","id":"f2","text":"x","channelData":{"streamType":"final","streamId":"r1"}}`,
	`{"type":"typing","id":"f3","channelData":{"streamType":"final","streamId":"r1"}}`,
	`{"type":"message","id":"f4","channelData":{"streamType":"final"}}`,
	`{"type":"typing","id":"e1","text":"a","entities":[{"type":"streaminfo","streamType":"streaming","streamSequence":1}]}`,
	`{"type":"typing","id":"e2","channelData":{},"entities":[{"type":"streaminfo","streamType":"streaming","streamSequence":2,"streamId":"e1"}]}`,
	`{"type":"typing","id":"e3","channelData":{"streamType":5},"entities":[{"type":"streaminfo","streamType":"streaming","streamSequence":2,"streamId":"e1"}]}`,
	`{"type":"typing","id":"e4","entities":[{"type":"https://schema.org/Message","@id":"","abstract":"sum"}],"channelData":{"streamType":"streaming","streamSequence":1}}`,
	`{"type":"typing","id":"d1","channelData":{"streamType":"streaming","streamType":"final","streamId":"x","streamId":null}}`,
	`{"type":"typing","id":"d2","channelData":{"streamSequence":"1","streamType":"streaming"}}`,
	`{"type":"typing","id":"d3","channelData":{"streamSequence":1.5,"streamType":"streaming"}}`,
	`{"type":"typing","id":"d4","channelData":null,"text":"a","entities":[{"type":"streaminfo","streamType":"streaming","streamSequence":1}]}`,
	`{"type":"typing","id":"d5","text":"a\nb","channelData":{"streamType":"streaming","streamSequence":1}}`,
	`{"type":"typing","id":"d6","channelData":{"stream\u0054ype":"streaming","streamSequence":1}}`,
	`{"type":"typing","id":"d7","attachments":[{"contentType":"text/plain"}],"channelData":{"streamType":"streaming","streamSequence":1}}`,
	`{"type":"typing","id":"d8","attachments":[1],"channelData":{"streamType":"streaming","streamSequence":1}}`,
	"{\"type\":\"typing\",\"id\":\"\xff\",\"channelData\":{\"streamType\":\"streaming\",\"streamSequence\":1}}",
	`{"type":"typing","channelData":{"streamType":"streaming","streamSequence":1}}`,
	`{"type":"typing","id":"x","from":{"id":1},"channelData":{"streamType":"streaming","streamSequence":1}}`,
}

// TestDecodedMatchesDecode: what act.decoded builds without activity.Decode reads as the same
// livestream metadata.
func TestDecodedMatchesDecode(t *testing.T) {
	for _, raw := range append(decodedSeeds, membersSeeds...) {
		checkDecoded(t, []byte(raw))
	}
}

func FuzzDecoded(f *testing.F) {
	for _, s := range append(decodedSeeds, membersSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecoded(t, raw) })
}
