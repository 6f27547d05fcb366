package stream

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// R08: a stream URL's watermark is honoured; each entry after it is replayed once, in order, and
// then live entries follow. Seqs: U1=1 B1=2 U2=3 B2=4, then B3=5 is committed live.
func TestResumeFromWatermarkR08(t *testing.T) {
	for _, tc := range []struct {
		name      string
		watermark string // "" = no watermark in the URL
		want      []uint64
	}{
		{"no watermark replays the whole history", "", []uint64{1, 2, 3, 4, 5}},
		{"watermark 0", "0", []uint64{1, 2, 3, 4, 5}},
		{"watermark 1", "1", []uint64{2, 3, 4, 5}},
		{"watermark 3 replays nothing older", "3", []uint64{4, 5}},
		{"up to date replays nothing", "4", []uint64{5}},
		{"watermark past the log", "9", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{}, false)
			for _, text := range []string{"U1", "B1", "U2", "B2"} {
				e.log.append("c", message(text), false)
			}
			var kv []string
			if tc.watermark != "" {
				kv = []string{"watermark", tc.watermark}
			}
			ws := e.dial(q("c", kv...), 1)
			e.log.append("c", message("B3"), false)
			if tc.want == nil {
				// Nothing at or below the watermark is sent; seq 10 is the first entry after it.
				for range 5 {
					e.log.append("c", message("more"), false)
				}
				tc.want = []uint64{10}
			}
			got := readSeqs(t, ws, tc.want[len(tc.want)-1])
			if !slices.Equal(got, tc.want) {
				t.Fatalf("seqs %v, want %v", got, tc.want)
			}
		})
	}
}

// Invariant 7: two sockets on one conversation (two tabs) both stay open and see the same
// activities in the same order, while writes run concurrently.
func TestTwoSocketsSameOrderInvariant7(t *testing.T) {
	const n = 300
	// The writer appends as fast as it can; a queue for all of it keeps a busy machine's slow
	// reader from being dropped as a slow consumer, which is not what this test is about.
	e := newEnv(t, Options{QueueSize: n + 2}, false)
	e.log.append("c", message("welcome"), false)
	a := e.dial(q("c"), 1)
	b := e.dial(q("c", "watermark", ""), 2)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			e.log.append("c", message("m"+strconv.Itoa(i)), i%7 == 3)
		}
	}()
	got := make([][]uint64, 2)
	for i, ws := range []*websocket.Conn{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = readSeqs(t, ws, n+1)
		}()
	}
	wg.Wait()
	if want := seqRange(1, n+1); !slices.Equal(got[0], want) || !slices.Equal(got[1], want) {
		t.Fatalf("socket a %v\nsocket b %v\nwant 1..%d each", got[0], got[1], n+1)
	}
}

// Invariant 7: a socket dropped mid-stream and resumed with its last watermark receives exactly
// the missing replayable entries (no duplicate, no gap) while writes continue.
func TestResumeMidStreamNoGapNoDuplicateInvariant7(t *testing.T) {
	const n = 400
	// As above: the queue holds the whole burst, so only the test drops the socket.
	e := newEnv(t, Options{QueueSize: n + 2}, false)
	isTyping := func(seq uint64) bool { return seq%5 == 0 }
	ws := e.dial(q("c"), 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for seq := uint64(1); seq <= n; seq++ {
			if isTyping(seq) {
				e.log.append("c", typing(), true)
			} else {
				e.log.append("c", message("m"), false)
			}
		}
	}()
	var got []uint64
	for len(got) < 50 {
		got = append(got, mustReadFrame(t, ws).seqs(t)...)
	}
	ws.Close()
	last := got[len(got)-1]
	ws2 := e.dialRaw(q("c", "watermark", strconv.FormatUint(last, 10)), nil)
	got = append(got, readSeqs(t, ws2, n-1)...)
	<-done

	var want []uint64 // every message once; typing may be missed while disconnected, never repeated
	for i, s := range got {
		if i > 0 && s <= got[i-1] {
			t.Fatalf("seq %d after %d: duplicate or out of order in %v", s, got[i-1], got)
		}
		if !isTyping(s) {
			want = append(want, s)
		}
	}
	var msgs []uint64
	for s := uint64(1); s <= n; s++ {
		if !isTyping(s) {
			msgs = append(msgs, s)
		}
	}
	if !slices.Equal(want, msgs) {
		t.Fatalf("messages received %v, want %v", want, msgs)
	}
}

