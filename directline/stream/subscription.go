package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// Errors ending a subscription; Subscription.Next returns them (history read failures are wrapped
// in a *HistoryError).
var (
	// ErrSlowConsumer: more than Options.QueueSize entries were waiting; resume from the last
	// watermark received.
	ErrSlowConsumer = errors.New("stream: slow consumer, resume from the last watermark")
	// ErrShutdown: the hub is shutting down; resume from the last watermark elsewhere or later.
	ErrShutdown = errors.New("stream: hub shut down")
	// ErrTokenExpired: the credential the stream was opened with expired.
	ErrTokenExpired = errors.New("stream: token expired")
	// ErrClosed: the subscription was closed by its owner.
	ErrClosed = errors.New("stream: subscription closed")
)

// HistoryError is a failed History.ReadAfter; the subscription ends with it.
type HistoryError struct{ Err error }

func (e *HistoryError) Error() string { return "stream: read history: " + e.Err.Error() }
func (e *HistoryError) Unwrap() error { return e.Err }

// Frame is one ActivitySet: stamped activities in seq order and the seq of the last one.
type Frame struct {
	// Activities are the activities' JSON as activity.Encode wrote them.
	Activities []json.RawMessage
	// Watermark is the seq of the frame's last entry; a client holding this frame resumes from it.
	Watermark uint64
}

// MarshalJSON writes the Direct Line 3.0 ActivitySet {"activities":[...],"watermark":"N"}.
func (f Frame) MarshalJSON() ([]byte, error) {
	b := []byte(`{"activities":[`)
	for i, a := range f.Activities {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, a...)
	}
	b = append(b, `],"watermark":"`...)
	b = strconv.AppendUint(b, f.Watermark, 10)
	return append(b, `"}`...), nil
}

// Subscription is one subscriber of a conversation, independent of its transport. The hub queues
// live entries on it from the moment it is created; the consumer pulls frames, history first.
// Next must not be called from two goroutines at once.
type Subscription struct {
	hub            *Hub
	conversationID string
	// wake is called, without locks held, whenever entries are queued or the subscription ends.
	wake func()
	// notify carries wake-ups to Next (Subscribe only).
	notify chan struct{}

	mu    sync.Mutex
	queue []*item // live entries in seq order, not yet taken; at most hub.opts.QueueSize
	first uint64  // seq of the first live entry ever queued; 0 until one arrives
	err   error   // why the subscription ended; nil while open

	// Owned by the consumer (one Next or one writer goroutine at a time).
	replayed bool    // history has been read to its end
	readFrom uint64  // watermark for the next ReadAfter
	covered  uint64  // highest seq history has looked at
	lastSent uint64  // seq of the last entry handed out (or the starting watermark)
	ready    []*item // history entries read but not yet handed out
}

func newSubscription(h *Hub, conversationID string, watermark uint64, hasWatermark bool) *Subscription {
	if !hasWatermark {
		watermark = 0
	}
	return &Subscription{
		hub:            h,
		conversationID: conversationID,
		readFrom:       watermark,
		covered:        watermark,
		lastSent:       watermark,
	}
}

func (s *Subscription) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// ConversationID returns the conversation the subscription follows.
func (s *Subscription) ConversationID() string { return s.conversationID }

// Next returns the next frame: history after the starting watermark first, then live entries. It
// blocks until a frame is ready, ctx ends (ctx's error) or the subscription ends (ErrSlowConsumer,
// ErrShutdown, ErrTokenExpired, ErrClosed or a *HistoryError).
func (s *Subscription) Next(ctx context.Context) (Frame, error) {
	for {
		items, err := s.take(ctx)
		if err != nil {
			return Frame{}, err
		}
		if len(items) > 0 {
			f := Frame{Activities: make([]json.RawMessage, len(items)), Watermark: items[len(items)-1].seq}
			for i, it := range items {
				f.Activities[i] = it.json
			}
			return f, nil
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return Frame{}, ctx.Err()
		}
	}
}

// Close ends the subscription; a pending or later Next returns ErrClosed. It is safe to call more
// than once and from any goroutine.
func (s *Subscription) Close() { s.end(ErrClosed) }

// end unregisters s and ends it with err unless it already ended.
func (s *Subscription) end(err error) {
	s.hub.unregister(s)
	s.fail(err)
}

