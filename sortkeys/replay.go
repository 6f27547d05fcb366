package sortkeys

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// engine is one generation's reducer.
type engine interface {
	incoming(r *record)
	post(r *record)
	fulfilled(cid string, echo *record)
	delete(id string)
	each(f func(*record) bool)
	// unitID is the id of the sorting unit r's unitPrefix and unitIdx name ("" for unitNone).
	unitID(r *record) string
}

type state struct {
	opts   Options
	eng    engine
	c      *genC // non-nil for gen-c
	events int
	revs   int
	// echoed maps a clientActivityID to the echo an incoming event already delivered.
	echoed map[string]json.RawMessage
	// Reply hold (nil without Options.ReplyHold) and its simulated clock.
	hold *replyHold
	now  float64
	// Keys walk.
	walk *keyWalk
	// mem allocates decoded revisions.
	mem decodeArenas
}

func newReplay(opts Options) *Replay {
	return newReplayWith(opts, func() unitList { return newBtreeList() })
}

func newReplayWith(opts Options, newList func() unitList) *Replay {
	if opts.Profile == "" {
		opts.Profile = GenC
	}
	st := &state{opts: opts, echoed: map[string]json.RawMessage{}, walk: newKeyWalk()}
	var stored func(r *record, add bool)
	if opts.ReplyHold {
		st.hold = newReplyHold()
		stored = st.hold.stored
	}
	switch opts.Profile {
	case GenA, GenB:
		ab := newGenAB(newList(), opts.Profile == GenB)
		ab.stored = stored
		st.eng = ab
	default:
		st.c = newGenC(newList())
		st.c.stored = stored
		st.eng = st.c
		st.mem.idsRead = st.c.prefetch
	}
	return &Replay{st: st}
}

// ErrUnknownOp is returned by Apply for an op it does not know.
var ErrUnknownOp = errors.New("sortkeys: unknown op")

// ErrLogTooLong is returned by Apply, which applies nothing more, once the replay has applied
// math.MaxInt32 events or made nearly as many revisions: a record numbers them in 32 bits.
var ErrLogTooLong = errors.New("sortkeys: too many events for one replay")

func (r *Replay) apply(ev Event) error {
	st := r.st
	// An event makes at most two revisions, and there are no more local ids than revisions.
	if st.events == math.MaxInt32 || st.revs > math.MaxInt32-2 {
		return ErrLogTooLong
	}
	index := st.events
	st.events++
	var rec *record
	switch ev.Op {
	case OpIncoming, OpPost:
		var err error
		if rec, err = st.decode(ev.Activity, index, ev.Op == OpPost); err != nil {
			return err
		}
	case OpFulfilled:
		if ev.ClientActivityID == "" {
			return errors.New("sortkeys: fulfilled event without clientActivityID")
		}
		if st.hold != nil && st.hold.inTransit[ev.ClientActivityID] > 0 {
			break // an echo is held: the send completes when one is delivered
		}
		// Web Chat's post saga completes the send with the first activity delivered with its
		// clientActivityID and an id, whatever the event carries (conformance README,
		// "fulfilled").
		raw, seen := st.echoed[ev.ClientActivityID]
		if !seen {
			raw = ev.Activity
		}
		if len(raw) == 0 {
			return errors.New("sortkeys: fulfilled event without an echo activity")
		}
		var err error
		if rec, err = st.decode(raw, index, false); err != nil {
			return err
		}
	case OpDelete:
		if ev.ActivityID == "" {
			return errors.New("sortkeys: delete event without activityID")
		}
	case OpAdvance:
	default:
		return fmt.Errorf("%w %q", ErrUnknownOp, ev.Op)
	}
	if st.hold != nil && ev.At != nil && *ev.At > st.now {
		st.now = *ev.At
		st.expire(index)
	}
	switch ev.Op {
	case OpIncoming:
		st.queue(rec, index)
	case OpPost:
		// This send's saga waits for an echo delivered from now on: one that completed an
		// earlier send under the same clientActivityID is not this one's.
		delete(st.echoed, rec.cid())
		st.eng.post(rec)
		rec.release()
	case OpFulfilled:
		cid := ev.ClientActivityID
		_, seen := st.echoed[cid]
		switch {
		case seen:
			if rec == nil {
				// The held echo was delivered as the clock moved on.
				var err error
				if rec, err = st.decode(st.echoed[cid], index, false); err != nil {
					return err
				}
			}
			st.eng.fulfilled(cid, rec)
			rec.release()
		case st.hold == nil:
			// Web Chat delivers the echo first.
			first := st.mem.records.alloc()
			*first = *rec
			rec.rev = st.nextRev()
			st.deliver(first)
			st.eng.fulfilled(cid, rec)
			rec.release()
		default:
			// The post saga completes the send with the first echo delivered from now on; this
			// one comes through the hold, unless one is held already.
			st.hold.awaiting[cid] = true
			if rec != nil {
				st.queue(rec, index)
			}
		}
	case OpDelete:
		st.eng.delete(ev.ActivityID)
	}
	if st.opts.ScreenHistory {
		st.walk.run(st.uiList())
	}
	return nil
}