// R24 / invariant 8: typing is pushed live, in order, but a resumed stream does not replay it.
func TestTypingLiveButNotReplayedR24(t *testing.T) {
	e := newEnv(t, Options{}, false)
	e.log.append("c", message("hello"), false) // 1
	ws := e.dial(q("c", "watermark", "1"), 1)
	e.log.append("c", typing(), true)      // 2
	e.log.append("c", message("M"), false) // 3
	f := mustReadFrame(t, ws)
	if f.Activities[0]["type"] != "typing" || f.seqs(t)[0] != 2 {
		t.Fatalf("first live frame %v, want typing with seq 2", f.Activities)
	}
	got := f.seqs(t)
	for got[len(got)-1] < 3 {
		got = append(got, mustReadFrame(t, ws).seqs(t)...)
	}
	if !slices.Equal(got, []uint64{2, 3}) {
		t.Fatalf("live seqs %v, want [2 3]", got)
	}
	resumed := e.dial(q("c", "watermark", "1"), 2)
	e.log.append("c", message("N"), false) // 4
	if got := readSeqs(t, resumed, 4); !slices.Equal(got, []uint64{3, 4}) {
		t.Fatalf("resumed stream got %v, want [3 4] (no typing)", got)
	}
}

// Invariant 9: revisions are pushed live with their own watermark and the original id; history
// holds the latest revision at the original place.
func TestRevisionLiveAndInHistoryInvariant9(t *testing.T) {
	e := newEnv(t, Options{}, false)
	e.log.append("c", message("v1"), false) // 1
	e.log.append("c", message("other"), false)
	ws := e.dial(q("c", "watermark", "2"), 1)
	e.log.revise("c", 1, "v2", false) // 3
	f := mustReadFrame(t, ws)
	if f.Watermark != "3" || f.Activities[0]["text"] != "v2" || f.Activities[0]["id"] != "c|0000001" || f.seqs(t)[0] != 1 {
		t.Fatalf("live revision frame %+v", f)
	}
	full := e.dial(q("c"), 2)
	f = mustReadFrame(t, full)
	if len(f.Activities) != 2 || f.Activities[0]["text"] != "v2" || f.Watermark != "2" {
		t.Fatalf("history frame %+v, want v2 at its place and watermark 2", f)
	}
	e.log.append("c", message("after"), false) // 4
	if f = mustReadFrame(t, full); f.Watermark != "4" {
		t.Fatalf("after history got %+v, want only seq 4 (revision 3 already in history)", f)
	}
}

// Invariant 7: a client that stops reading is closed with 1013 (reconnect with your watermark)
// once its queue overflows; what it got before is a gap-free prefix, and the other socket keeps
// receiving everything.
func TestSlowConsumerClosedWithReconnectCodeInvariant7(t *testing.T) {
	e := newEnv(t, Options{QueueSize: 8}, true)
	big := strings.Repeat("x", 16<<10)
	dialer := &websocket.Dialer{NetDialContext: smallReadBuffer}
	slow := e.dialRaw(q("c"), dialer)
	e.waitConnections(1)
	fast := e.dial(q("c"), 2)
	// The producer waits for the fast socket after each entry, so only the slow one falls behind.
	// The slow socket is not read: its writer blocks and its queue fills, while OnCommit returns
	// every time; the loop ends once the hub has dropped the slow subscriber.
	var fastSeqs []uint64
	for e.hub.Subscribers("c") == 2 {
		seq := e.log.append("c", message(big), false).Seq
		for len(fastSeqs) == 0 || fastSeqs[len(fastSeqs)-1] < seq {
			fastSeqs = append(fastSeqs, mustReadFrame(t, fast).seqs(t)...)
		}
	}
	e.log.append("c", message("after"), false)
	fastSeqs = append(fastSeqs, readSeqs(t, fast, e.lastSeq("c"))...)
	if want := seqRange(1, e.lastSeq("c")); !slices.Equal(fastSeqs, want) {
		t.Fatalf("fast socket got %v, want %v", fastSeqs, want)
	}
	var got []uint64
	for {
		f, err := readFrame(t, slow)
		if err != nil {
			if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != CloseSlowConsumer {
				t.Fatalf("slow socket ended with %v, want close %d", err, CloseSlowConsumer)
			}
			break
		}
		got = append(got, f.seqs(t)...)
	}
	// A gap-free prefix, possibly empty: on a busy machine the queue can fill before the slow
	// socket's writer has run at all.
	if len(got) > 0 && !slices.Equal(got, seqRange(1, got[len(got)-1])) {
		t.Fatalf("slow socket got %v, want a gap-free prefix", got)
	}
	e.obs.mu.Lock()
	slowCount := e.obs.slow
	e.obs.mu.Unlock()
	if slowCount != 1 {
		t.Fatalf("SlowConsumer observed %d times, want 1", slowCount)
	}
	waitFor(t, func() bool { return slices.Contains(e.obs.reasons(), "slow_consumer") }, "slow_consumer disconnect")
}

