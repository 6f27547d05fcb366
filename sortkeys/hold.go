package sortkeys

import (
	"slices"

	"github.com/directline-go/directline/activity"
)

// replyHold is Web Chat's hold of incoming activities (queueIncomingActivitySaga.ts in
// botframework-webchat-core), with Options.ReplyHold.
//
// Every incoming activity first comes through the saga. It is held when its replyToId is truthy,
// state.activities holds a bot activity, and no activity there has that id or replies to it.
// A held activity then waits for each INCOMING_ACTIVITY: it goes on when that activity's id is
// its replyToId or when state.activities, as it is right then, has one that is or replies to it;
// after ReplyHoldTimeout it goes on anyway. Only INCOMING_ACTIVITY wakes the waits: a post or a
// delete changes what the next wake sees, nothing more. The activities one INCOMING_ACTIVITY
// lets go are dispatched after it, in the order their waits began, each waking the waits in turn
// (redux-saga queues a put made while another is dispatched), so releases spread breadth first.
//
// Whether a wait can go on depends only on its replyToId, so waits are grouped by it, and each
// INCOMING_ACTIVITY looks only at the keys that state.activities gained since the last one: a
// replay with many held activities costs no more per event than one with few.
type replyHold struct {
	// waits are the held activities in the order their waits began, which is also their
	// deadlines' order; done ones are skipped.
	waits []*wait
	next  int
	// byKey groups the waits on one replyToId key (replyKey), in the same order.
	byKey map[string][]*wait
	// inTransit counts, by clientActivityID, the held activities that a post saga would take
	// as its echo (they have an id); awaiting are the clientActivityIDs whose fulfilled event
	// waits for such an echo to be delivered.
	inTransit map[string]int
	awaiting  map[string]bool
	// What state.activities holds now: how many activities have each id key and each replyToId
	// key, and how many are from the bot.
	ids, replies map[string]int
	bots         int
	// began counts the waits begun, numbering them.
	began int
	// gained are the keys ids or replies went up for since the last INCOMING_ACTIVITY.
	gained []string
}

// A wait is one held activity.
type wait struct {
	rec      *record
	key      string
	deadline float64
	seq      int
	done     bool
}

func newReplyHold() *replyHold {
	return &replyHold{byKey: map[string][]*wait{}, inTransit: map[string]int{},
		awaiting: map[string]bool{}, ids: map[string]int{}, replies: map[string]int{}}
}

// stored follows state.activities: r entered it (add) or left it. The engines call it whenever
// an activity is stored, replaced or deleted.
func (h *replyHold) stored(r *record, add bool) {
	d := -1
	if add {
		d = 1
	}
	if k := r.idKey(); k != "" {
		h.count(h.ids, k, d)
	}
	if k, _ := r.replyKey(); k != "" {
		h.count(h.replies, k, d)
	}
	if r.role() == activity.RoleBot {
		h.bots += d
	}
}

func (h *replyHold) count(m map[string]int, k string, d int) {
	if m[k] += d; m[k] <= 0 {
		delete(m, k)
	} else if d > 0 {
		h.gained = append(h.gained, k)
	}
}

func (h *replyHold) has(k string) bool { return h.ids[k] > 0 || h.replies[k] > 0 }

// mustHold says whether the saga holds r (QUEUE_INCOMING_ACTIVITY).
func (h *replyHold) mustHold(r *record) bool {
	k, truthy := r.replyKey()
	return truthy && h.bots > 0 && (k == "" || !h.has(k))
}

// hold starts r's wait.
func (h *replyHold) hold(r *record, now float64) {
	h.began++
	k, _ := r.replyKey()
	w := &wait{rec: r, key: k, deadline: now + ReplyHoldTimeout, seq: h.began}
	h.waits = append(h.waits, w)
	if k != "" {
		h.byKey[k] = append(h.byKey[k], w)
	}
	if cid := r.cid(); cid != "" && r.id() != "" {
		h.inTransit[cid]++
	}
}

// woken appends to next, in the order their waits began, the held activities that the
// INCOMING_ACTIVITY of r, already in state.activities, lets go.
func (h *replyHold) woken(r *record, next []*record) []*record {
	keys := h.gained
	if k := r.idKey(); k != "" {
		keys = append(keys, k)
	}
	var out []*wait
	for _, k := range keys {
		ws := h.byKey[k]
		if len(ws) == 0 || (k != r.idKey() && !h.has(k)) {
			continue
		}
		delete(h.byKey, k)
		out = append(out, ws...)
	}
	h.gained = h.gained[:0]
	if len(out) > 1 {
		slices.SortFunc(out, func(a, b *wait) int { return a.seq - b.seq })
	}
	for _, w := range out {
		h.end(w)
		next = append(next, w.rec)
	}
	return next
}

// expired ends and returns the earliest held activity whose deadline is not after now, if any.
func (h *replyHold) expired(now float64) *record {
	// Drop the finished prefix now and then, so that the slice does not keep every wait ever
	// begun.
	if h.next > 1024 && h.next*2 > len(h.waits) {
		h.waits = append(h.waits[:0], h.waits[h.next:]...)
		h.next = 0
	}
	for ; h.next < len(h.waits); h.next++ {
		w := h.waits[h.next]
		if w.done {
			continue
		}
		if w.deadline > now {
			return nil
		}
		// Deadlines follow the order the waits began, so w is first in its group.
		if ws := h.byKey[w.key]; len(ws) > 0 && ws[0] == w {
			if len(ws) == 1 {
				delete(h.byKey, w.key)
			} else {
				h.byKey[w.key] = ws[1:]
			}
		}
		h.end(w)
		h.next++
		return w.rec
	}
	return nil
}

func (h *replyHold) end(w *wait) {
	w.done = true
	if cid := w.rec.cid(); cid != "" && w.rec.id() != "" {
		if h.inTransit[cid]--; h.inTransit[cid] == 0 {
			delete(h.inTransit, cid)
		}
	}
}