func (st *state) nextRev() int32 {
	st.revs++
	return int32(st.revs)
}

// decode reads the activity of an event; post says it is a post's, which Web Chat does not
// normalise as it does incoming activities (nulls stay).
func (st *state) decode(raw json.RawMessage, index int, post bool) (*record, error) {
	rec, err := decodeRecord(raw, st.opts.UserID, &st.mem, post)
	if err != nil {
		return nil, err
	}
	if st.c != nil && rec.ls != nil {
		st.c.sessionIDs.prefetch(rec.ls.sessionID)
	}
	rec.arrival = int32(index)
	rec.rev = st.nextRev()
	return rec, nil
}

// deliver is DIRECT_LINE/INCOMING_ACTIVITY, followed by POST_ACTIVITY_FULFILLED when rec is the
// echo a send waits for under Options.ReplyHold.
func (st *state) deliver(rec *record) {
	cid := rec.cid()
	echo := cid != "" && rec.id() != ""
	if echo {
		_, seen := st.echoed[cid]
		echo = !seen
	}
	var fulfil *record
	if echo && st.hold != nil && st.hold.awaiting[cid] {
		delete(st.hold.awaiting, cid)
		fulfil = st.mem.records.alloc()
		*fulfil = *rec
		fulfil.rev = st.nextRev()
	}
	st.eng.incoming(rec)
	rec.release()
	if echo {
		st.echoed[cid] = rec.raw()
	}
	if fulfil != nil {
		st.eng.fulfilled(cid, fulfil)
		fulfil.release()
	}
}

// queue is QUEUE_INCOMING_ACTIVITY: rec is delivered, or held under Options.ReplyHold.
func (st *state) queue(rec *record, index int) {
	switch {
	case st.hold == nil:
		st.deliver(rec)
	case st.hold.mustHold(rec):
		rec.detach()
		st.hold.hold(rec, st.now)
	default:
		st.release(rec, index)
	}
}

// release delivers rec and then the held activities that this lets go, breadth first (see
// replyHold).
func (st *state) release(rec *record, index int) {
	next := []*record{rec}
	for i := 0; i < len(next); i++ {
		next[i].arrival = int32(index)
		st.deliver(next[i])
		next = st.hold.woken(next[i], next)
	}
}

// expire delivers, in deadline order, the held activities whose wait is over at st.now.
func (st *state) expire(index int) {
	for r := st.hold.expired(st.now); r != nil; r = st.hold.expired(st.now) {
		st.release(r, index)
	}
}

func (st *state) uiList() []*record {
	if st.c != nil {
		return st.c.uiList()
	}
	var out []*record
	st.eng.each(func(r *record) bool {
		out = append(out, r)
		return true
	})
	return out
}

func (r *Replay) order() []Item {
	// Sized first: a log's order can be a hundred megabytes, and growing it by doubling would
	// touch about twice that in fresh memory.
	out := make([]Item, 0, r.length())
	r.st.eng.each(func(rec *record) bool {
		out = append(out, rec.item(r.st.eng.unitID(rec)))
		return true
	})
	return out
}

func (r *Replay) names() []string {
	out := []string{}
	r.st.eng.each(func(rec *record) bool {
		out = append(out, rec.name())
		return true
	})
	return out
}

func (r *Replay) length() int {
	n := 0
	r.st.eng.each(func(*record) bool {
		n++
		return true
	})
	return n
}

func (r *Replay) screen() []Bubble {
	st := r.st
	ui := st.uiList()
	if !st.opts.ScreenHistory {
		st.walk.run(ui)
	}
	return st.walk.bubbles(ui)
}

func loadVector(path string) (*Vector, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v Vector
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("sortkeys: %s: %w", path, err)
	}
	if _, err := ParseProfile(v.Profile); err != nil {
		return nil, fmt.Errorf("sortkeys: %s: %w", path, err)
	}
	if want := strings.TrimSuffix(filepath.Base(path), ".json"); v.Name != want {
		return nil, fmt.Errorf("sortkeys: %s: name %q does not match the file name", path, v.Name)
	}
	for i, ev := range v.Events {
		switch ev.Op {
		case OpIncoming, OpPost, OpFulfilled, OpDelete, OpAdvance:
		case OpExpect:
			if ev.Order == nil {
				return nil, fmt.Errorf("sortkeys: %s: event %d: expect without order", path, i)
			}
		default:
			return nil, fmt.Errorf("sortkeys: %s: event %d: %w %q", path, i, ErrUnknownOp, ev.Op)
		}
	}
	return &v, nil
}
