package client

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestActivitySetWatermarkForms(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"activities":[],"watermark":"12"}`, "12"},
		{`{"activities":[],"watermark":12}`, "12"},
		{`{"activities":[],"watermark":null}`, ""},
		{`{"activities":[]}`, ""},
		{`{"activities":[],"watermark":"0000a-42"}`, "0000a-42"},
	}
	for _, tt := range tests {
		var s ActivitySet
		if err := json.Unmarshal([]byte(tt.in), &s); err != nil || s.Watermark != tt.want {
			t.Errorf("%s: watermark %q, %v; want %q", tt.in, s.Watermark, err, tt.want)
		}
	}
	var s ActivitySet
	if err := json.Unmarshal([]byte(`{"activities":[],"watermark":[1]}`), &s); err == nil {
		t.Error("an array watermark was accepted")
	}
}

// FuzzActivitySet: any frame either decodes or is an error, the same through json.Unmarshal and
// through the client's own decoding (which skips json.Unmarshal's first scan); a decoded set
// round-trips its watermark.
func FuzzActivitySet(f *testing.F) {
	f.Add([]byte(`{"activities":[{"type":"message","id":"c|0000001","channelData":{"webchat:sequence-id":1}}],"watermark":"1"}`))
	f.Add([]byte(`{"activities":null,"watermark":7}`))
	f.Add([]byte(`{"activities":[null,{"type":"typing"}]} `))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s, direct ActivitySet
		err := json.Unmarshal(data, &s)
		derr := decodeAnswer(data, &direct)
		if (err == nil) != (derr == nil) {
			t.Fatalf("%q: json.Unmarshal %v, decodeAnswer %v", data, err, derr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(s, direct) {
			t.Fatalf("%q: json.Unmarshal %+v, decodeAnswer %+v", data, s, direct)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("re-encoding %q: %v", data, err)
		}
		var again ActivitySet
		if err := json.Unmarshal(b, &again); err != nil || again.Watermark != s.Watermark {
			t.Fatalf("round trip of %q: %q, %v", data, again.Watermark, err)
		}
	})
}
