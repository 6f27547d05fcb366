package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/directline-go/directline/store"
)

// format1Conversation is one conversation as a format 1 file holds it.
type format1Conversation struct {
	id      string
	records [][]byte          // log records for seqs 1, 2, ...
	cids    map[string]uint64 // clientActivityID → seq
	tsMs    int64
	att     store.Attachment
}

// writeFormat1 writes a data file in the format 1 layout (see migrate.go).
func writeFormat1(t *testing.T, path string, convs []format1Conversation) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucket(bucketConversations)
		if err != nil {
			return err
		}
		for _, c := range convs {
			cb, err := root.CreateBucket([]byte(c.id))
			if err != nil {
				return err
			}
			meta, err := encodeMeta(store.Conversation{ID: c.id, Created: time.Unix(1714557600, 0).UTC(), UserID: "u-" + c.id})
			if err != nil {
				return err
			}
			lv := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(len(c.records))), uint64(c.tsMs))
			if err := cb.Put(keyMeta, meta); err != nil {
				return err
			}
			if err := cb.Put(format1Last, lv); err != nil {
				return err
			}
			log, err := cb.CreateBucket(format1Log)
			if err != nil {
				return err
			}
			for i, r := range c.records {
				if err := log.Put(seqKey(uint64(i+1)), r); err != nil {
					return err
				}
			}
			cids, err := cb.CreateBucket(format1ClientIDs)
			if err != nil {
				return err
			}
			for cid, seq := range c.cids {
				if err := cids.Put([]byte(cid), seqKey(seq)); err != nil {
					return err
				}
			}
			atts, err := cb.CreateBucket(bucketAttachments)
			if err != nil {
				return err
			}
			av, err := encodeAttachment(c.att)
			if err != nil {
				return err
			}
			if err := atts.Put([]byte(c.att.ID), av); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMigrateFormat1: a data file written in format 1 is migrated on Open: history, revisions,
// deletions, clientActivityID dedupe (in the index and in the head), sequence and timestamp
// state, metadata and attachments all read as before, and appends continue the sequence.
func TestMigrateFormat1(t *testing.T) {
	const ts = int64(1714557600000)
	body := func(text, cid string) []byte {
		b, err := message(text, cid).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// "short": 1 revised by 3, 2 typing, 4 deleted.
	short := format1Conversation{id: "short", tsMs: ts + 4, cids: map[string]uint64{"s1": 1, "s4": 4},
		att: store.Attachment{ID: "att", ContentType: "text/plain", Data: []byte("hello"), Created: time.Unix(5, 0).UTC()}}
	short.records = [][]byte{
		encodeRecord(header{kind: store.KindActivity, ref: 3, tsMs: ts + 1}, body("one", "s1")),
		encodeRecord(header{kind: store.KindActivity, flags: flagEphemeral, tsMs: ts + 2}, []byte(`{"type":"typing"}`)),
		encodeRecord(header{kind: store.KindRevision, ref: 1, tsMs: ts + 1}, body("one revised", "")),
		encodeRecord(header{kind: store.KindActivity, flags: flagDeleted, tsMs: ts + 4}, body("four", "s4")),
	}
	// "long" crosses index chunks: 2*indexChunk+5 messages.
	long := format1Conversation{id: "long", tsMs: ts + 1000, cids: map[string]uint64{},
		att: store.Attachment{ID: "a2", Data: []byte{0, 1, 2}, Created: time.Unix(6, 0).UTC()}}
	for i := range 2*indexChunk + 5 {
		cid := fmt.Sprintf("l%d", i+1)
		long.records = append(long.records, encodeRecord(header{kind: store.KindActivity, tsMs: ts + int64(i)}, body(fmt.Sprintf("m%d", i+1), cid)))
		long.cids[cid] = uint64(i + 1)
	}
	path := filepath.Join(t.TempDir(), "old.db")
	writeFormat1(t, path, []format1Conversation{short, long})

	ctx := context.Background()
	for round := range 2 { // migrated, then reopened as format 2
		s, err := Open(path, Options{Now: func() time.Time { return time.UnixMilli(ts) }})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		got, _, err := s.ReadAfter(ctx, "short", 0, 0)
		if err != nil || len(got) != 1 || got[0].Seq != 1 || got[0].Activity.Text != "one revised" {
			t.Fatalf("round %d: short history %+v, %v", round, got, err)
		}
		raw, err := s.ReadLog(ctx, "long", 0, 0)
		if err != nil || len(raw) != len(long.records)+round {
			t.Fatalf("round %d: long log has %d entries, %v", round, len(raw), err)
		}
		for i, e := range raw[:len(long.records)] {
			if e.Seq != uint64(i+1) || e.Activity.Text != fmt.Sprintf("m%d", i+1) {
				t.Fatalf("round %d: long entry %d is seq %d %q", round, i, e.Seq, e.Activity.Text)
			}
		}
		for _, tc := range []struct {
			conv, cid string
			seq       uint64
		}{{"long", "l1", 1}, {"long", "l40", 40}, {"long", fmt.Sprintf("l%d", len(long.records)), uint64(len(long.records))}, {"short", "s4", 4}} {
			r, err := s.Append(ctx, tc.conv, message("resend", tc.cid))
			if err != nil || !r.Duplicate || r.Seq != tc.seq {
				t.Errorf("round %d: resend of %s in %s: seq %d duplicate %v, %v; want seq %d", round, tc.cid, tc.conv, r.Seq, r.Duplicate, err, tc.seq)
			}
		}
		if round == 0 {
			r, err := s.Append(ctx, "long", message("new", "new"))
			if err != nil || r.Seq != uint64(len(long.records))+1 {
				t.Fatalf("append after migration: seq %d, %v", r.Seq, err)
			}
			if r.Activity.Timestamp <= raw[len(raw)-1].Activity.Timestamp || !strings.HasSuffix(r.Activity.Timestamp, "Z") {
				t.Errorf("append after migration stamped %s, after %s", r.Activity.Timestamp, raw[len(raw)-1].Activity.Timestamp)
			}
		}
		c, err := s.Conversation(ctx, "short")
		if err != nil || c.LastSeq != 4 || c.UserID != "u-short" {
			t.Errorf("round %d: short metadata %+v, %v", round, c, err)
		}
		att, err := s.Attachment(ctx, "short", "att")
		if err != nil || string(att.Data) != "hello" || att.ContentType != "text/plain" {
			t.Errorf("round %d: attachment %+v, %v", round, att, err)
		}
		if _, err := s.Activity(ctx, "short", got[0].Activity.ID); err != nil {
			t.Errorf("round %d: Activity: %v", round, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenRefusesUnknownFormat: a file whose format key names another layout is not read; the
// error names the file.
func TestOpenRefusesUnknownFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "future.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketFormat)
		if err != nil {
			return err
		}
		return b.Put(keyVersion, []byte("3"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `data format "3"`) {
		t.Fatalf("Open: %v", err)
	}
}
