package stream

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Close codes the hub sends; see the package doc for what a client should do on each.
const (
	// CloseServiceRestart (1012): the hub is shutting down; reconnect with your watermark.
	CloseServiceRestart = websocket.CloseServiceRestart
	// CloseSlowConsumer (1013, Try Again Later): the client fell behind; reconnect with your watermark.
	CloseSlowConsumer = websocket.CloseTryAgainLater
	// CloseHistoryUnavailable (1011, Internal Error): history could not be read; reconnect later.
	CloseHistoryUnavailable = websocket.CloseInternalServerErr
	// CloseTokenExpired (4001): the stream's token expired; get a new token before reconnecting.
	CloseTokenExpired = 4001
)

const (
	// maxClientFrame bounds client frames, which are empty keep-alives in practice.
	maxClientFrame = 4 << 10
	// closeGrace is how long the server waits for the client's close reply.
	closeGrace = 2 * time.Second
)

// closeFor maps the error that ended a subscription to a close code, reason text and the
// Observer's disconnect reason.
func closeFor(err error) (code int, text, reason string) {
	var herr *HistoryError
	switch {
	case errors.Is(err, ErrSlowConsumer):
		return CloseSlowConsumer, "slow consumer", "slow_consumer"
	case errors.Is(err, ErrTokenExpired):
		return CloseTokenExpired, "token expired", "token_expired"
	case errors.As(err, &herr):
		return CloseHistoryUnavailable, "history unavailable", "history_error"
	default:
		return CloseServiceRestart, "service restart", "shutdown"
	}
}

// wsConn is one WebSocket stream. Its serve goroutine reads (and discards) client frames; a
// writer goroutine exists only while something is due, started by kick.
type wsConn struct {
	hub *Hub
	ws  *websocket.Conn
	sub *Subscription
	ctx context.Context
	// cancel ends history reads of this stream.
	cancel context.CancelFunc

	mu           sync.Mutex
	writing      bool          // a writer goroutine is running
	again        bool          // kick happened while writing: look again before exiting
	keepAliveDue bool          // the clock found a keep-alive due
	pingDue      bool          // the clock found a ping due
	sentData     bool          // an ActivitySet was written since the last keep-alive tick
	closing      bool          // a close frame was sent: stop extending the read deadline
	done         bool          // serve is finishing: start no writer, nothing is due any more
	writerDone   chan struct{} // closed by the running writer when it exits after done
	reason       string        // the Observer's disconnect reason, once the server closes
	// When the next keep-alive and ping are due and the token expires, on the hub's clock;
	// 0 = never.
	keepAliveAt time.Duration
	pingAt      time.Duration
	expiresAt   time.Duration
}