// fail ends s with err unless it already ended; the caller removes it from its shard.
func (s *Subscription) fail(err error) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	s.err = err
	s.queue = nil
	s.mu.Unlock()
	s.wake()
}

// push queues live entries. It reports false when s has ended (now or before) so the caller
// drops it from its shard; the caller holds the shard lock.
func (s *Subscription) push(items []*item) bool {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return false
	}
	if len(s.queue)+len(items) > s.hub.opts.QueueSize {
		s.err = ErrSlowConsumer
		s.queue = nil
		s.mu.Unlock()
		s.hub.obs.SlowConsumer()
		s.hub.log.Warn("stream: slow consumer disconnected", "conversation", s.conversationID, "cause", "queue full")
		s.wake()
		return false
	}
	if s.first == 0 {
		s.first = items[0].seq
	}
	s.queue = append(s.queue, items...)
	s.mu.Unlock()
	s.wake()
	return true
}

// take returns the next batch for one frame, or none when nothing is ready.
//
// Live entries are queued from registration on, every one of them in seq order from the first
// (seq F). History is read page by page until a page is empty or reaches F: entries below F come
// from history, entries from F on from the queue, so ephemeral entries committed after
// registration are not lost to a history read that skipped them. Queued entries at or below the
// last seq handed out are dropped (history sent them: their commit hook ran after registration
// but before the read), and so are non-ephemeral ones that history looked at without returning
// (superseded revisions, deleted activities).
func (s *Subscription) take(ctx context.Context) ([]*item, error) {
	for {
		s.mu.Lock()
		err := s.err
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if len(s.ready) > 0 {
			return s.cut(&s.ready), nil
		}
		if s.replayed {
			break
		}
		if err := s.readHistory(ctx); err != nil {
			return nil, err
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	if len(s.queue) == 0 {
		s.queue = nil
		return nil, nil
	}
	return s.cut(&s.queue), nil
}

// readHistory reads one page of history into ready, or marks the replay done.
func (s *Subscription) readHistory(ctx context.Context) error {
	entries, wm, err := s.hub.history.ReadAfter(ctx, s.conversationID, s.readFrom, historyPage)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		herr := &HistoryError{Err: err}
		s.end(herr)
		return herr
	}
	s.mu.Lock()
	first := s.first
	s.mu.Unlock()
	if first != 0 {
		wm = min(wm, first-1)
	}
	s.covered = max(s.covered, wm)
	if len(entries) == 0 {
		s.replayed = true
		return nil
	}
	last := s.lastSent
	for _, e := range entries {
		if first != 0 && e.Seq >= first {
			s.replayed = true
			break
		}
		if e.Seq <= last {
			continue
		}
		it, err := newItem(e)
		if err != nil {
			herr := &HistoryError{Err: fmt.Errorf("encode seq %d: %w", e.Seq, err)}
			s.end(herr)
			return herr
		}
		s.ready = append(s.ready, it)
		last = e.Seq
	}
	next := max(s.readFrom, wm, last)
	if next == s.readFrom {
		// A page that does not move the watermark would be read again forever.
		s.replayed = true
	}
	s.readFrom = next
	s.prune()
	return nil
}

// prune drops queued live entries that history already delivered or covered, so a long replay
// does not fill the queue.
func (s *Subscription) prune() {
	s.mu.Lock()
	s.pruneLocked()
	s.mu.Unlock()
}

func (s *Subscription) pruneLocked() {
	last := s.lastSent
	if n := len(s.ready); n > 0 {
		last = s.ready[n-1].seq
	}
	kept := s.queue[:0]
	for _, it := range s.queue {
		if it.seq <= last || (!it.ephemeral && it.seq <= s.covered) {
			continue
		}
		kept = append(kept, it)
	}
	clear(s.queue[len(kept):])
	s.queue = kept
}

// cut removes one frame's worth of items from the front of *q and records them as sent.
func (s *Subscription) cut(q *[]*item) []*item {
	items := *q
	n, size := 0, 0
	for n < len(items) && n < maxFrameActivities && (n == 0 || size+len(items[n].json) <= maxFrameBytes) {
		size += len(items[n].json)
		n++
	}
	out := make([]*item, n)
	copy(out, items[:n])
	clear(items[:n])
	if n == len(items) {
		*q = nil
	} else {
		*q = items[n:]
	}
	s.lastSent = out[n-1].seq
	return out
}
