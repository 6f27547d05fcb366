package bolt

import (
	"testing"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// FuzzDecodeStored: whatever bytes a damaged file holds, decoding a log record, an attachment or
// a conversation's head returns an error or a value, never a panic.
func FuzzDecodeStored(f *testing.F) {
	rec := encodeRecord(header{kind: store.KindRevision, flags: flagEphemeral, ref: 3, tsMs: 1714557600000},
		[]byte(`{"type":"typing","channelData":{"streamId":"x"}}`))
	att, err := encodeAttachment(store.Attachment{ID: "a", ContentType: "text/plain", Data: []byte("hi")})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec)
	f.Add(att)
	hd := head{seq: indexChunk + 2, tsMs: 1, base: indexChunk, recent: []recentEntry{{pos: 9, cid: []byte("c-1")}, {pos: 12}}}
	f.Add(hd.encode())
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
		if h, err := decodeHead(v); err == nil {
			again, err := decodeHead(h.encode())
			if err != nil || again.seq != h.seq || again.base != h.base || again.tsMs != h.tsMs || len(again.recent) != len(h.recent) {
				t.Fatalf("head %+v does not survive encoding: %+v, %v", h, again, err)
			}
		}
	})
}