// ServeWS upgrades r to a WebSocket and streams conversationID to it until either side closes:
// history after watermark first (all of it when hasWatermark is false), then live entries. When
// expires is non-zero the stream is closed with 4001 "token expired" at that time. It returns
// once the stream is registered; a goroutine of its own then reads the connection, so the
// request's goroutine, its stack and the request itself are released while the stream stays
// open. Callers authenticate the request and check the conversation first (Direct Line 3.0: the
// stream URL is pre-authorised by its t= token). After Shutdown it answers 503 without upgrading.
func (h *Hub) ServeWS(w http.ResponseWriter, r *http.Request, conversationID string, watermark uint64, hasWatermark bool, expires time.Time) {
	c := &wsConn{hub: h}
	h.connMu.Lock()
	if h.closing.Load() {
		h.connMu.Unlock()
		http.Error(w, "service is shutting down", http.StatusServiceUnavailable)
		return
	}
	h.conns[c] = struct{}{}
	h.connMu.Unlock()

	c.ctx, c.cancel = context.WithCancel(h.ctx)
	// Subscribe before the handshake completes: a client that has seen the 101 must get every
	// entry committed after it, typing included, which history would not bring back. Until the
	// socket is set, kick only leaves the entries queued.
	// The id may point into the request's path; a copy lets the request go.
	c.sub = newSubscription(h, strings.Clone(conversationID), watermark, hasWatermark)
	c.sub.wake = c.kick
	if err := h.register(c.sub); err != nil {
		c.sub.err = err
	}
	ws, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		// Upgrade has answered the request with an error status.
		h.log.Debug("stream: upgrade failed", "conversation", conversationID, "err", err)
		c.sub.Close()
		c.cancel()
		h.removeConn(c)
		return
	}
	c.mu.Lock()
	c.ws = ws
	c.mu.Unlock()
	h.open.Add(1)
	h.obs.Connected(1)
	h.log.Debug("stream: open", "conversation", conversationID, "watermark", watermark, "hasWatermark", hasWatermark)

	expired := false
	c.mu.Lock()
	now := h.now()
	if d := h.opts.KeepAlive; d > 0 {
		c.keepAliveAt = now + d
	}
	if d := h.opts.PingInterval; d > 0 {
		c.pingAt = now + d
	}
	if !expires.IsZero() {
		if left := time.Until(expires); left > 0 {
			c.expiresAt = now + left
		} else {
			expired = true
		}
	}
	c.mu.Unlock()
	if expired {
		c.sub.end(ErrTokenExpired)
	}
	h.startClock()
	c.kick()
	go c.serve()
}

// serve reads the connection until it ends, then releases the stream.
func (c *wsConn) serve() {
	h := c.hub
	reason := c.read()
	c.sub.Close()
	c.finish()
	c.ws.Close()
	c.mu.Lock()
	if c.reason != "" {
		reason = c.reason
	}
	c.mu.Unlock()
	h.obs.Disconnected(reason)
	h.log.Debug("stream: closed", "conversation", c.sub.conversationID, "reason", reason)
	h.obs.Connected(-1)
	h.open.Add(-1)
	h.removeConn(c)
}

func (h *Hub) removeConn(c *wsConn) {
	h.connMu.Lock()
	delete(h.conns, c)
	if h.closing.Load() && len(h.conns) == 0 {
		h.drainOnce.Do(func() { close(h.drained) })
	}
	h.connMu.Unlock()
}

// read discards client frames until the connection fails, and says why it ended.
func (c *wsConn) read() string {
	ws := c.ws
	ws.SetReadLimit(maxClientFrame)
	c.extendRead()
	ws.SetPongHandler(func(string) error {
		c.extendRead()
		return nil
	})
	for {
		_, r, err := ws.NextReader()
		if err != nil {
			var ce *websocket.CloseError
			var ne net.Error
			switch {
			case errors.As(err, &ce):
				return "client"
			case errors.As(err, &ne) && ne.Timeout():
				return "dead_peer"
			default:
				return "network"
			}
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			continue
		}
		c.extendRead()
	}
}

// extendRead moves the read deadline to two ping intervals from now, unless the server has sent
// its close frame and is only waiting briefly for the reply.
func (c *wsConn) extendRead() {
	d := c.hub.opts.PingInterval
	if d <= 0 {
		return
	}
	c.mu.Lock()
	if !c.closing {
		c.ws.SetReadDeadline(time.Now().Add(2 * d))
	}
	c.mu.Unlock()
}

// kick makes sure a writer goroutine runs; it never blocks.
func (c *wsConn) kick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || c.ws == nil {
		return
	}
	if c.writing {
		c.again = true
		return
	}
	c.writing = true
	go c.write()
}

