package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Format 1 kept everything in the conversation's own bucket:
//
//	conversations/<conversation id>/
//	  meta, attachments/          as in format 2
//	  last                        16 bytes, big-endian: last seq, timestamp of the newest activity
//	  log/                        8-byte big-endian seq → log record (the same record encoding)
//	  clientids/                  clientActivityID → 8-byte big-endian seq
var (
	format1Last      = []byte("last")
	format1Log       = []byte("log")
	format1ClientIDs = []byte("clientids")
)

// migrateFormat1 moves every conversation's log, clientActivityID index and sequence state of a
// format 1 file into the format 2 buckets (created empty by the caller) in the open write
// transaction, so a crash leaves the file as it was. It returns the number of conversations.
func migrateFormat1(bs bucketSet) (int, error) {
	var ids []string
	c := bs.conversations.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			ids = append(ids, string(k))
		}
	}
	bs.log.FillPercent = 0.95
	pos := uint64(1)
	for _, id := range ids {
		cb := bs.conversations.Bucket([]byte(id))
		lv, log1, cids1 := cb.Get(format1Last), cb.Bucket(format1Log), cb.Bucket(format1ClientIDs)
		if len(lv) != 16 || log1 == nil || cids1 == nil {
			return 0, fmt.Errorf("conversation %q is not in data format 1", id)
		}
		lastSeq, tsMs := binary.BigEndian.Uint64(lv), int64(binary.BigEndian.Uint64(lv[8:]))
		cidOf := map[uint64][]byte{}
		if err := cids1.ForEach(func(k, v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("conversation %q: corrupt clientActivityID index", id)
			}
			cidOf[keySeq(v)] = bytes.Clone(k)
			return nil
		}); err != nil {
			return 0, err
		}
		l := convLog{bucketSet: bs, id: id, key: convKey(id), head: head{recent: make([]recentEntry, 0, indexChunk)}}
		if err := log1.ForEach(func(k, v []byte) error {
			if len(k) != 8 || keySeq(k) != l.head.seq+1 {
				return fmt.Errorf("conversation %q: log key %x out of sequence", id, k)
			}
			if _, err := l.add(pos, bytes.Clone(v), cidOf[keySeq(k)]); err != nil {
				return err
			}
			pos++
			return nil
		}); err != nil {
			return 0, err
		}
		if l.head.seq != lastSeq {
			return 0, fmt.Errorf("conversation %q: log ends at seq %d, sequence state says %d", id, l.head.seq, lastSeq)
		}
		l.head.tsMs = tsMs
		if err := bs.heads.Put([]byte(id), l.head.encode()); err != nil {
			return 0, err
		}
		if err := errors.Join(cb.DeleteBucket(format1Log), cb.DeleteBucket(format1ClientIDs), cb.Delete(format1Last)); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}
