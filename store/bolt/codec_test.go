package bolt

import (
	"testing"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// FuzzDecodeStored: whatever bytes a damaged file holds, decoding a log record, an attachment or
// the sequence state returns an error or a value, never a panic.
func FuzzDecodeStored(f *testing.F) {
	rec := encodeRecord(header{kind: store.KindRevision, flags: flagEphemeral, ref: 3, tsMs: 1714557600000},
		[]byte(`{"type":"typing","channelData":{"streamId":"x"}}`))
	att, err := encodeAttachment(store.Attachment{ID: "a", ContentType: "text/plain", Data: []byte("hi")})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec)
	f.Add(att)
	f.Add(last{seq: 7, tsMs: 1}.encode())
	f.Add([]byte{})
	f.Add(rec[:recordHeaderSize])
	s := &Store{}
	f.Fuzz(func(t *testing.T, v []byte) {
		if h, err := decodeHeader(v); err == nil {
			a, err := s.decodeActivity("c", 5, v)
			if err == nil {
				if sid, ok := a.SequenceID(); !ok || sid != h.sequenceID(5) {
					t.Fatalf("decoded record carries sequence id %d %v, header says %d", sid, ok, h.sequenceID(5))
				}
				if _, _, err := activity.ParseID(a.ID); err != nil {
					t.Fatalf("decoded record has id %q: %v", a.ID, err)
				}
			}
		}
		if a, err := decodeAttachment("a", v); err == nil && a.ID != "a" {
			t.Fatalf("attachment id %q", a.ID)
		}
		if l, err := decodeLast(v); err == nil && len(v) != 16 {
			t.Fatalf("sequence state %+v from %d bytes", l, len(v))
		}
	})
}
