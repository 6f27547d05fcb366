package bolt

import (
	"math"
	"testing"
	"time"

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

// FuzzFormatTimestamp: formatTimestamp writes what activity.FormatTimestamp writes for every
// millisecond, years outside 0000–9999 included.
func FuzzFormatTimestamp(f *testing.F) {
	for _, ms := range []int64{
		0, -1, 1, 999, 1000, 1714557600123, // 2024-05-01T10:00:00.123Z
		951782400000,    // 2000-02-29 (a leap day)
		253402300799999, // 9999-12-31T23:59:59.999Z, the last four-digit year
		253402300800000, // 10000-01-01
		-62135596800000, // 0001-01-01
		-62167219200001, // the last millisecond of year -1
		math.MaxInt64 / 1000, math.MinInt64 / 1000,
	} {
		f.Add(ms)
	}
	f.Fuzz(func(t *testing.T, ms int64) {
		if got, want := formatTimestamp(ms), activity.FormatTimestamp(time.UnixMilli(ms)); got != want {
			t.Fatalf("formatTimestamp(%d) = %q, want %q", ms, got, want)
		}
	})
}
