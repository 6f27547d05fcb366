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

// The file's layout (format 2). Everything one append writes lands on pages shared with the other
// appends of its commit, whatever conversations they belong to:
//
//	format/                       key "version": "2" (formatVersion). A file without it that has
//	                              a conversations bucket is format 1 and is migrated on Open.
//	log/                          8-byte big-endian log position → encoded log record (see below).
//	                              Positions are taken from one counter in commit order, so a
//	                              commit's records fill the same tail leaves, and one conversation's
//	                              records are in seq order.
//	heads/                        conversation id → the conversation's head (see head): last seq,
//	                              timestamp of the newest activity, and the log positions and
//	                              clientActivityIDs of its newest entries (fewer than indexChunk)
//	index/                        convKey + 8-byte big-endian chunk number n → the log positions of
//	                              seqs n*indexChunk+1 ... (n+1)*indexChunk, 8 bytes each
//	clientids/                    convKey + clientActivityID → 8-byte big-endian seq, for the
//	                              entries in index and for clientActivityIDs longer than
//	                              maxHeadClientID (the other newer ones are in the head)
//	conversations/                one sub-bucket per conversation id:
//	  <conversation id>/
//	    meta                      key: the conversation's metadata as JSON (store.Conversation;
//	                              its lastSeq member is not maintained, see heads)
//	    attachments/              attachment id → encoded attachment (see encodeAttachment)
//
// An append writes its record at the log's tail and rewrites its conversation's head, a small
// value among many in the heads bucket; once every indexChunk entries, the head's positions and
// clientActivityIDs move to index and clientids in one go. Format 1 kept a log, a clientids index
// and the sequence state in each conversation's own buckets, which cost about four page writes
// per append when a commit spread over many conversations.
//
// There is no separate "activity id → seq" index: an activity id is "<conversationId>|<seq>"
// (activity.FormatID), so the id itself names the seq of the activity's original record.
var (
	bucketFormat        = []byte("format")
	bucketLog           = []byte("log")
	bucketHeads         = []byte("heads")
	bucketIndex         = []byte("index")
	bucketClientIDs     = []byte("clientids")
	bucketConversations = []byte("conversations")
	bucketAttachments   = []byte("attachments")
	keyVersion          = []byte("version")
	keyMeta             = []byte("meta")
)

// formatVersion is the layout described above.
const formatVersion = "2"

// indexChunk is how many entries a conversation's head holds before they move to the index: the
// head stays a few hundred bytes, and the index and clientids pages are written once per chunk.
const indexChunk = 32

// maxHeadClientID is the longest clientActivityID kept in a head (Web Chat's are 36 bytes or so).
const maxHeadClientID = 128

// head is a conversation's sequence state and newest entries.
//
//	[0:8]    big-endian last seq
//	[8:16]   big-endian timestamp of the newest activity, Unix ms, which the next Append must
//	         exceed (DESIGN invariant 2)
//	[16:24]  big-endian base: seqs 1..base are in the index (a multiple of indexChunk)
//	then, for seqs base+1..last: 8-byte big-endian log position, uvarint length and bytes of the
//	entry's clientActivityID (length 0: none, or longer than maxHeadClientID and in clientids)
type head struct {
	seq    uint64
	tsMs   int64
	base   uint64
	recent []recentEntry
}

type recentEntry struct {
	pos uint64
	cid []byte
}

var errCorruptHead = errors.New("store/bolt: corrupt conversation head")

// decodeHead decodes v; the clientActivityIDs alias v.
func decodeHead(v []byte) (head, error) {
	if len(v) < 24 {
		return head{}, errCorruptHead
	}
	h := head{
		seq:  binary.BigEndian.Uint64(v),
		tsMs: int64(binary.BigEndian.Uint64(v[8:])),
		base: binary.BigEndian.Uint64(v[16:]),
	}
	if h.base > h.seq || h.seq-h.base >= indexChunk || h.base%indexChunk != 0 {
		return head{}, errCorruptHead
	}
	// Room for the entries and one more: a write batch usually appends one entry per conversation.
	h.recent = make([]recentEntry, 0, h.seq-h.base+1)
	for rest := v[24:]; len(rest) > 0; {
		if len(rest) < 9 {
			return head{}, errCorruptHead
		}
		pos := binary.BigEndian.Uint64(rest)
		n, w := binary.Uvarint(rest[8:])
		if w <= 0 || uint64(len(rest)-8-w) < n {
			return head{}, errCorruptHead
		}
		rest = rest[8+w:]
		h.recent = append(h.recent, recentEntry{pos: pos, cid: rest[:n:n]})
		rest = rest[n:]
	}
	if uint64(len(h.recent)) != h.seq-h.base {
		return head{}, errCorruptHead
	}
	return h, nil
}

func (h *head) encode() []byte {
	n := 24
	for _, r := range h.recent {
		n += 8 + binary.MaxVarintLen64 + len(r.cid)
	}
	v := make([]byte, 24, n)
	binary.BigEndian.PutUint64(v, h.seq)
	binary.BigEndian.PutUint64(v[8:], uint64(h.tsMs))
	binary.BigEndian.PutUint64(v[16:], h.base)
	for _, r := range h.recent {
		v = binary.BigEndian.AppendUint64(v, r.pos)
		v = binary.AppendUvarint(v, uint64(len(r.cid)))
		v = append(v, r.cid...)
	}
	return v
}

// convKey is the prefix of a conversation's keys in index and clientids: the id's length as a
// uvarint, then the id, so no conversation's keys are a prefix range of another's.
func convKey(id string) []byte {
	k := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(id)+8), uint64(len(id)))
	return append(k, id...)
}

func chunkKey(conv []byte, n uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, len(conv)+8), conv...), n)
}

func clientIDKey(conv []byte, cid []byte) []byte {
	return append(append(make([]byte, 0, len(conv)+len(cid)), conv...), cid...)
}

// maxConversationID keeps convKey plus a chunk number within bbolt's key limit.
const maxConversationID = bolt.MaxKeySize - binary.MaxVarintLen64 - 8

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
	a.Stamp(activity.FormatID(conversationID, sequenceID), sequenceID, formatTimestamp(tsMs))
}

// formatTimestamp is activity.FormatTimestamp(time.UnixMilli(tsMs)), written digit by digit
// rather than by time.Format's layout interpreter: the writer formats one per append and a read
// one per activity. Years outside 0000–9999, which the layout writes otherwise, go to Format.
func formatTimestamp(tsMs int64) string {
	t := time.UnixMilli(tsMs).UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return activity.FormatTimestamp(t)
	}
	hour, minute, sec := t.Clock()
	var b [len(activity.TimestampLayout)]byte
	digits := func(at, v, n int) {
		for i := at + n - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	digits(0, year, 4)
	b[4] = '-'
	digits(5, int(month), 2)
	b[7] = '-'
	digits(8, day, 2)
	b[10] = 'T'
	digits(11, hour, 2)
	b[13] = ':'
	digits(14, minute, 2)
	b[16] = ':'
	digits(17, sec, 2)
	b[19] = '.'
	digits(20, t.Nanosecond()/int(time.Millisecond), 3)
	b[23] = 'Z'
	return string(b[:])
}

// stampRoom is what the stamped encoding adds besides the id and timestamp themselves: their
// member names and quotes, and the sequence id member (with a channelData object around it).
const stampRoom = 96

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
