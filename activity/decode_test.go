package activity

import (
	"encoding/json"
	"reflect"
	"testing"
)

// decodeCases add to encodeCases what the single pass hands to decodeMembers or must read as
// decodeMembers does:
// nulls, repeated members, escaped keys, wrong types, invalid JSON and invalid UTF-8.
var decodeCases = []string{
	`{"type":"message","text":null,"from":null,"channelData":null,"entities":null,"attachments":null,"value":null}`,
	`{"type":"a","type":"b"}`,
	`{"type":"a","type":null}`,
	`{"x":1,"x":2}`,
	`{"from":{"id":"a","id":"b"}}`,
	`{"from":{"id":"a","x":1,"x":2}}`,
	`{"channelData":{"a":1,"a":2}}`,
	`{"t\u0079pe":"message","te\"xt":"q"}`,
	`{"type":1}`,
	`{"from":"u"}`,
	`{"from":{"id":7}}`,
	`{"channelData":[1]}`,
	`{"entities":{"a":1}}`,
	`{"entities":[ 1 , {"b" : 2} ,"c" ]}`,
	`{"entities":[]}`,
	`{"channelData":{}}`,
	`{"text":"caf\u00e9 \ud83d\ude00 \n"}`,
	"{\"text\":\"\xff\"}",
	"{\"\xff\":1}",
	"{\"from\":{\"\xfe\":1}}",
	`{"type":"message"`,
	`[]`, `null`, `"x"`, ``, ` {"type" : "message" } `,
}

func checkDecode(t *testing.T, in []byte) {
	t.Helper()
	want, werr := decodeMembers(in)
	got, gerr := Decode(in)
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("Decode(%q) error %v, decodeMembers %v", in, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%q)\n got %+v\nwant %+v", in, got, want)
	}
	var viaJSON Activity
	if err := json.Unmarshal(in, &viaJSON); gerr == nil && (err != nil || !reflect.DeepEqual(&viaJSON, got)) {
		t.Fatalf("encoding/json into an Activity: %+v, %v; Decode %+v", viaJSON, err, got)
	}
}

// TestDecodeMatchesMembers: the single pass gives the same activities and the same errors as
// reading member by member.
func TestDecodeMatchesMembers(t *testing.T) {
	for _, in := range append(append([]string{}, encodeCases...), decodeCases...) {
		checkDecode(t, []byte(in))
	}
}

// TestDecodeCopies: the activity does not share memory with the input, and a raw value
// cannot grow into its neighbour.
func TestDecodeCopies(t *testing.T) {
	in := []byte(`{"type":"message","channelData":{"a":1,"b":2},"x":"y"}`)
	a, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = ' '
	}
	_ = append(a.ChannelData["a"], '9')
	out, err := AppendJSON(nil, a)
	if err != nil || string(out) != `{"type":"message","channelData":{"a":1,"b":2},"x":"y"}` {
		t.Fatalf("after the input changed: %s, %v", out, err)
	}
}

func FuzzDecodeMatchesMembers(f *testing.F) {
	for _, s := range append(append([]string{}, encodeCases...), decodeCases...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
	})
}

func BenchmarkDecode(b *testing.B) {
	in := []byte(encodeCases[1])
	for _, d := range []struct {
		name   string
		decode func([]byte) (*Activity, error)
	}{{"members", decodeMembers}, {"Decode", Decode}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.decode(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
