package sortkeys

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/directline-go/directline/activity"
)

// engine is one generation's reducer.
type engine interface {
	incoming(r *record)
	post(r *record)
	fulfilled(cid string, echo *record)
	delete(id string)
	each(f func(*record) bool)
}

type state struct {
	opts   Options
	eng    engine
	c      *genC // non-nil for gen-c
	events int
	revs   int
	// echoed maps a clientActivityID to the echo an incoming event already delivered.
	echoed map[string]json.RawMessage
	// Reply hold.
	now      float64
	held     []*heldActivity
	ids      map[string]bool // ids of delivered activities
	replyTos map[string]bool // replyToIds of delivered activities
	bots     int
	// Keys walk.
	walk *keyWalk
	// mem allocates decoded revisions.
	mem decodeArenas
}

type heldActivity struct {
	rec      *record
	deadline float64
}

func newReplay(opts Options) *Replay {
	return newReplayWith(opts, func() unitList { return newBtreeList() })
}

func newReplayWith(opts Options, newList func() unitList) *Replay {
	if opts.Profile == "" {
		opts.Profile = GenC
	}
	st := &state{opts: opts, echoed: map[string]json.RawMessage{}, ids: map[string]bool{},
		replyTos: map[string]bool{}, walk: newKeyWalk()}
	switch opts.Profile {
	case GenA:
		st.eng = newGenAB(newList(), false)
	case GenB:
		st.eng = newGenAB(newList(), true)
	default:
		st.c = newGenC(newList())
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
	if st.opts.ReplyHold && ev.At != nil && *ev.At > st.now {
		st.now = *ev.At
		st.releaseExpired(index)
	}
	switch ev.Op {
	case OpIncoming:
		if st.opts.ReplyHold && st.mustHold(rec) {
			rec.detach()
			st.held = append(st.held, &heldActivity{rec: rec, deadline: st.now + ReplyHoldTimeout})
			return nil
		}
		st.deliver(rec)
	case OpPost:
		// This send's saga waits for an echo delivered from now on: one that completed an
		// earlier send under the same clientActivityID is not this one's.
		delete(st.echoed, rec.cid())
		st.eng.post(rec)
		st.track(rec)
		rec.release()
	case OpFulfilled:
		if _, seen := st.echoed[ev.ClientActivityID]; !seen {
			first := st.mem.records.alloc()
			*first = *rec
			st.deliver(first)
			rec.rev = st.nextRev()
		}
		st.eng.fulfilled(ev.ClientActivityID, rec)
		rec.release()
	case OpDelete:
		st.eng.delete(ev.ActivityID)
	}
	if st.opts.ReplyHold {
		st.releaseSatisfied(index)
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
		st.c.sessionIDs.prefetch(rec.ls.SessionID)
	}
	rec.arrival = int32(index)
	rec.rev = st.nextRev()
	return rec, nil
}

// deliver is DIRECT_LINE/INCOMING_ACTIVITY.
func (st *state) deliver(rec *record) {
	st.eng.incoming(rec)
	st.track(rec)
	rec.release()
	if rec.cid() != "" && rec.id() != "" {
		if _, seen := st.echoed[rec.cid()]; !seen {
			st.echoed[rec.cid()] = rec.raw
		}
	}
}

// track notes what the reply hold waits for.
func (st *state) track(rec *record) {
	if !st.opts.ReplyHold {
		return
	}
	if rec.id() != "" {
		st.ids[rec.id()] = true
	}
	if rec.replyToID() != "" {
		st.replyTos[rec.replyToID()] = true
	}
	if rec.role() == activity.RoleBot {
		st.bots++
	}
}

// mustHold: Web Chat holds an activity whose replyToId names an activity it has not seen, once at
// least one bot activity is in the store, unless another delivered activity already replies to
// the same id (queueIncomingActivitySaga.ts).
func (st *state) mustHold(rec *record) bool {
	rt := rec.replyToID()
	return rt != "" && st.bots > 0 && !st.ids[rt] && !st.replyTos[rt]
}

// releaseSatisfied delivers held activities whose awaited activity has arrived, in hold order,
// until nothing more changes.
func (st *state) releaseSatisfied(index int) {
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(st.held); i++ {
			h := st.held[i]
			rt := h.rec.replyToID()
			if st.ids[rt] || st.replyTos[rt] {
				st.held = append(st.held[:i], st.held[i+1:]...)
				h.rec.arrival = int32(index)
				st.deliver(h.rec)
				changed = true
				break
			}
		}
	}
}

// releaseExpired delivers, in deadline order, the held activities whose 5 s hold is over.
func (st *state) releaseExpired(index int) {
	for {
		best := -1
		for i, h := range st.held {
			if h.deadline <= st.now && (best < 0 || h.deadline < st.held[best].deadline) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		h := st.held[best]
		st.held = append(st.held[:best], st.held[best+1:]...)
		h.rec.arrival = int32(index)
		st.deliver(h.rec)
		st.releaseSatisfied(index)
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
		out = append(out, rec.item())
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