// write is the writer goroutine: it writes whatever is due, then exits unless kicked meanwhile.
func (c *wsConn) write() {
	for {
		c.mu.Lock()
		c.again = false
		keepAlive, ping := c.keepAliveDue, c.pingDue
		c.keepAliveDue, c.pingDue = false, false
		c.mu.Unlock()

		if !c.writeDue(keepAlive, ping) {
			c.stopWriting()
			return
		}

		c.mu.Lock()
		if !c.again {
			c.writing = false
			if c.writerDone != nil {
				close(c.writerDone)
			}
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

func (c *wsConn) stopWriting() {
	c.mu.Lock()
	c.done = true
	c.writing = false
	if c.writerDone != nil {
		close(c.writerDone)
	}
	c.mu.Unlock()
}

// writeDue writes every ready frame, then a keep-alive and a ping if due. It returns false when
// the stream is over (closed by the server, or a write failed).
func (c *wsConn) writeDue(keepAlive, ping bool) bool {
	for {
		items, err := c.sub.take(c.ctx)
		if err != nil {
			c.close(err)
			return false
		}
		if len(items) == 0 {
			break
		}
		if err := c.writeFrame(items); err != nil {
			c.fail(err)
			return false
		}
	}
	if keepAlive {
		c.mu.Lock()
		send := !c.sentData
		c.sentData = false
		c.mu.Unlock()
		if send {
			c.ws.SetWriteDeadline(time.Now().Add(c.hub.opts.WriteTimeout))
			if err := c.ws.WriteMessage(websocket.TextMessage, nil); err != nil {
				c.fail(err)
				return false
			}
		}
	}
	if ping {
		if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.hub.opts.WriteTimeout)); err != nil {
			c.fail(err)
			return false
		}
	}
	return true
}

// writeFrame writes one ActivitySet frame.
func (c *wsConn) writeFrame(items []*item) error {
	c.ws.SetWriteDeadline(time.Now().Add(c.hub.opts.WriteTimeout))
	w, err := c.ws.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	n := 0
	put := func(b []byte) {
		if err == nil {
			var m int
			m, err = w.Write(b)
			n += m
		}
	}
	put([]byte(`{"activities":[`))
	for i, it := range items {
		if i > 0 {
			put([]byte{','})
		}
		put(it.json)
	}
	var wm [32]byte
	put(append(strconv.AppendUint(append(wm[:0], `],"watermark":"`...), items[len(items)-1].seq, 10), `"}`...))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.sentData = true
	c.mu.Unlock()
	c.hub.obs.FrameSent(n)
	return nil
}

// close sends the close frame for err and gives the client closeGrace to answer; the reader then
// ends. If the close frame cannot be written the connection is dropped.
func (c *wsConn) close(err error) {
	code, text, reason := closeFor(err)
	if errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled) {
		// The reader ended the stream (or Shutdown gave up): nothing more to say.
		c.ws.NetConn().Close()
		return
	}
	c.mu.Lock()
	c.reason = reason
	c.closing = true
	c.mu.Unlock()
	msg := websocket.FormatCloseMessage(code, text)
	if werr := c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(min(c.hub.opts.WriteTimeout, closeGrace))); werr != nil {
		c.ws.NetConn().Close()
		return
	}
	c.ws.SetReadDeadline(time.Now().Add(closeGrace))
}

// fail drops the connection after a failed write; the reader then ends. A write that ran out of
// time is a client that stopped reading: a slow consumer whose full socket no close frame can
// get through, so it is counted as one.
func (c *wsConn) fail(err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.mu.Lock()
		if c.reason == "" {
			c.reason = "slow_consumer"
		}
		c.mu.Unlock()
		c.hub.obs.SlowConsumer()
		c.hub.log.Warn("stream: slow consumer disconnected", "conversation", c.sub.conversationID, "cause", "write timeout")
	}
	c.ws.NetConn().Close()
}

// abort drops the connection at once (Shutdown's deadline passed).
func (c *wsConn) abort() {
	c.mu.Lock()
	ws := c.ws
	c.mu.Unlock()
	if ws != nil {
		ws.NetConn().Close()
	}
}

// finish marks the stream done and waits for a running writer goroutine.
func (c *wsConn) finish() {
	c.cancel()
	c.mu.Lock()
	c.done = true
	var wait chan struct{}
	if c.writing {
		c.writerDone = make(chan struct{})
		wait = c.writerDone
	}
	c.mu.Unlock()
	if wait != nil {
		<-wait
	}
}
