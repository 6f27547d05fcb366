package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/directline-go/directline/store"
)

var errCorruptIndex = errors.New("store/bolt: corrupt conversation index")

// bucketSet is the top-level buckets as seen by one transaction.
type bucketSet struct {
	log, heads, index, clientIDs, conversations *bolt.Bucket
}

func buckets(tx *bolt.Tx) bucketSet {
	return bucketSet{
		log:           tx.Bucket(bucketLog),
		heads:         tx.Bucket(bucketHeads),
		index:         tx.Bucket(bucketIndex),
		clientIDs:     tx.Bucket(bucketClientIDs),
		conversations: tx.Bucket(bucketConversations),
	}
}

// convLog finds one conversation's log records by seq within one transaction (see codec.go).
type convLog struct {
	bucketSet
	id   string
	key  []byte // convKey(id)
	head head
	// chunk is the index chunk chunkN, the last one read: consecutive seqs share it.
	chunkN uint64
	chunk  []byte
}

// openConvLog decodes the head hv of conversation id (nil: the conversation does not exist).
func openConvLog(bs bucketSet, id string, hv []byte) (convLog, error) {
	if hv == nil {
		return convLog{}, store.ErrConversationNotFound
	}
	h, err := decodeHead(hv)
	if err != nil {
		return convLog{}, err
	}
	return convLog{bucketSet: bs, id: id, key: convKey(id), head: h}, nil
}

// readConvLog opens a conversation's log in a read transaction.
func readConvLog(tx *bolt.Tx, id string) (*convLog, error) {
	if id == "" {
		return nil, store.ErrConversationNotFound
	}
	bs := buckets(tx)
	l, err := openConvLog(bs, id, bs.heads.Get([]byte(id)))
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// pos returns the log position of seq; ok is false when the conversation has no such seq.
func (c *convLog) pos(seq uint64) (p uint64, ok bool, err error) {
	h := &c.head
	if seq == 0 || seq > h.seq {
		return 0, false, nil
	}
	if seq > h.base {
		return h.recent[seq-h.base-1].pos, true, nil
	}
	n := (seq - 1) / indexChunk
	if c.chunk == nil || c.chunkN != n {
		v := c.index.Get(chunkKey(c.key, n))
		if len(v) != 8*indexChunk {
			return 0, false, fmt.Errorf("%w: conversation %q chunk %d", errCorruptIndex, c.id, n)
		}
		c.chunk, c.chunkN = v, n
	}
	return binary.BigEndian.Uint64(c.chunk[8*((seq-1)%indexChunk):]), true, nil
}

// record returns the log record of seq, or nil when the conversation has no such seq.
func (c *convLog) record(seq uint64) ([]byte, error) {
	p, ok, err := c.pos(seq)
	if err != nil || !ok {
		return nil, err
	}
	v := c.log.Get(posKey(p))
	if v == nil {
		return nil, fmt.Errorf("%w: missing seq %d", errCorruptRecord, seq)
	}
	return v, nil
}

// rewrite replaces the record of an existing seq (a header change: Update, Delete).
func (c *convLog) rewrite(seq uint64, v []byte) error {
	p, ok, err := c.pos(seq)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: missing seq %d", errCorruptRecord, seq)
	}
	return c.log.Put(posKey(p), v)
}

// clientIDSeq returns the seq of the conversation's entry with clientActivityID cid, or 0.
func (c *convLog) clientIDSeq(cid []byte) (uint64, error) {
	for i, r := range c.head.recent {
		if bytes.Equal(r.cid, cid) {
			return c.head.base + uint64(i) + 1, nil
		}
	}
	v := c.clientIDs.Get(clientIDKey(c.key, cid))
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: clientActivityID %q", errCorruptIndex, cid)
	}
	return keySeq(v), nil
}

func posKey(p uint64) []byte { return seqKey(p) }

// has reports whether the conversation has an entry with seq.
func (c *convLog) has(seq uint64) bool { return seq != 0 && seq <= c.head.seq }

// add stores record v at log position pos as the conversation's next entry, with
// clientActivityID cid (nil: none), and returns its seq. When the head holds indexChunk entries
// they move to the index and clientids buckets. A clientActivityID longer than maxHeadClientID
// goes to clientids at once, so that every append's rewrite of the head stays small.
func (c *convLog) add(pos uint64, v, cid []byte) (uint64, error) {
	if err := c.log.Put(posKey(pos), v); err != nil {
		return 0, err
	}
	h := &c.head
	h.seq++
	if len(cid) > maxHeadClientID {
		if err := c.clientIDs.Put(clientIDKey(c.key, cid), seqKey(h.seq)); err != nil {
			return 0, err
		}
		cid = nil
	}
	h.recent = append(h.recent, recentEntry{pos: pos, cid: cid})
	if len(h.recent) < indexChunk {
		return h.seq, nil
	}
	chunk := make([]byte, 0, 8*indexChunk)
	for i, r := range h.recent {
		chunk = binary.BigEndian.AppendUint64(chunk, r.pos)
		if len(r.cid) > 0 {
			if err := c.clientIDs.Put(clientIDKey(c.key, r.cid), seqKey(h.base+uint64(i)+1)); err != nil {
				return 0, err
			}
		}
	}
	if err := c.index.Put(chunkKey(c.key, h.base/indexChunk), chunk); err != nil {
		return 0, err
	}
	h.base += indexChunk
	h.recent = h.recent[:0]
	return h.seq, nil
}
