package bolt

import (
	"context"
	"errors"
	"fmt"
	"maps"

	bolt "go.etcd.io/bbolt"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// Append stores a copy of a as the conversation's next entry: seq = LastSeq+1, id =
// activity.FormatID(conversation, seq), timestamp = the clock in ms, bumped to 1 ms after the
// previous activity's when the clock has not advanced (or went back), and
// channelData["webchat:sequence-id"] = seq (DESIGN invariants 1, 2, 4). Typing activities are
// stored as ephemeral entries (invariant 8). It returns after the commit is on disk.
//
// If channelData.clientActivityID is already in the conversation, the result is the original
// entry as first written with Duplicate set, nothing is stored and the commit hook is not called
// (invariant 6). Errors: store.ErrConversationNotFound, store.ErrClosed, ctx's error if it ends
// before the request is queued, storage errors.
func (s *Store) Append(ctx context.Context, conversationID string, a *activity.Activity) (store.AppendResult, error) {
	return s.AppendIf(ctx, conversationID, a, nil)
}

// AppendIf is Append with a precondition run inside the write transaction (see store.Store):
// check sees a copy of the conversation's metadata after the dedupe and before the seq is taken;
// its error aborts the append, and its changes to Properties are written with the entry. A nil
// check makes it Append.
func (s *Store) AppendIf(ctx context.Context, conversationID string, a *activity.Activity, check func(*store.Conversation) error) (store.AppendResult, error) {
	if a == nil {
		return store.AppendResult{}, errors.New("store/bolt: nil activity")
	}
	cid := []byte(a.ClientActivityID())
	if len(cid)+len(convKey(conversationID)) > bolt.MaxKeySize {
		return store.AppendResult{}, fmt.Errorf("store/bolt: clientActivityID and conversation id longer than %d bytes together", bolt.MaxKeySize)
	}
	if len(cid) == 0 {
		cid = nil
	}
	d, err := s.newDraft(a, header{kind: store.KindActivity})
	if err != nil {
		return store.AppendResult{}, err
	}
	h := &d.h
	var (
		seq     uint64
		dup     *store.Entry
		id, ts  string
		encoded []byte
	)
	err = s.submit(ctx, func(b *batch) error {
		c, err := b.conv(conversationID)
		if err != nil {
			return err
		}
		if cid != nil {
			dseq, err := c.clientIDSeq(cid)
			if err != nil {
				return err
			}
			if dseq != 0 {
				e, err := s.readRecord(&c.convLog, dseq)
				if err != nil {
					return err
				}
				dup = &e
				return nil
			}
		}
		if check != nil {
			m, err := c.metadata()
			if err != nil {
				return err
			}
			cv := cloneConversation(*m)
			if err := check(&cv); err != nil {
				return err
			}
			if !maps.Equal(cv.Properties, m.Properties) {
				m.Properties, c.metaDirty = cv.Properties, true
			}
		}
		h.tsMs = max(s.nowMs(), c.head.tsMs+1)
		if seq, err = b.add(c, encodeRecord(*h, d.u.JSON), cid); err != nil {
			return fatal(err)
		}
		c.head.tsMs = h.tsMs
		b.appended++
		if d.hooked != nil {
			id, ts = activity.FormatID(conversationID, seq), formatTimestamp(h.tsMs)
			encoded = d.stamped(id, seq, ts)
			d.hooked.Stamp(id, seq, ts)
			b.emit(c, store.Entry{Seq: seq, Kind: store.KindActivity, Activity: d.hooked, Ephemeral: h.ephemeral(), JSON: encoded})
		}
		return nil
	})
	if err != nil {
		return store.AppendResult{}, err
	}
	if dup != nil {
		return store.AppendResult{Entry: *dup, Duplicate: true}, nil
	}
	if encoded == nil {
		id, ts = activity.FormatID(conversationID, seq), formatTimestamp(h.tsMs)
		encoded = d.stamped(id, seq, ts)
	}
	d.in.Stamp(id, seq, ts)
	return store.AppendResult{Entry: store.Entry{Seq: seq, Kind: store.KindActivity, Activity: d.in, Ephemeral: h.ephemeral(), JSON: encoded}}, nil
}

// draft is an activity prepared on the caller's goroutine, to keep the writer's share of each
// write small: a private copy, its encoding without the stamp (the record; the writer splices the
// stamp into it for the entry's JSON, which the commit hook and the caller share), the record's
// header, and the copy the commit hook gets (nil without a hook).
type draft struct {
	in, hooked *activity.Activity
	u          activity.Unstamped
	h          header
}

// newDraft prepares a; h gets the ephemeral flag when a is a typing activity.
func (s *Store) newDraft(a *activity.Activity, h header) (*draft, error) {
	d := &draft{in: a.Clone(), h: h}
	var err error
	if d.u, err = activity.EncodeUnstamped(d.in); err != nil {
		return nil, err
	}
	if d.in.IsTyping() {
		d.h.flags |= flagEphemeral
	}
	if s.onCommit != nil {
		d.hooked = d.in.Clone()
	}
	return d, nil
}

// stamped is the entry's JSON: the record with id, seq and ts spliced in.
func (d *draft) stamped(id string, seq uint64, ts string) []byte {
	return d.u.AppendStamped(make([]byte, 0, len(d.u.JSON)+len(id)+len(ts)+stampRoom), id, seq, ts)
}

// originalSeq maps an activity id of the conversation to the seq of its original record.
func originalSeq(conversationID, activityID string) (uint64, error) {
	conv, seq, err := activity.ParseID(activityID)
	if err != nil || conv != conversationID || seq == 0 {
		return 0, store.ErrActivityNotFound
	}
	return seq, nil
}

// liveOriginal returns the original record with seq oseq if it is an undeleted activity.
func liveOriginal(l *convLog, oseq uint64) ([]byte, header, error) {
	v, err := l.record(oseq)
	if err != nil {
		return nil, header{}, err
	}
	if v == nil {
		return nil, header{}, store.ErrActivityNotFound
	}
	h, err := decodeHeader(v)
	if err != nil {
		return nil, header{}, err
	}
	if h.kind != store.KindActivity || h.deleted() {
		return nil, header{}, store.ErrActivityNotFound
	}
	return v, h, nil
}

// Update appends a KindRevision entry (the next seq, a new watermark) holding a copy of revised
// stamped with the original's id, timestamp and sequence id, and makes it the activity's latest
// revision: history shows it at the original's place (DESIGN invariant 9, field case R12). The
// revision is ephemeral if revised is a typing activity. Errors: store.ErrConversationNotFound,
// store.ErrActivityNotFound (no such activity, an id that is not "<conversationId>|<seq>", or a
// deleted activity), store.ErrClosed, storage errors.
func (s *Store) Update(ctx context.Context, conversationID, activityID string, revised *activity.Activity) (store.Entry, error) {
	if revised == nil {
		return store.Entry{}, errors.New("store/bolt: nil activity")
	}
	oseq, err := originalSeq(conversationID, activityID)
	if err != nil {
		if _, cerr := s.Conversation(ctx, conversationID); cerr != nil {
			return store.Entry{}, cerr
		}
		return store.Entry{}, err
	}
	d, err := s.newDraft(revised, header{kind: store.KindRevision, ref: oseq})
	if err != nil {
		return store.Entry{}, err
	}
	h := &d.h
	var (
		seq     uint64
		encoded []byte
	)
	id := activity.FormatID(conversationID, oseq)
	err = s.submit(ctx, func(b *batch) error {
		c, err := b.conv(conversationID)
		if err != nil {
			return err
		}
		orig, oh, err := liveOriginal(&c.convLog, oseq)
		if err != nil {
			return err
		}
		h.tsMs = oh.tsMs
		if seq, err = b.add(c, encodeRecord(*h, d.u.JSON), nil); err != nil {
			return fatal(err)
		}
		oh.ref = seq
		if err := c.rewrite(oseq, withHeader(orig, oh)); err != nil {
			return fatal(err)
		}
		b.appended++
		if d.hooked != nil {
			ts := formatTimestamp(h.tsMs)
			encoded = d.stamped(id, oseq, ts)
			d.hooked.Stamp(id, oseq, ts)
			b.emit(c, store.Entry{Seq: seq, Kind: store.KindRevision, Activity: d.hooked, Ephemeral: h.ephemeral(), JSON: encoded})
		}
		return nil
	})
	if err != nil {
		return store.Entry{}, err
	}
	ts := formatTimestamp(h.tsMs)
	if encoded == nil {
		encoded = d.stamped(id, oseq, ts)
	}
	d.in.Stamp(id, oseq, ts)
	return store.Entry{Seq: seq, Kind: store.KindRevision, Activity: d.in, Ephemeral: h.ephemeral(), JSON: encoded}, nil
}

// Delete marks the activity deleted: ReadAfter and Activity no longer return it, ReadLog still
// does. It takes no seq and produces no entry, so the commit hook is not called: live clients
// keep what they were shown (Web Chat has no delete semantics, field case R12). The
// clientActivityID stays indexed, so a late resend of the deleted activity is still a duplicate.
// Errors: as Update.
func (s *Store) Delete(ctx context.Context, conversationID, activityID string) error {
	oseq, err := originalSeq(conversationID, activityID)
	if err != nil {
		if _, cerr := s.Conversation(ctx, conversationID); cerr != nil {
			return cerr
		}
		return err
	}
	return s.submit(ctx, func(b *batch) error {
		c, err := b.conv(conversationID)
		if err != nil {
			return err
		}
		orig, oh, err := liveOriginal(&c.convLog, oseq)
		if err != nil {
			return err
		}
		oh.flags |= flagDeleted
		return fatal(c.rewrite(oseq, withHeader(orig, oh)))
	})
}

// Activity returns the latest revision of one activity. Errors: store.ErrConversationNotFound,
// store.ErrActivityNotFound (also for deleted activities), store.ErrClosed.
func (s *Store) Activity(ctx context.Context, conversationID, activityID string) (*activity.Activity, error) {
	var a *activity.Activity
	err := s.view(ctx, func(tx *bolt.Tx) error {
		l, err := readConvLog(tx, conversationID)
		if err != nil {
			return err
		}
		oseq, err := originalSeq(conversationID, activityID)
		if err != nil {
			return err
		}
		v, h, err := liveOriginal(l, oseq)
		if err != nil {
			return err
		}
		seq := oseq
		if h.ref != 0 {
			if seq = h.ref; !l.has(seq) {
				return errCorruptRecord
			}
			if v, err = l.record(seq); err != nil {
				return err
			}
		}
		a, err = s.decodeActivity(conversationID, seq, v)
		return err
	})
	return a, err
}

// readRecord decodes the log record at seq as written.
func (s *Store) readRecord(l *convLog, seq uint64) (store.Entry, error) {
	v, err := l.record(seq)
	if err != nil {
		return store.Entry{}, err
	}
	if v == nil {
		return store.Entry{}, fmt.Errorf("%w: missing seq %d", errCorruptRecord, seq)
	}
	return s.entry(l.id, seq, v)
}

func (s *Store) entry(conversationID string, seq uint64, v []byte) (store.Entry, error) {
	h, err := decodeHeader(v)
	if err != nil {
		return store.Entry{}, err
	}
	a, err := s.decodeActivity(conversationID, seq, v)
	if err != nil {
		return store.Entry{}, err
	}
	return store.Entry{Seq: seq, Kind: h.kind, Activity: a, Ephemeral: h.ephemeral()}, nil
}

// ReadAfter returns history after watermark (Direct Line 3.0: GET activities?watermark=W, and
// stream resumption), at most limit entries (limit <= 0: no limit), in seq order:
//
//   - an original record after watermark is returned at its seq with its latest revision's
//     content, unless it is deleted or that content is ephemeral;
//   - a revision entry after watermark is returned only when its original is at or before
//     watermark (the reader already has an older revision), it is the latest revision, it is
//     not ephemeral and the activity is not deleted; so each activity comes once, at its
//     original place when the reader has not seen it yet (DESIGN invariant 9, R12);
//   - ephemeral entries are skipped (invariant 8, R24) but covered by the watermark.
//
// The returned watermark is the seq of the last entry looked at; when the end of the log is
// reached it is LastSeq, also for a watermark past it. The cost is one cursor seek plus the entries after
// watermark that are looked at (and one lookup per revised activity), whatever the history
// before watermark. Errors: store.ErrConversationNotFound, store.ErrClosed.
func (s *Store) ReadAfter(ctx context.Context, conversationID string, watermark uint64, limit int) ([]store.Entry, uint64, error) {
	var (
		out  []store.Entry
		next uint64
	)
	err := s.view(ctx, func(tx *bolt.Tx) error {
		l, err := readConvLog(tx, conversationID)
		if err != nil {
			return err
		}
		next = min(watermark, l.head.seq)
		for seq := watermark + 1; seq <= l.head.seq && seq > watermark; seq++ {
			if limit > 0 && len(out) >= limit {
				return nil
			}
			v, err := l.record(seq)
			if err != nil {
				return err
			}
			s.visits.Add(1)
			next = seq
			e, ok, err := s.replayed(l, watermark, seq, v)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, e)
			}
		}
		// The end of the log is reached: next is its last seq (LastSeq).
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, next, nil
}

// replayed decides whether the record v at seq is part of history for a reader at watermark, and
// decodes it if so (see ReadAfter). vseq is the seq of the record whose content is returned.
func (s *Store) replayed(l *convLog, watermark, seq uint64, v []byte) (store.Entry, bool, error) {
	h, err := decodeHeader(v)
	if err != nil {
		return store.Entry{}, false, err
	}
	kind, vseq := h.kind, seq
	switch kind {
	case store.KindActivity:
		if h.deleted() {
			return store.Entry{}, false, nil
		}
		if h.ref != 0 {
			if vseq = h.ref; !l.has(vseq) {
				return store.Entry{}, false, errCorruptRecord
			}
			if v, err = l.record(vseq); err != nil {
				return store.Entry{}, false, err
			}
			if h, err = decodeHeader(v); err != nil {
				return store.Entry{}, false, err
			}
		}
	default:
		if h.ref > watermark {
			return store.Entry{}, false, nil // returned at the original's place
		}
		if !l.has(h.ref) {
			return store.Entry{}, false, errCorruptRecord
		}
		ov, err := l.record(h.ref)
		if err != nil {
			return store.Entry{}, false, err
		}
		oh, err := decodeHeader(ov)
		if err != nil {
			return store.Entry{}, false, err
		}
		if oh.deleted() || oh.ref != seq {
			return store.Entry{}, false, nil
		}
	}
	if h.ephemeral() {
		return store.Entry{}, false, nil
	}
	a, err := s.decodeActivity(l.id, vseq, v)
	if err != nil {
		return store.Entry{}, false, err
	}
	return store.Entry{Seq: seq, Kind: kind, Activity: a}, true, nil
}

// ReadLog returns every entry after watermark as written, at most limit (limit <= 0: no limit),
// in seq order: ephemeral entries, superseded revisions and deleted activities included, and an
// original record with the content it was first written with. For export and replay. Errors:
// store.ErrConversationNotFound, store.ErrClosed.
func (s *Store) ReadLog(ctx context.Context, conversationID string, watermark uint64, limit int) ([]store.Entry, error) {
	var out []store.Entry
	err := s.view(ctx, func(tx *bolt.Tx) error {
		l, err := readConvLog(tx, conversationID)
		if err != nil {
			return err
		}
		for seq := watermark + 1; seq <= l.head.seq && seq > watermark && (limit <= 0 || len(out) < limit); seq++ {
			v, err := l.record(seq)
			if err != nil {
				return err
			}
			e, err := s.entry(conversationID, seq, v)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}
