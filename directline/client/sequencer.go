package client

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"strconv"
	"time"

	"github.com/directline-go/directline/activity"
)

// Source says how a delivered activity reached the client.
type Source int

const (
	// SourceStream: an ActivitySet frame of the WebSocket stream.
	SourceStream Source = iota + 1
	// SourcePoll: a GET activities answer of a polling Subscription.
	SourcePoll
	// SourceFill: GET activities read to fill a hole the stream left.
	SourceFill
)

func (s Source) String() string {
	switch s {
	case SourceStream:
		return "stream"
	case SourcePoll:
		return "poll"
	case SourceFill:
		return "fill"
	}
	return "unknown"
}

// Delivery is one activity handed to the subscriber, in position order.
type Delivery struct {
	Activity *activity.Activity
	// Seq is the activity's position (see the package doc); meaningful when HasSeq.
	Seq    uint64
	HasSeq bool
	// Revision is set when the activity replaces one already delivered with the same id (an
	// updated activity); its Seq is the original one.
	Revision bool
	Source   Source
	// Received is when the activity arrived, before any wait for a hole before it.
	Received time.Time

	digest uint64
}

// EventKind classifies an Event.
type EventKind int

const (
	// EventDuplicate: an activity arrived again unchanged on the stream or in a poll (Seq, ID).
	EventDuplicate EventKind = iota + 1
	// EventOutOfOrder: an activity arrived after one with a higher position (Seq, ID).
	EventOutOfOrder
	// EventGapFilled: a position the stream skipped was read with GET activities (Seq, ID).
	EventGapFilled
	// EventGapSkipped: GET's watermark passed positions From..To without an activity there
	// (typing, revisions, deleted activities): not a loss.
	EventGapSkipped
	// EventLost: positions From..To neither arrived nor are covered by GET's watermark.
	EventLost
	// EventReconnect: the stream ended (Err) and is being reopened after the delivered
	// watermark.
	EventReconnect
	// EventError: a request or frame failed (Err); the subscription goes on.
	EventError
)

func (k EventKind) String() string {
	switch k {
	case EventDuplicate:
		return "duplicate"
	case EventOutOfOrder:
		return "out_of_order"
	case EventGapFilled:
		return "gap_filled"
	case EventGapSkipped:
		return "gap_skipped"
	case EventLost:
		return "lost"
	case EventReconnect:
		return "reconnect"
	case EventError:
		return "error"
	}
	return "unknown"
}

// Event reports something the sequence showed on its way to the subscriber.
type Event struct {
	Kind     EventKind
	Seq      uint64
	ID       string
	From, To uint64
	Err      error
	At       time.Time
}

// hashWindow is how many positions back the sequencer remembers delivered activities to tell a
// duplicate (same content) from a revision (same id, new content).
const hashWindow = 4096

type delivered struct {
	seq    uint64
	digest uint64
}

// digestSeed keys the digests of received activities.
var digestSeed = maphash.MakeSeed()

// digest identifies an activity's content by its JSON as the service sent it, so that a repeat
// can be told from a revision without encoding every activity again. An indented answer (it has
// line breaks, which compact JSON never has) is compacted first, so that an activity hashes alike
// in a compact stream frame and in an indented GET answer.
func digest(raw []byte) uint64 {
	if bytes.IndexByte(raw, '\n') >= 0 {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			raw = b.Bytes()
		}
	}
	return maphash.Bytes(digestSeed, raw)
}

// encodedDigest is the digest of an activity that came without its JSON.
func encodedDigest(a *activity.Activity) uint64 {
	b, err := activity.Encode(a)
	if err != nil {
		return 0
	}
	return digest(b)
}

// sequencer puts activities in position order. It is owned by one goroutine.
type sequencer struct {
	conversationID string
	// next is the lowest position not yet delivered or skipped.
	next uint64
	// started is false until the first positioned activity when the start is unknown: this
	// service's first position is 1, the hosted service's 0.
	started bool
	maxSeen uint64
	pending map[uint64]Delivery
	// covered holds positions above next known to hold no deliverable activity.
	covered  map[uint64]struct{}
	known    map[string]delivered
	noSeq    map[string]struct{}
	gapSince time.Time
	// late is set when the activity fed last had a position already delivered (a repeat or a
	// revision).
	late bool

	emit  func(Delivery)
	event func(Event)
	now   func() time.Time
}

func newSequencer(conversationID, watermark string, emit func(Delivery), event func(Event)) *sequencer {
	q := &sequencer{
		conversationID: conversationID,
		pending:        map[uint64]Delivery{},
		covered:        map[uint64]struct{}{},
		known:          map[string]delivered{},
		noSeq:          map[string]struct{}{},
		emit:           emit,
		event:          event,
		now:            time.Now,
	}
	if w, err := strconv.ParseUint(watermark, 10, 64); err == nil {
		q.next, q.maxSeen, q.started = w+1, w, true
	}
	return q
}

// position returns a's position: its webchat:sequence-id, else the sequence part of a
// "<conversationId>|<digits>" id.
func (q *sequencer) position(a *activity.Activity) (uint64, bool) {
	if s, ok := a.SequenceID(); ok {
		return s, true
	}
	conv, s, err := activity.ParseID(a.ID)
	if err == nil && conv == q.conversationID {
		return s, true
	}
	return 0, false
}

// gapOpen reports whether positions are missing below something already received.
func (q *sequencer) gapOpen() bool { return len(q.pending) > 0 || len(q.covered) > 0 }

