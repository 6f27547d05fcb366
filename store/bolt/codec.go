package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// Bucket and key names of the layout (DESIGN "Storage layout"):
//
//	conversations/                top-level bucket, one sub-bucket per conversation id
//	  <conversation id>/
//	    meta                      key: the conversation's metadata as JSON (store.Conversation;
//	                              its lastSeq member is not maintained, see last)
//	    last                      key: 16 bytes, big-endian: last seq, and the timestamp of the
//	                              newest activity in Unix ms, which the next Append must exceed
//	                              (DESIGN invariant 2)
//	    log/                      8-byte big-endian seq → encoded log record (see below)
//	    clientids/                channelData.clientActivityID → 8-byte big-endian seq
//	    attachments/              attachment id → encoded attachment (see encodeAttachment)
//
// The sequence state is kept apart from the JSON metadata because every append changes it: 16
// bytes are cheap to read and write in the single writer goroutine, the JSON is not.
//
// There is no separate "activity id → seq" index: an activity id is "<conversationId>|<seq>"
// (activity.FormatID), so the id itself names the log key of the activity's original record.
var (
	bucketConversations = []byte("conversations")
	bucketLog           = []byte("log")
	bucketClientIDs     = []byte("clientids")
	bucketAttachments   = []byte("attachments")
	keyMeta             = []byte("meta")
	keyLast             = []byte("last")
)

// last is a conversation's sequence state.
type last struct {
	seq  uint64
	tsMs int64
}

func decodeLast(v []byte) (last, error) {
	if len(v) != 16 {
		return last{}, errors.New("store/bolt: corrupt sequence state")
	}
	return last{seq: binary.BigEndian.Uint64(v), tsMs: int64(binary.BigEndian.Uint64(v[8:]))}, nil
}

func (l last) encode() []byte {
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v, l.seq)
	binary.BigEndian.PutUint64(v[8:], uint64(l.tsMs))
	return v
}

func decodeMeta(data []byte) (store.Conversation, error) {
	var c store.Conversation
	if err := json.Unmarshal(data, &c); err != nil {
		return store.Conversation{}, fmt.Errorf("store/bolt: corrupt conversation metadata: %w", err)
	}
	return c, nil
}

func encodeMeta(c store.Conversation) ([]byte, error) {
	c.LastSeq = 0
	return json.Marshal(c)
}

