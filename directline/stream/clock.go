package stream

import "time"

// The hub's clock drives the keep-alives, pings and token expiry of every stream from one
// goroutine, so an idle stream holds no timer of its own. It ticks every clockTick and looks at
// each stream's deadlines; those are spread by when each stream opened, so a tick wakes only the
// writers that are due.

// maxClockTick bounds how late a keep-alive, ping or token expiry may be.
const maxClockTick = time.Second

// clockTick is how often the clock looks at the streams: maxClockTick, or an eighth of the
// shortest enabled keep-alive or ping interval when that is shorter (at least 1 ms).
func clockTick(o Options) time.Duration {
	tick := maxClockTick
	for _, d := range []time.Duration{o.KeepAlive, o.PingInterval} {
		if d > 0 {
			tick = min(tick, max(d/8, time.Millisecond))
		}
	}
	return tick
}

// now reads the hub's clock: monotonic time since NewHub.
func (h *Hub) now() time.Duration { return time.Since(h.epoch) }

// startClock starts the clock goroutine with the first stream; it ends after Shutdown.
func (h *Hub) startClock() {
	h.clockOnce.Do(func() { go h.runClock() })
}

func (h *Hub) runClock() {
	t := time.NewTicker(h.tick)
	defer t.Stop()
	var due, expired []*wsConn
	for range t.C {
		if h.closing.Load() {
			return
		}
		due, expired = h.collectDue(h.now(), due[:0], expired[:0])
		// Outside connMu: ending a subscription and starting writers take other locks.
		for _, c := range expired {
			c.sub.end(ErrTokenExpired)
		}
		for _, c := range due {
			c.kick()
		}
		clear(due)
		clear(expired)
	}
}

// collectDue appends the streams with a keep-alive or ping due at now to due (marking what is
// due on each) and those whose token expired to expired.
func (h *Hub) collectDue(now time.Duration, due, expired []*wsConn) ([]*wsConn, []*wsConn) {
	h.connMu.Lock()
	defer h.connMu.Unlock()
	for c := range h.conns {
		c.mu.Lock()
		if !c.done {
			if c.keepAliveAt != 0 && now >= c.keepAliveAt {
				c.keepAliveDue = true
				c.keepAliveAt = now + h.opts.KeepAlive
			}
			if c.pingAt != 0 && now >= c.pingAt {
				c.pingDue = true
				c.pingAt = now + h.opts.PingInterval
			}
			if c.keepAliveDue || c.pingDue {
				due = append(due, c)
			}
			if c.expiresAt != 0 && now >= c.expiresAt {
				c.expiresAt = 0
				expired = append(expired, c)
			}
		}
		c.mu.Unlock()
	}
	return due, expired
}
