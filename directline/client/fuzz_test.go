package client

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
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

// referenceSet decodes an ActivitySet with encoding/json alone: the members as encoding/json
// matches them, each activity with activity.Decode.
func referenceSet(data []byte) (ActivitySet, error) {
	var raw struct {
		Activities []json.RawMessage `json:"activities"`
		Watermark  json.RawMessage   `json:"watermark"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return ActivitySet{}, err
	}
	var s ActivitySet
	if raw.Activities != nil {
		s.Activities = make([]*activity.Activity, len(raw.Activities))
		s.digests = make([]uint64, len(raw.Activities))
	}
	for i, r := range raw.Activities {
		if string(r) == "null" {
			continue
		}
		a, err := activity.Decode(r)
		if err != nil {
			return ActivitySet{}, err
		}
		s.Activities[i], s.digests[i] = a, digest(r)
	}
	switch w := jsonscan.TrimSpace(raw.Watermark); {
	case len(w) == 0 || string(w) == "null":
	case w[0] == '"':
		if err := json.Unmarshal(w, &s.Watermark); err != nil {
			return ActivitySet{}, err
		}
	default:
		var n json.Number
		if err := json.Unmarshal(w, &n); err != nil {
			return ActivitySet{}, err
		}
		s.Watermark = n.String()
	}
	return s, nil
}

// sparseView keeps what a sparse decoding promises of an activity.
func sparseView(a *activity.Activity) *activity.Activity {
	if a == nil {
		return nil
	}
	v := &activity.Activity{Type: a.Type, ID: a.ID, Timestamp: a.Timestamp, ReplyToID: a.ReplyToID}
	if a.From != nil {
		v.From = &activity.ChannelAccount{ID: a.From.ID, Name: a.From.Name, Role: a.From.Role}
	}
	if a.ChannelData != nil {
		v.ChannelData = map[string]json.RawMessage{}
		for _, k := range []string{activity.KeySequenceID, activity.KeyClientActivityID} {
			if raw, ok := a.ChannelData[k]; ok {
				v.ChannelData[k] = raw
			}
		}
	}
	return v
}

// FuzzActivitySetDecode: the client's single-pass decoding of a frame agrees with encoding/json
// (same error or none, same set and digests); the sparse decoding accepts every frame the full
// one accepts, refuses every frame that is not JSON, and holds the same id, type, timestamp,
// replyToId, from, sort key and clientActivityID.
func FuzzActivitySetDecode(f *testing.F) {
	f.Add([]byte(`{"activities":[{"type":"message","id":"c|0000001","timestamp":"2026-01-01T00:00:00Z","from":{"id":"u","role":"user"},"channelData":{"webchat:sequence-id":1,"clientActivityID":"x"}}],"watermark":"1"}`))
	f.Add([]byte(`{"Activities":[{"id":"a","id":null},null],"WATERMARK":3,"activities":[{"from":null,"channelData":{"webchat:sequence-id":2,"webchat:sequence-id":"3"}}]}`))
	f.Add([]byte(`{"activities":[{"type":5}],"watermark":true}`))
	f.Add([]byte(` {"activities":[ {"replyToId":"r","from":{"role":"bot","x":[1,{"}":"]"}]}} , {} ]} `))
	f.Add([]byte(`{"activities":[{"from":[]}]}`))
	f.Add([]byte(`{"activities":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := referenceSet(data)
		var got, sparse ActivitySet
		// The sets must not keep a reference to what they were decoded from: a stream reads
		// every frame into the same buffer.
		buf := bytes.Clone(data)
		gerr := got.decode(buf, false)
		serr := sparse.decode(buf, true)
		for i := range buf {
			buf[i] = 'x'
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: encoding/json %v, decode %v", data, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%q: encoding/json %+v, decode %+v", data, want, got)
		}
		if serr == nil && !json.Valid(data) {
			t.Fatalf("%q: sparse decoding accepted what is not JSON", data)
		}
		if werr != nil {
			return
		}
		if serr != nil {
			t.Fatalf("%q: sparse decoding refused a set the full one accepts: %v", data, serr)
		}
		if sparse.Watermark != want.Watermark || !reflect.DeepEqual(sparse.digests, want.digests) || len(sparse.Activities) != len(want.Activities) {
			t.Fatalf("%q: sparse %+v, full %+v", data, sparse, want)
		}
		for i, a := range want.Activities {
			if v := sparseView(a); !reflect.DeepEqual(v, sparse.Activities[i]) {
				t.Fatalf("%q: activity %d sparse %+v, want %+v", data, i, sparse.Activities[i], v)
			}
		}
	})
}

// FuzzPostAnswer: the POST answer {"id"} is read as encoding/json reads it, error or not.
func FuzzPostAnswer(f *testing.F) {
	for _, s := range []string{`{"id":"c|0000001"}`, ` {"ID":"a"} `, `{"id":1}`, `{"ID":1,"id":"x"}`, `{"id":"x","Id":null}`,
		`{"id":"\u0041"}`, `null`, `[]`, `{"id":"a"`, "\v{}", `{"other":[1,{"id":2}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want postAnswer
		gerr := got.decode(data)
		werr := json.Unmarshal(data, &want)
		if (gerr == nil) != (werr == nil) || (werr == nil && got != want) {
			t.Fatalf("%q: decode %+v, %v; encoding/json %+v, %v", data, got, gerr, want, werr)
		}
	})
}
