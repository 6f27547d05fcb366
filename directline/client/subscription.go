package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/directline-go/directline/activity"
)

// Transport is how a Subscription receives activities.
type Transport int

const (
	// WebSocket reads the conversation's stream (Direct Line 3.0: Receive activities via
	// WebSocket stream), reconnecting with the delivered watermark when it drops.
	WebSocket Transport = iota
	// Polling repeats GET activities every Options.PollInterval.
	Polling
)

func (t Transport) String() string {
	if t == Polling {
		return "poll"
	}
	return "ws"
}

// SubscribeOptions configure a Subscription.
type SubscribeOptions struct {
	Transport Transport
	// Watermark resumes after a position the caller already has; "" = from the start.
	Watermark string
	// OnEvent, when set, receives every Event, from the Subscription's goroutine, in order with
	// the deliveries. It must not block.
	OnEvent func(Event)
	// Sparse decodes of each received activity only what ordering and matching it to what was
	// posted need: type, id, timestamp, replyToId, from (id, name, role) and, of channelData,
	// webchat:sequence-id and clientActivityID; every other member is left unset and unchecked.
	// Duplicates are still told from revisions by the whole activity as received. For load
	// generators and monitors, which would otherwise spend most of their time decoding.
	Sparse bool
}

// Subscription delivers a conversation's activities in position order on C until Close, the
// context ends or the service refuses to go on.
type Subscription struct {
	// C receives the activities; it is closed when the Subscription ends.
	C <-chan Delivery

	out     chan Delivery
	conv    *Conversation
	token   string
	opts    SubscribeOptions
	seq     *sequencer
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
	mu      sync.Mutex
	ws      *websocket.Conn
	lastWM  string
	delayed []Delivery
}

// Subscribe starts receiving. With WebSocket it opens the stream before returning (the
// conversation's StreamURL when no watermark is given, else a fresh one from GET
// /conversations/{id}); errors are the dial's or *Error.
func (c *Conversation) Subscribe(ctx context.Context, o SubscribeOptions) (*Subscription, error) {
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan Delivery, 64)
	s := &Subscription{C: out, out: out, conv: c, token: c.Token, opts: o, ctx: ctx, cancel: cancel, done: make(chan struct{}), lastWM: o.Watermark}
	s.seq = newSequencer(c.ID, o.Watermark, s.queue, s.event)
	if o.Transport == WebSocket {
		err := errors.New("no streamUrl yet")
		if c.StreamURL != "" && o.Watermark == "" {
			err = s.dial(c.StreamURL)
		}
		if err != nil {
			// The start answer's streamUrl is only good for 60 s (Direct Line 3.0); a fresh one
			// comes from GET /conversations/{id}.
			cv, rerr := c.c.Reconnect(ctx, c.ID, o.Watermark, c.Token)
			switch {
			case rerr != nil:
				err = rerr
			case cv.StreamURL == "":
				err = errors.New("client: the service gave no streamUrl; use Polling")
			default:
				s.token = cv.Token
				err = s.dial(cv.StreamURL)
			}
		}
		if err != nil {
			cancel()
			return nil, err
		}
		go s.runStream()
	} else {
		go s.runPoll()
	}
	return s, nil
}

// Close ends the Subscription and waits until C is closed. It returns nil.
func (s *Subscription) Close() error {
	s.cancel()
	s.mu.Lock()
	if s.ws != nil {
		s.ws.Close()
	}
	s.mu.Unlock()
	<-s.done
	return nil
}

// Err says why the Subscription ended once C is closed: nil after Close or the end of the
// context, else the error that stopped it (*Error for a refused reconnect or poll).
func (s *Subscription) Err() error {
	<-s.done
	return s.err
}

// Done is closed when the Subscription has ended.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// queue collects the sequencer's deliveries; flush hands them to C.
func (s *Subscription) queue(d Delivery) { s.delayed = append(s.delayed, d) }

func (s *Subscription) event(e Event) {
	if s.opts.OnEvent != nil {
		s.opts.OnEvent(e)
	}
}

// flush sends the queued deliveries; false when the Subscription was closed meanwhile.
func (s *Subscription) flush() bool {
	for i, d := range s.delayed {
		select {
		case s.out <- d:
		case <-s.ctx.Done():
			s.delayed = s.delayed[:0]
			return false
		}
		s.delayed[i] = Delivery{}
	}
	s.delayed = s.delayed[:0]
	return true
}