// feed takes one arriving activity and the digest of its content. Activities from a gap fill
// never count as duplicates or out of order: overlapping what the stream sent is expected there.
func (q *sequencer) feed(a *activity.Activity, digest uint64, src Source, at time.Time) {
	d := Delivery{Activity: a, Source: src, Received: at, digest: digest}
	q.late = false
	s, ok := q.position(a)
	if !ok {
		if _, dup := q.noSeq[a.ID]; dup && a.ID != "" {
			q.report(src, Event{Kind: EventDuplicate, ID: a.ID})
			return
		}
		if a.ID != "" {
			q.noSeq[a.ID] = struct{}{}
		}
		q.emit(d)
		return
	}
	d.Seq, d.HasSeq = s, true
	if !q.started {
		q.started = true
		// The first position seen on a stream without watermark is 0 or 1; a later 0 is late.
		if s == 1 && q.next == 0 {
			q.next = 1
		}
	}
	p, isPending := q.pending[s]
	q.late = s < q.next
	if s < q.next || isPending {
		prev, known := q.known[a.ID]
		if isPending {
			prev, known = delivered{seq: s, digest: p.digest}, p.Activity.ID == a.ID
		}
		if known && prev.digest != digest {
			if isPending {
				q.pending[s] = d
				return
			}
			d.Revision = true
			q.known[a.ID] = delivered{seq: s, digest: digest}
			q.emit(d)
			return
		}
		q.report(src, Event{Kind: EventDuplicate, Seq: s, ID: a.ID})
		return
	}
	if s < q.maxSeen && src != SourceFill {
		q.event(Event{Kind: EventOutOfOrder, Seq: s, ID: a.ID, At: q.now()})
	}
	if src == SourceFill {
		q.event(Event{Kind: EventGapFilled, Seq: s, ID: a.ID, At: q.now()})
	}
	q.maxSeen = max(q.maxSeen, s)
	delete(q.covered, s)
	q.pending[s] = d
	q.advance()
}

func (q *sequencer) report(src Source, e Event) {
	if src == SourceFill {
		return
	}
	e.At = q.now()
	q.event(e)
}

// frameEnd applies the stream's frame watermark w: the frame's last entry sits at position w.
// When the last activity, just fed, is a revision of one already delivered (its own position is
// lower), the position w holds that revision entry and is accounted for. A new activity below w
// means the entry at w did not arrive (the stream dropped it): that hole stays for GET to fill.
func (q *sequencer) frameEnd(last *activity.Activity, w uint64) {
	s, ok := q.position(last)
	if !ok || s >= w || w < q.next || !q.late {
		return
	}
	if _, known := q.known[last.ID]; !known {
		return
	}
	if _, isPending := q.pending[w]; !isPending {
		q.covered[w] = struct{}{}
		q.maxSeen = max(q.maxSeen, w)
	}
	q.advance()
}

// coverTo applies a GET answer's watermark w: every position up to w (but not past limit) that
// holds nothing pending is a legitimate skip.
func (q *sequencer) coverTo(w, limit uint64) {
	w = min(w, limit)
	if !q.started {
		// An answer without activities says nothing about position 0, which this service
		// never uses.
		q.started = true
		q.next = max(q.next, 1)
	}
	from := q.next
	for q.next <= w {
		if _, ok := q.pending[q.next]; ok {
			q.skipped(from, q.next)
			q.advance()
			from = q.next
			continue
		}
		delete(q.covered, q.next)
		q.next++
	}
	q.skipped(from, q.next)
	q.advance()
}

// skipped reports positions from..to-1 as skipped when the range is not empty.
func (q *sequencer) skipped(from, to uint64) {
	if to > from {
		q.event(Event{Kind: EventGapSkipped, From: from, To: to - 1, At: q.now()})
	}
}

// giveUp reports every hole below the highest position received as lost and delivers what
// waits behind them.
func (q *sequencer) giveUp() {
	for q.gapOpen() {
		from := q.next
		for {
			_, p := q.pending[q.next]
			_, c := q.covered[q.next]
			if p || c {
				break
			}
			q.next++
		}
		if q.next > from {
			q.event(Event{Kind: EventLost, From: from, To: q.next - 1, At: q.now()})
		}
		q.advance()
	}
}

// advance delivers pending activities from next on and steps over covered positions.
func (q *sequencer) advance() {
	for {
		if d, ok := q.pending[q.next]; ok {
			delete(q.pending, q.next)
			q.remember(d)
			q.emit(d)
			q.next++
			continue
		}
		if _, ok := q.covered[q.next]; ok {
			delete(q.covered, q.next)
			q.next++
			continue
		}
		break
	}
	switch {
	case !q.gapOpen():
		q.gapSince = time.Time{}
	case q.gapSince.IsZero():
		q.gapSince = q.now()
	}
}

func (q *sequencer) remember(d Delivery) {
	q.known[d.Activity.ID] = delivered{seq: d.Seq, digest: d.digest}
	if len(q.known) > 2*hashWindow {
		for id, k := range q.known {
			if k.seq+hashWindow < q.next {
				delete(q.known, id)
			}
		}
	}
}

// resume forgets what waits behind a hole: a reopened stream replays from next on.
func (q *sequencer) resume() {
	clear(q.pending)
	clear(q.covered)
	q.gapSince = time.Time{}
	if q.next > 0 {
		q.maxSeen = q.next - 1
	} else {
		q.maxSeen = 0
	}
}

// watermark is the position to resume after ("" when nothing is known yet).
func (q *sequencer) watermark() string {
	if !q.started || q.next == 0 {
		return ""
	}
	return strconv.FormatUint(q.next-1, 10)
}

// highest is the highest position received on the stream (the limit a gap fill reads to).
func (q *sequencer) highest() uint64 {
	h := q.next
	for s := range q.pending {
		h = max(h, s)
	}
	for s := range q.covered {
		h = max(h, s)
	}
	return h
}
