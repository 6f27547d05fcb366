package stream

import (
	"context"
	"hash/maphash"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// History reads replayable entries after a watermark; store.Store satisfies it. See
// store.Store.ReadAfter for the semantics the hub relies on: entries in seq order, ephemeral
// entries left out, and a returned watermark that covers every entry looked at.
type History interface {
	ReadAfter(ctx context.Context, conversationID string, watermark uint64, limit int) ([]store.Entry, uint64, error)
}

// Observer receives the hub's counters; a metrics package implements it. Methods are called from
// many goroutines, including the store's commit goroutine, and must not block.
type Observer interface {
	// Connected is called with +1 when a WebSocket stream opens and -1 when it closes.
	Connected(delta int)
	// FrameSent is called for each ActivitySet frame written, with its size in bytes.
	FrameSent(bytes int)
	// SlowConsumer is called when a subscriber's queue overflows and it is disconnected.
	SlowConsumer()
	// Disconnected is called once per closed WebSocket stream with why it ended: "client",
	// "dead_peer", "network", "slow_consumer", "token_expired", "shutdown" or "history_error".
	Disconnected(reason string)
}

type nopObserver struct{}

func (nopObserver) Connected(int)       {}
func (nopObserver) FrameSent(int)       {}
func (nopObserver) SlowConsumer()       {}
func (nopObserver) Disconnected(string) {}

// Options configure a Hub. Zero values take the defaults given per field.
type Options struct {
	// QueueSize is how many entries one subscriber may have waiting before it is disconnected as
	// a slow consumer (close 1013). Default 256.
	QueueSize int
	// WriteTimeout bounds the write of one frame. Default 10 s.
	WriteTimeout time.Duration
	// PingInterval is how often the server pings; a peer that sends nothing (no pong, no frame)
	// for twice this long is dropped. Default 30 s; negative turns pings and the read deadline off.
	PingInterval time.Duration
	// KeepAlive is how often an empty text frame is sent on a stream that sent no ActivitySet in
	// the interval. Default 20 s; negative turns keep-alives off.
	KeepAlive time.Duration
	// CheckOrigin decides whether to accept an upgrade from the request's Origin. Default: accept
	// every origin, as the stream URL carries its own credential and Web Chat pages are usually
	// served from another origin.
	CheckOrigin func(r *http.Request) bool
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics defaults to an observer that does nothing.
	Metrics Observer
}

const (
	defaultQueueSize    = 256
	defaultWriteTimeout = 10 * time.Second
	defaultPingInterval = 30 * time.Second
	defaultKeepAlive    = 20 * time.Second

	// maxFrameActivities and maxFrameBytes keep frames small: a frame is cut after 100
	// activities or once it holds 64 KiB (a single larger activity still goes in its own frame).
	maxFrameActivities = 100
	maxFrameBytes      = 64 << 10
	// historyPage is how many entries one ReadAfter call asks for.
	historyPage = maxFrameActivities

	shardCount = 64

	// readBufferSize holds a client frame header and the largest control frame (125 bytes).
	readBufferSize = 256
)

// Hub fans committed entries out to the subscribers of each conversation.
type Hub struct {
	history  History
	opts     Options
	log      *slog.Logger
	obs      Observer
	upgrader websocket.Upgrader

	seed   maphash.Seed
	shards [shardCount]shard

	// closing is set once by Shutdown; checked under a shard lock by subscribe.
	closing atomic.Bool
	// ctx is cancelled when Shutdown gives up waiting; it ends history reads of open streams.
	ctx    context.Context
	cancel context.CancelFunc

	// open counts upgraded, registered WebSocket streams.
	open atomic.Int64

	// The clock (clock.go): one goroutine for every stream's keep-alives, pings and expiry.
	epoch     time.Time
	tick      time.Duration
	clockOnce sync.Once

	connMu    sync.Mutex
	conns     map[*wsConn]struct{} // every stream from ServeWS until released, for Shutdown
	drained   chan struct{}        // closed once closing is set and conns is empty
	drainOnce sync.Once
}

// shard holds the subscribers of the conversations whose id hashes to it. OnCommit for one
// conversation takes only its shard's lock, so conversations in other shards never wait.
type shard struct {
	mu    sync.Mutex
	convs map[string][]*Subscription
}

// NewHub returns a hub reading history from h.
func NewHub(h History, opts Options) *Hub {
	if opts.QueueSize <= 0 {
		opts.QueueSize = defaultQueueSize
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = defaultWriteTimeout
	}
	if opts.PingInterval == 0 {
		opts.PingInterval = defaultPingInterval
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = defaultKeepAlive
	}
	if opts.CheckOrigin == nil {
		opts.CheckOrigin = func(*http.Request) bool { return true }
	}
	hub := &Hub{
		history: h,
		opts:    opts,
		log:     opts.Logger,
		obs:     opts.Metrics,
		seed:    maphash.MakeSeed(),
		epoch:   time.Now(),
		tick:    clockTick(opts),
		conns:   map[*wsConn]struct{}{},
		drained: make(chan struct{}),
	}
	if hub.log == nil {
		hub.log = slog.Default()
	}
	if hub.obs == nil {
		hub.obs = nopObserver{}
	}
	hub.ctx, hub.cancel = context.WithCancel(context.Background())
	hub.upgrader = websocket.Upgrader{
		// An idle stream should hold no buffer it does not need: clients send only tiny
		// frames, so a small read buffer will do (it must hold a control frame), and the write
		// buffer is taken from the pool for each frame. Not reusing the HTTP server's buffers
		// also lets the server's per-connection state go once ServeWS returns.
		ReadBufferSize:   readBufferSize,
		WriteBufferPool:  &sync.Pool{},
		CheckOrigin:      opts.CheckOrigin,
		HandshakeTimeout: opts.WriteTimeout,
	}
	for i := range hub.shards {
		hub.shards[i].convs = map[string][]*Subscription{}
	}
	return hub
}

func (h *Hub) shard(conversationID string) *shard {
	return &h.shards[maphash.String(h.seed, conversationID)%shardCount]
}

// OnCommit hands the entries of one durable commit to the conversation's subscribers. It has the
// shape of store.CommitHook and the same contract: entries in seq order per conversation, one
// call at a time per conversation. It never blocks: each subscriber gets the entries appended to
// its queue, and a subscriber whose queue would exceed Options.QueueSize is disconnected instead.
func (h *Hub) OnCommit(conversationID string, entries []store.Entry) {
	if len(entries) == 0 {
		return
	}
	sh := h.shard(conversationID)
	sh.mu.Lock()
	n := len(sh.convs[conversationID])
	sh.mu.Unlock()
	if n == 0 {
		return
	}
	// Encoded once for every subscriber (by the store, as a rule), outside the shard lock.
	items := make([]*item, 0, len(entries))
	for _, e := range entries {
		it, err := newItem(e)
		if err != nil {
			h.log.Error("stream: encode activity", "conversation", conversationID, "seq", e.Seq, "err", err)
			continue
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return
	}
	sh.mu.Lock()
	subs := sh.convs[conversationID]
	kept := subs[:0]
	for _, s := range subs {
		if s.push(items) {
			kept = append(kept, s)
		}
	}
	clear(subs[len(kept):])
	if len(kept) == 0 {
		delete(sh.convs, conversationID)
	} else {
		sh.convs[conversationID] = kept
	}
	sh.mu.Unlock()
}

// Subscribe registers a transport-independent subscriber: it receives the conversation's history
// after watermark (all of it when hasWatermark is false) and then every committed entry, as
// frames from Subscription.Next. It returns ErrShutdown after Shutdown. The conversation is not
// checked: callers authorise it first. The caller must Close the subscription when done with it;
// one that is not read is dropped as a slow consumer once Options.QueueSize entries wait.
func (h *Hub) Subscribe(conversationID string, watermark uint64, hasWatermark bool) (*Subscription, error) {
	s := newSubscription(h, conversationID, watermark, hasWatermark)
	s.notify = make(chan struct{}, 1)
	s.wake = s.signal
	if err := h.register(s); err != nil {
		return nil, err
	}
	return s, nil
}

func (h *Hub) register(s *Subscription) error {
	sh := h.shard(s.conversationID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if h.closing.Load() {
		return ErrShutdown
	}
	sh.convs[s.conversationID] = append(sh.convs[s.conversationID], s)
	return nil
}

func (h *Hub) unregister(s *Subscription) {
	sh := h.shard(s.conversationID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	subs := sh.convs[s.conversationID]
	for i, x := range subs {
		if x == s {
			last := len(subs) - 1
			subs[i] = subs[last]
			subs[last] = nil
			subs = subs[:last]
			break
		}
	}
	if len(subs) == 0 {
		delete(sh.convs, s.conversationID)
	} else {
		sh.convs[s.conversationID] = subs
	}
}

// Connections returns the number of open WebSocket streams (upgraded and receiving live entries).
func (h *Hub) Connections() int { return int(h.open.Load()) }

// Subscribers returns how many subscribers (WebSocket streams and Subscriptions) receive the
// conversation's live entries.
func (h *Hub) Subscribers(conversationID string) int {
	sh := h.shard(conversationID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return len(sh.convs[conversationID])
}

// Shutdown stops accepting streams and subscriptions, ends every subscription with ErrShutdown,
// closes every WebSocket with 1012 "service restart" (reconnect with your watermark) and waits
// for them to finish. When ctx ends first it drops the remaining connections without a close
// frame and returns ctx's error. DLJS waits a random 3-15 s before reconnecting, which spreads
// the reconnects of the closed streams.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.closing.Store(true)
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.Lock()
		for id, subs := range sh.convs {
			for _, s := range subs {
				s.fail(ErrShutdown)
			}
			delete(sh.convs, id)
		}
		sh.mu.Unlock()
	}
	h.connMu.Lock()
	if len(h.conns) == 0 {
		h.drainOnce.Do(func() { close(h.drained) })
	}
	h.connMu.Unlock()
	select {
	case <-h.drained:
		return nil
	case <-ctx.Done():
	}
	h.cancel()
	h.connMu.Lock()
	for c := range h.conns {
		c.abort()
	}
	h.connMu.Unlock()
	<-h.drained
	return ctx.Err()
}

// item is one entry encoded once for all subscribers.
type item struct {
	seq       uint64
	ephemeral bool
	json      []byte
}

// newItem takes the entry's JSON when the store made it, else encodes the activity.
func newItem(e store.Entry) (*item, error) {
	b := e.JSON
	if b == nil {
		var err error
		if b, err = activity.AppendJSON(nil, e.Activity); err != nil {
			return nil, err
		}
	}
	return &item{seq: e.Seq, ephemeral: e.Ephemeral, json: b}, nil
}