func (s *Subscription) finish(err error) {
	if s.ctx.Err() != nil {
		err = nil
	}
	s.err = err
	s.cancel()
	close(s.out)
	close(s.done)
}

func (s *Subscription) dial(streamURL string) error {
	ws, resp, err := s.conv.c.dialer.DialContext(s.ctx, streamURL, nil)
	if err != nil {
		if resp != nil {
			return &Error{Op: "GET stream", Status: resp.StatusCode}
		}
		return fmt.Errorf("GET stream: %w", err)
	}
	s.mu.Lock()
	s.ws = ws
	s.mu.Unlock()
	if s.ctx.Err() != nil {
		ws.Close()
	}
	return nil
}

// frame is one ActivitySet frame, a frame that is not one (bad), or the error that ended the
// connection.
type frame struct {
	set ActivitySet
	at  time.Time
	bad error
	err error
}

// frameReader reads one connection's frames, all into the same buffer: a decoded set keeps no
// reference to it.
type frameReader struct {
	ws     *websocket.Conn
	buf    bytes.Buffer
	sparse bool
}

// next reads the next frame; empty frames are keep-alives and skipped.
func (r *frameReader) next() frame {
	for {
		r.buf.Reset()
		_, mr, err := r.ws.NextReader()
		if err == nil {
			_, err = r.buf.ReadFrom(mr)
		}
		f := frame{at: time.Now()}
		if err != nil {
			f.err = err
			return f
		}
		if r.buf.Len() == 0 {
			continue
		}
		if err := f.set.decode(r.buf.Bytes(), r.sparse); err != nil {
			f.bad = fmt.Errorf("stream frame: %w", err)
		}
		return f
	}
}

func (s *Subscription) runStream() {
	for {
		s.mu.Lock()
		ws := s.ws
		s.mu.Unlock()
		err := s.streamLoop(ws)
		ws.Close()
		if s.ctx.Err() != nil {
			s.finish(nil)
			return
		}
		if err = s.reconnect(err); err != nil {
			s.finish(err)
			return
		}
	}
}

// streamLoop handles one connection's frames and gap fills until the connection fails (its
// error) or the Subscription is closed (nil). Without a hole in the sequence it reads the
// connection itself, which spares a goroutine switch per frame; while a hole is open a helper
// goroutine waits for the next frame, so that the hole's GapWait can run out meanwhile.
func (s *Subscription) streamLoop(ws *websocket.Conn) error {
	// Reading stops when the connection closes; Close closes it, and so must the end of the
	// context.
	stop := context.AfterFunc(s.ctx, func() { ws.Close() })
	defer stop()
	r := &frameReader{ws: ws, sparse: s.opts.Sparse}
	// pending receives the helper's frame; nil while no helper is reading. Its buffer lets the
	// helper end even when nobody takes the frame.
	var pending chan frame
	for {
		var f frame
		if pending == nil && !s.seq.gapOpen() {
			f = r.next()
		} else {
			if pending == nil {
				pending = make(chan frame, 1)
				go func(out chan<- frame) { out <- r.next() }(pending)
			}
			var gap <-chan time.Time
			if s.seq.gapOpen() {
				gap = time.After(time.Until(s.seq.gapSince.Add(s.conv.c.gapWait)))
			}
			select {
			case <-s.ctx.Done():
				return nil
			case f = <-pending:
				pending = nil
			case <-gap:
				s.fill()
				if !s.flush() {
					return nil
				}
				continue
			}
		}
		if f.err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			return f.err
		}
		if f.bad != nil {
			s.event(Event{Kind: EventError, Err: f.bad, At: f.at})
			continue
		}
		for i, a := range f.set.Activities {
			if a != nil {
				s.seq.feed(a, f.set.digest(i), SourceStream, f.at)
			}
		}
		if f.set.Watermark != "" {
			s.lastWM = f.set.Watermark
			if w, err := strconv.ParseUint(f.set.Watermark, 10, 64); err == nil && len(f.set.Activities) > 0 {
				if last := f.set.Activities[len(f.set.Activities)-1]; last != nil {
					s.seq.frameEnd(last, w)
				}
			}
		}
		if !s.flush() {
			return nil
		}
	}
}

// maxFillPages bounds the GET requests of one gap fill.
const maxFillPages = 100