// Invariant 7: OnCommit never waits on a socket. A client that never reads at all (its TCP
// buffers full) does not hold up commits or a second subscriber, and is dropped after its write
// deadline.
func TestOnCommitNeverBlocksOnStuckClientInvariant7(t *testing.T) {
	e := newEnv(t, Options{QueueSize: 4, WriteTimeout: 50 * time.Millisecond}, true)
	dialer := &websocket.Dialer{NetDialContext: smallReadBuffer}
	e.dialRaw(q("c"), dialer)
	e.waitConnections(1)
	sub, err := e.hub.Subscribe("c", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	big := strings.Repeat("y", 16<<10)
	const n = 200
	// The producer waits for the subscription after each entry, so only the stuck socket falls
	// behind.
	// The loop runs in a goroutine so that a blocking OnCommit fails the test instead of hanging it.
	var got []uint64
	done := make(chan error, 1)
	go func() {
		for range n {
			e.log.append("c", message(big), false)
			f, err := sub.Next(context.Background())
			if err != nil {
				done <- err
				return
			}
			got = append(got, f.Watermark)
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("commits blocked behind the stuck socket")
	}
	if !slices.Equal(got, seqRange(1, n)) {
		t.Fatalf("subscription got %v, want 1..%d", got, n)
	}
	e.waitConnections(0)
}

// A client that stops reading before its queue fills is dropped when a write runs out of time,
// and counted as a slow consumer: its full socket takes no close frame, so it cannot be told 1013.
func TestStuckClientCountsAsSlowConsumer(t *testing.T) {
	var logs logLines
	e := newEnv(t, Options{QueueSize: 1 << 20, WriteTimeout: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, true)
	e.dialRaw(q("c"), &websocket.Dialer{NetDialContext: smallReadBuffer})
	e.waitConnections(1)
	big := strings.Repeat("z", 16<<10)
	for e.hub.Subscribers("c") == 1 {
		e.log.append("c", message(big), false)
		time.Sleep(time.Millisecond)
	}
	e.waitConnections(0)
	waitFor(t, func() bool { return slices.Contains(e.obs.reasons(), "slow_consumer") }, "slow_consumer disconnect")
	e.obs.mu.Lock()
	defer e.obs.mu.Unlock()
	if e.obs.slow != 1 {
		t.Fatalf("SlowConsumer observed %d times, want 1", e.obs.slow)
	}
	// The operator learns why a client lost its stream without reading metrics.
	if got := logs.String(); !strings.Contains(got, "slow consumer disconnected") || !strings.Contains(got, "conversation=c") {
		t.Fatalf("log lacks the slow consumer's disconnect:\n%s", got)
	}
}

// logLines collects a handler's output; the hub logs from its connections' goroutines.
type logLines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// The client's frames (DLJS sends an empty one every 20 s) are ignored; the stream stays open.
func TestClientFramesIgnored(t *testing.T) {
	e := newEnv(t, Options{}, false)
	ws := e.dial(q("c"), 1)
	for _, data := range []string{"", "", `{"type":"message"}`, "not json"} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ws.WriteMessage(websocket.BinaryMessage, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	e.log.append("c", message("still here"), false)
	if f := mustReadFrame(t, ws); f.Activities[0]["text"] != "still here" {
		t.Fatalf("got %+v", f)
	}
	if n := e.hub.Connections(); n != 1 {
		t.Fatalf("connections %d, want 1", n)
	}
}

// An idle stream gets empty text frames as keep-alive, and nothing but ActivitySets otherwise.
func TestKeepAliveEmptyFrames(t *testing.T) {
	e := newEnv(t, Options{KeepAlive: 5 * time.Millisecond}, false)
	ws := e.dial(q("c"), 1)
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for range 3 {
		typ, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if typ != websocket.TextMessage || len(data) != 0 {
			t.Fatalf("got frame type %d %q, want an empty text frame", typ, data)
		}
	}
}

// Without pongs or frames from the client for two ping intervals, the server drops the peer.
func TestDeadPeerDropped(t *testing.T) {
	e := newEnv(t, Options{PingInterval: 10 * time.Millisecond, KeepAlive: -1}, false)
	ws := e.dial(q("c"), 1)
	// The client never reads, so it never answers pings.
	_ = ws
	e.waitConnections(0)
	waitFor(t, func() bool { return slices.Contains(e.obs.reasons(), "dead_peer") }, "dead_peer disconnect")
}

// A client that reads answers pings and stays connected across several ping intervals.
func TestPingPongKeepsConnection(t *testing.T) {
	e := newEnv(t, Options{PingInterval: 400 * time.Millisecond, KeepAlive: -1}, false)
	ws := e.dial(q("c"), 1)
	var pings atomic.Int32
	ws.SetPingHandler(func(data string) error {
		pings.Add(1)
		return ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	frames := make(chan wireFrame, 1)
	go func() {
		f, err := readFrame(t, ws)
		if err != nil {
			t.Errorf("after %d pings: %v (server saw %v)", pings.Load(), err, e.obs.reasons())
		}
		frames <- f
	}()
	waitFor(t, func() bool { return pings.Load() >= 3 }, "3 pings")
	e.log.append("c", message("alive"), false)
	if f := <-frames; len(f.Activities) != 1 || f.Activities[0]["text"] != "alive" {
		t.Fatalf("got %+v", f)
	}
}

// One hub clock serves every stream: each stream that answers pings gets its own pings and
// keep-alives and stays open, while each silent one among them is dropped as a dead peer.
func TestOneClockPingsEveryStreamAndDropsDeadPeers(t *testing.T) {
	e := newEnv(t, Options{PingInterval: 40 * time.Millisecond, KeepAlive: 15 * time.Millisecond}, false)
	type answering struct {
		conv              string
		pings, keepAlives atomic.Int32
		frames            chan wireFrame
	}
	var live []*answering
	for i, conv := range []string{"a", "b", "c", "d", "e"} {
		ws := e.dial(q(conv), i+1)
		if i%2 == 1 {
			continue // never reads, so never answers a ping
		}
		a := &answering{conv: conv, frames: make(chan wireFrame, 1)}
		live = append(live, a)
		ws.SetPingHandler(func(data string) error {
			a.pings.Add(1)
			return ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		})
		go func() {
			for {
				_, data, err := ws.ReadMessage()
				if err != nil {
					return
				}
				if len(data) == 0 {
					a.keepAlives.Add(1)
					continue
				}
				var f wireFrame
				if err := json.Unmarshal(data, &f); err != nil {
					t.Errorf("stream %s: %v", conv, err)
				}
				a.frames <- f
			}
		}()
	}
	waitFor(t, func() bool {
		n := 0
		for _, r := range e.obs.reasons() {
			if r == "dead_peer" {
				n++
			}
		}
		return n == 2
	}, "both silent streams dropped as dead peers")
	for _, a := range live {
		waitFor(t, func() bool { return a.pings.Load() >= 3 && a.keepAlives.Load() >= 3 }, "3 pings and 3 keep-alives on "+a.conv)
	}
	if n := e.hub.Connections(); n != len(live) {
		t.Fatalf("connections %d, want the %d answering streams (disconnects %v)", n, len(live), e.obs.reasons())
	}
	for _, a := range live {
		e.log.append(a.conv, message("alive"), false)
		if f := <-a.frames; len(f.Activities) != 1 || f.Activities[0]["text"] != "alive" {
			t.Fatalf("stream %s got %+v", a.conv, f)
		}
	}
}

// DESIGN Shutdown: every stream is closed with 1012 (reconnect with your watermark); later
// streams and subscriptions are refused.
func TestShutdownClosesWithReconnectCode(t *testing.T) {
	e := newEnv(t, Options{}, false)
	a := e.dial(q("c"), 1)
	b := e.dial(q("d"), 2)
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i, ws := range []*websocket.Conn{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = closeCode(t, ws) // reading answers the close frame, as browsers do
		}()
	}
	if err := e.hub.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if codes[0] != CloseServiceRestart || codes[1] != CloseServiceRestart {
		t.Fatalf("close codes %v, want %d", codes, CloseServiceRestart)
	}
	if n := e.hub.Connections(); n != 0 {
		t.Fatalf("connections after shutdown %d", n)
	}
	u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/stream?conv=c"
	if _, resp, err := websocket.DefaultDialer.Dial(u, nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after shutdown: %v %v, want 503", err, resp)
	}
	if _, err := e.hub.Subscribe("c", 0, false); err != ErrShutdown {
		t.Fatalf("Subscribe after shutdown: %v", err)
	}
}

// Shutdown's deadline bounds it: a stream whose client never answers the close is dropped.
func TestShutdownDeadlineDropsStuckStreams(t *testing.T) {
	e := newEnv(t, Options{}, true)
	e.dialRaw(q("c"), &websocket.Dialer{NetDialContext: smallReadBuffer})
	e.waitConnections(1)
	big := strings.Repeat("z", 16<<10)
	for range 20 {
		e.log.append("c", message(big), false)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := e.hub.Shutdown(ctx); err != context.DeadlineExceeded && err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := e.hub.Connections(); n != 0 {
		t.Fatalf("connections after shutdown %d", n)
	}
}

// R10 step 5: a stream whose token expires is closed with 4001 "token expired".
func TestTokenExpiryClosesWithExpiryCodeR10(t *testing.T) {
	for _, tc := range []struct {
		name    string
		expires time.Duration
	}{
		{"expires while open", 30 * time.Millisecond},
		{"already expired", -time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{}, false)
			e.log.append("c", message("hi"), false)
			ws := e.dialRaw(q("c", "expires", time.Now().Add(tc.expires).Format(time.RFC3339Nano)), nil)
			ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			var err error
			for err == nil {
				_, _, err = ws.ReadMessage()
			}
			ce, ok := err.(*websocket.CloseError)
			if !ok || ce.Code != CloseTokenExpired || ce.Text != "token expired" {
				t.Fatalf("closed with %v, want %d token expired", err, CloseTokenExpired)
			}
			e.waitConnections(0)
		})
	}
}

// A history read failure closes the stream with 1011 instead of skipping entries.
func TestHistoryErrorClosesStream(t *testing.T) {
	e := newEnv(t, Options{}, false)
	e.log.readErr = context.DeadlineExceeded
	ws := e.dialRaw(q("c"), nil)
	if code := closeCode(t, ws); code != CloseHistoryUnavailable {
		t.Fatalf("close code %d, want %d", code, CloseHistoryUnavailable)
	}
}

// Connected and Disconnected are reported once per stream, with the reason.
func TestObserverConnectedAndDisconnected(t *testing.T) {
	e := newEnv(t, Options{}, false)
	ws := e.dial(q("c"), 1)
	e.log.append("c", message("a"), false)
	mustReadFrame(t, ws)
	ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	e.waitConnections(0)
	waitFor(t, func() bool { return len(e.obs.reasons()) == 1 }, "one disconnect")
	e.obs.mu.Lock()
	defer e.obs.mu.Unlock()
	if e.obs.connected != 0 || e.obs.frames != 1 || e.obs.disconnected[0] != "client" {
		t.Fatalf("observer %+v", e.obs)
	}
}

// A request that is not a WebSocket upgrade gets 400 and opens no stream.
func TestPlainRequestRejected(t *testing.T) {
	e := newEnv(t, Options{}, false)
	resp, err := http.Get(e.srv.URL + "/stream?conv=c")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	if n := e.hub.Connections(); n != 0 {
		t.Fatalf("connections %d", n)
	}
	if n := e.hub.Subscribers("c"); n != 0 {
		t.Fatalf("subscribers %d", n)
	}
}

// A client that has seen the handshake's 101 gets every entry committed after it, typing
// included: Web Chat posts as soon as it is connected, and a typing that history does not keep
// would otherwise fall between the handshake and the subscription. Many rounds, because before
// the subscription came first the gap was a race.
func TestEntriesCommittedRightAfterHandshakeDelivered(t *testing.T) {
	e := newEnv(t, Options{}, false)
	for i := range 40 {
		conv := "c" + strconv.Itoa(i)
		ws := e.dialRaw(q(conv), nil)
		typingSeq := e.log.append(conv, typing(), true).Seq
		if got := readSeqs(t, ws, typingSeq); !slices.Equal(got, []uint64{typingSeq}) {
			t.Fatalf("round %d: seqs %v, want the typing committed after the handshake (%d)", i, got, typingSeq)
		}
		ws.Close()
	}
}