// readConversation returns the metadata of the conversation in bucket cb.
func readConversation(cb *bolt.Bucket) (store.Conversation, error) {
	c, err := decodeMeta(cb.Get(keyMeta))
	if err != nil {
		return store.Conversation{}, err
	}
	l, err := decodeLast(cb.Get(keyLast))
	if err != nil {
		return store.Conversation{}, err
	}
	c.LastSeq = l.seq
	return c, nil
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

func keySeq(k []byte) uint64 { return binary.BigEndian.Uint64(k) }

// A log record is a fixed header followed by the activity JSON as the writer gave it:
//
//	[0]      format version (recordVersion)
//	[1]      store.EntryKind
//	[2]      flags: flagEphemeral, flagDeleted
//	[3:11]   big-endian seq: for KindRevision the original's seq; for KindActivity the seq of the
//	         latest revision (0 = never revised)
//	[11:19]  big-endian stamped timestamp, Unix ms (a revision carries its original's)
//	[19:]    activity JSON
//
// The stamp (id, timestamp, sequence id) lives in the header and the key, and is applied when
// the record is decoded; so the JSON is encoded by the caller's goroutine before the write is
// queued, and the single writer goroutine only copies bytes. The header also lets ReadAfter
// decide whether an entry is replayed without decoding JSON.
//
// An original record keeps the content it was first written with, so ReadLog shows the log as it
// was written; its header is rewritten on Update (latest revision seq) and Delete (flagDeleted).
// The latest content of a revised activity is the content of its latest revision entry, one
// lookup away.
const (
	recordVersion    = 1
	recordHeaderSize = 19

	flagEphemeral = 1 << 0
	flagDeleted   = 1 << 1
)

var errCorruptRecord = errors.New("store/bolt: corrupt log record")

type header struct {
	kind  store.EntryKind
	flags byte
	ref   uint64
	tsMs  int64
}

func (h header) ephemeral() bool { return h.flags&flagEphemeral != 0 }
func (h header) deleted() bool   { return h.flags&flagDeleted != 0 }

// sequenceID is the sequence id the record's activity carries: its own seq, or for a revision
// the original's.
func (h header) sequenceID(seq uint64) uint64 {
	if h.kind == store.KindRevision {
		return h.ref
	}
	return seq
}

func decodeHeader(v []byte) (header, error) {
	if len(v) < recordHeaderSize || v[0] != recordVersion {
		return header{}, errCorruptRecord
	}
	h := header{
		kind:  store.EntryKind(v[1]),
		flags: v[2],
		ref:   binary.BigEndian.Uint64(v[3:11]),
		tsMs:  int64(binary.BigEndian.Uint64(v[11:19])),
	}
	if h.kind != store.KindActivity && h.kind != store.KindRevision {
		return header{}, errCorruptRecord
	}
	return h, nil
}

func encodeRecord(h header, body []byte) []byte {
	v := make([]byte, recordHeaderSize, recordHeaderSize+len(body))
	putHeader(v, h)
	return append(v, body...)
}

func putHeader(v []byte, h header) {
	v[0] = recordVersion
	v[1] = byte(h.kind)
	v[2] = h.flags
	binary.BigEndian.PutUint64(v[3:11], h.ref)
	binary.BigEndian.PutUint64(v[11:19], uint64(h.tsMs))
}

// withHeader returns a copy of record v with its header replaced (bbolt values must not be
// modified in place).
func withHeader(v []byte, h header) []byte {
	c := append([]byte(nil), v...)
	putHeader(c, h)
	return c
}

// stamp sets the keys the store owns (DESIGN invariants 2 and 4).
func stamp(a *activity.Activity, conversationID string, sequenceID uint64, tsMs int64) {
	a.Stamp(activity.FormatID(conversationID, sequenceID), sequenceID, activity.FormatTimestamp(time.UnixMilli(tsMs)))
}

// decodeActivity decodes the record v stored at seq and stamps it. The decoder copies what it
// keeps, so the result stays valid after the transaction that v belongs to ends.
func (s *Store) decodeActivity(conversationID string, seq uint64, v []byte) (*activity.Activity, error) {
	h, err := decodeHeader(v)
	if err != nil {
		return nil, err
	}
	s.decodes.Add(1)
	a, err := activity.Decode(v[recordHeaderSize:])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCorruptRecord, err)
	}
	stamp(a, conversationID, h.sequenceID(seq), h.tsMs)
	return a, nil
}

// An attachment is stored as a 4-byte big-endian length, that many bytes of JSON metadata, then
// the raw data, so large files are not base64-encoded.
type attachmentMeta struct {
	ContentType string `json:"contentType,omitempty"`
	Name        string `json:"name,omitempty"`
	Created     int64  `json:"created"`
}

func encodeAttachment(att store.Attachment) ([]byte, error) {
	m, err := json.Marshal(attachmentMeta{ContentType: att.ContentType, Name: att.Name, Created: att.Created.UnixNano()})
	if err != nil {
		return nil, err
	}
	v := make([]byte, 4, 4+len(m)+len(att.Data))
	binary.BigEndian.PutUint32(v, uint32(len(m)))
	v = append(v, m...)
	return append(v, att.Data...), nil
}

func decodeAttachment(id string, v []byte) (store.Attachment, error) {
	corrupt := fmt.Errorf("store/bolt: corrupt attachment %q", id)
	if len(v) < 4 {
		return store.Attachment{}, corrupt
	}
	n := binary.BigEndian.Uint32(v)
	if uint64(len(v)-4) < uint64(n) {
		return store.Attachment{}, corrupt
	}
	var m attachmentMeta
	if err := json.Unmarshal(v[4:4+n], &m); err != nil {
		return store.Attachment{}, corrupt
	}
	return store.Attachment{
		ID:          id,
		ContentType: m.ContentType,
		Name:        m.Name,
		Data:        append([]byte{}, v[4+n:]...),
		Created:     unixNanoUTC(m.Created),
	}, nil
}