// fill reads the hole with GET activities after the delivered watermark, up to the highest
// position the stream has shown; what GET neither returns nor passes is lost.
func (s *Subscription) fill() {
	limit := s.seq.highest()
	conv := *s.conv
	conv.Token = s.token
	for range maxFillPages {
		if !s.seq.gapOpen() {
			return
		}
		before := s.seq.next
		set, err := conv.activities(s.ctx, s.seq.watermark(), s.opts.Sparse)
		if err != nil {
			if s.ctx.Err() == nil {
				// Try again after another GapWait rather than call the hole lost.
				s.event(Event{Kind: EventError, Err: err, At: time.Now()})
				s.seq.gapSince = time.Now()
			}
			return
		}
		at := time.Now()
		for i, a := range set.Activities {
			if a == nil {
				continue
			}
			if p, ok := s.seq.position(a); ok && p > limit {
				continue
			}
			s.seq.feed(a, set.digest(i), SourceFill, at)
		}
		w, err := strconv.ParseUint(set.Watermark, 10, 64)
		if err != nil {
			break
		}
		s.seq.coverTo(w, limit)
		if len(set.Activities) == 0 || s.seq.next == before {
			break
		}
	}
	s.seq.giveUp()
}

// reconnect reopens the stream after the delivered watermark, trying up to
// Options.MaxReconnects times. A refusal other than a server error ends the Subscription.
func (s *Subscription) reconnect(cause error) error {
	s.event(Event{Kind: EventReconnect, Err: cause, At: time.Now()})
	s.seq.resume()
	wm := s.seq.watermark()
	if wm == "" {
		wm = s.lastWM
	}
	c := s.conv.c
	var err error
	for range c.opts.MaxReconnects {
		select {
		case <-s.ctx.Done():
			return nil
		case <-time.After(c.opts.ReconnectDelay):
		}
		var cv *Conversation
		cv, err = c.Reconnect(s.ctx, s.conv.ID, wm, s.token)
		if err == nil {
			if cv.StreamURL == "" {
				return errors.New("client: reconnect gave no streamUrl")
			}
			s.token = cv.Token
			if err = s.dial(cv.StreamURL); err == nil {
				return nil
			}
		}
		if terminal(err) {
			return err
		}
	}
	return err
}

// terminal reports errors that retrying cannot cure: the service refused the credential or the
// conversation (4xx other than 408 and 429).
func terminal(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Status >= 400 && e.Status < 500 && e.Status != http.StatusRequestTimeout && e.Status != http.StatusTooManyRequests
}

func (s *Subscription) runPoll() {
	wm := s.opts.Watermark
	interval := s.conv.c.opts.PollInterval
	for {
		start := time.Now()
		set, err := s.conv.activities(s.ctx, wm, s.opts.Sparse)
		switch {
		case s.ctx.Err() != nil:
			s.finish(nil)
			return
		case terminal(err):
			s.finish(err)
			return
		case err != nil:
			s.event(Event{Kind: EventError, Err: err, At: time.Now()})
		default:
			s.pollAnswer(set)
			if !s.flush() {
				s.finish(nil)
				return
			}
			if set.Watermark != "" {
				wm = set.Watermark
			}
		}
		select {
		case <-s.ctx.Done():
			s.finish(nil)
			return
		case <-time.After(time.Until(start.Add(interval))):
		}
	}
}

// pollAnswer feeds one GET answer: the answer is authoritative up to its watermark.
func (s *Subscription) pollAnswer(set ActivitySet) {
	at := time.Now()
	for i, a := range set.Activities {
		if a != nil {
			s.seq.feed(a, set.digest(i), SourcePoll, at)
		}
	}
	if w, err := strconv.ParseUint(set.Watermark, 10, 64); err == nil {
		s.seq.coverTo(w, w)
	}
	if s.seq.gapOpen() {
		// Positions above the watermark cannot be covered by anything later but the next
		// answer; what is still behind a hole now was never returned.
		s.seq.giveUp()
	}
}

// NewMessage returns a message activity with text from user ("" = leave from unset, for Post to
// fill) carrying channelData.clientActivityID when given, by which its echo can be matched (as
// Web Chat does).
func NewMessage(user, text, clientActivityID string) *activity.Activity {
	a := &activity.Activity{Type: activity.TypeMessage, Text: text}
	if user != "" {
		a.From = &activity.ChannelAccount{ID: user, Role: activity.RoleUser}
	}
	if clientActivityID != "" {
		raw, _ := json.Marshal(clientActivityID)
		a.SetChannelData(activity.KeyClientActivityID, raw)
	}
	return a
}
