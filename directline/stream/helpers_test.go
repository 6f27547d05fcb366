package stream

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// memLog is an in-memory conversation log with the parts of store.Store the hub needs: Append and
// Update with a commit hook called after each commit, in seq order, one commit at a time, and
// ReadAfter with the store's semantics (ephemeral entries left out, latest revision of each
// activity at its original place, or as the newest revision entry when that place is before the
// watermark).
type memLog struct {
	commitMu sync.Mutex // serialises commit + hook, like the store's writer goroutine
	mu       sync.Mutex
	convs    map[string][]store.Entry
	readErr  error
	hook     store.CommitHook
}

func newMemLog() *memLog { return &memLog{convs: map[string][]store.Entry{}} }

func (m *memLog) append(conv string, a *activity.Activity, ephemeral bool) store.Entry {
	return m.commit(conv, func(seq uint64) store.Entry {
		a = a.Clone()
		a.Stamp(activity.FormatID(conv, seq), seq, activity.FormatTimestamp(time.Unix(0, 0).Add(time.Duration(seq)*time.Millisecond)))
		return store.Entry{Seq: seq, Kind: store.KindActivity, Activity: a, Ephemeral: ephemeral}
	})
}

// revise appends a revision of the activity created at seq orig, with new text.
func (m *memLog) revise(conv string, orig uint64, text string, ephemeral bool) store.Entry {
	return m.commit(conv, func(seq uint64) store.Entry {
		m.mu.Lock()
		a := m.convs[conv][orig-1].Activity.Clone()
		m.mu.Unlock()
		a.Text = text
		return store.Entry{Seq: seq, Kind: store.KindRevision, Activity: a, Ephemeral: ephemeral}
	})
}

func (m *memLog) commit(conv string, mk func(seq uint64) store.Entry) store.Entry {
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	m.mu.Lock()
	seq := uint64(len(m.convs[conv])) + 1
	m.mu.Unlock()
	e := mk(seq)
	m.mu.Lock()
	m.convs[conv] = append(m.convs[conv], e)
	m.mu.Unlock()
	if m.hook != nil {
		m.hook(conv, []store.Entry{e})
	}
	return e
}

func (m *memLog) ReadAfter(_ context.Context, conv string, watermark uint64, limit int) ([]store.Entry, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readErr != nil {
		return nil, 0, m.readErr
	}
	log := m.convs[conv]
	latest := map[string]store.Entry{}
	for _, e := range log {
		if !e.Ephemeral {
			latest[e.Activity.ID] = e
		}
	}
	var out []store.Entry
	looked := watermark
	for _, e := range log {
		if e.Seq <= watermark {
			continue
		}
		if len(out) == limit {
			break
		}
		looked = e.Seq
		if e.Ephemeral {
			continue
		}
		orig, _ := e.Activity.SequenceID()
		l := latest[e.Activity.ID]
		switch {
		case e.Kind == store.KindActivity:
			out = append(out, store.Entry{Seq: e.Seq, Kind: e.Kind, Activity: l.Activity})
		case orig <= watermark && l.Seq == e.Seq:
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, max(watermark, uint64(len(log))), nil
	}
	return out, looked, nil
}

func message(text string) *activity.Activity {
	return &activity.Activity{Type: activity.TypeMessage, Text: text, From: &activity.ChannelAccount{ID: "bot", Role: activity.RoleBot}}
}

func typing() *activity.Activity { return &activity.Activity{Type: activity.TypeTyping} }

// recorder is an Observer that counts what it sees.
type recorder struct {
	mu           sync.Mutex
	connected    int
	frames       int
	slow         int
	disconnected []string
}

func (r *recorder) Connected(d int) { r.mu.Lock(); r.connected += d; r.mu.Unlock() }
func (r *recorder) FrameSent(int)   { r.mu.Lock(); r.frames++; r.mu.Unlock() }
func (r *recorder) SlowConsumer()   { r.mu.Lock(); r.slow++; r.mu.Unlock() }
func (r *recorder) Disconnected(reason string) {
	r.mu.Lock()
	r.disconnected = append(r.disconnected, reason)
	r.mu.Unlock()
}

func (r *recorder) reasons() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.disconnected...)
}

// env is a hub behind a real HTTP server; the stream URL is /stream?conv=ID[&watermark=N][&expires=RFC3339Nano].
type env struct {
	t   *testing.T
	log *memLog
	hub *Hub
	srv *httptest.Server
	obs *recorder
}

// smallBuffers shrinks the server's socket send buffer so a client that stops reading fills it
// after a few frames instead of megabytes.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

func newEnv(t *testing.T, opts Options, tinyBuffers bool) *env {
	t.Helper()
	log := newMemLog()
	e := newEnvWith(t, opts, tinyBuffers, log)
	e.log = log
	log.hook = e.hub.OnCommit
	return e
}

// newEnvWith serves a hub reading history from h; the caller connects h's commit hook.
func newEnvWith(t *testing.T, opts Options, tinyBuffers bool, h History) *env {
	t.Helper()
	e := &env{t: t, obs: &recorder{}}
	opts.Metrics = e.obs
	e.hub = NewHub(h, opts)
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var wm uint64
		has := q.Get("watermark") != ""
		if has {
			var err error
			if wm, err = strconv.ParseUint(q.Get("watermark"), 10, 64); err != nil {
				http.Error(w, "bad watermark", http.StatusBadRequest)
				return
			}
		}
		var exp time.Time
		if s := q.Get("expires"); s != "" {
			exp, _ = time.Parse(time.RFC3339Nano, s)
		}
		e.hub.ServeWS(w, r, q.Get("conv"), wm, has, exp)
	}))
	if tinyBuffers {
		e.srv.Listener = smallBuffers{e.srv.Listener}
	}
	e.srv.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.hub.Shutdown(ctx)
		e.srv.Close()
	})
	return e
}

// dial opens a stream; query holds conv and optionally watermark/expires. It returns once the
// stream is registered for live entries (the hub's connection count reached want).
func (e *env) dial(query url.Values, want int) *websocket.Conn {
	e.t.Helper()
	ws := e.dialRaw(query, nil)
	e.waitConnections(want)
	return ws
}

func (e *env) dialRaw(query url.Values, dialer *websocket.Dialer) *websocket.Conn {
	e.t.Helper()
	if dialer == nil {
		dialer = websocket.DefaultDialer
	}
	u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/stream?" + query.Encode()
	ws, resp, err := dialer.Dial(u, nil)
	if err != nil {
		e.t.Fatalf("dial %s: %v (response %v)", u, err, resp)
	}
	e.t.Cleanup(func() { ws.Close() })
	return ws
}

// waitConnections waits until the hub has n open streams (bounded by the safety deadline).
func (e *env) waitConnections(n int) {
	e.t.Helper()
	waitFor(e.t, func() bool { return e.hub.Connections() == n }, "connections == "+strconv.Itoa(n))
}

// waitFor polls cond; the deadline only guards against a hang, it is not a timing assertion.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

type wireFrame struct {
	Activities []map[string]any `json:"activities"`
	Watermark  string           `json:"watermark"`
}

// seqs returns the webchat:sequence-id of each activity.
func (f wireFrame) seqs(t *testing.T) []uint64 {
	t.Helper()
	out := make([]uint64, len(f.Activities))
	for i, a := range f.Activities {
		cd, _ := a["channelData"].(map[string]any)
		n, ok := cd[activity.KeySequenceID].(float64)
		if !ok {
			t.Fatalf("activity without sequence id: %v", a)
		}
		out[i] = uint64(n)
	}
	return out
}

// readFrame reads the next ActivitySet frame, skipping empty keep-alive frames. It checks the
// frame's shape: a text frame with activities and a decimal string watermark.
func readFrame(t *testing.T, ws *websocket.Conn) (wireFrame, error) {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		typ, data, err := ws.ReadMessage()
		if err != nil {
			return wireFrame{}, err
		}
		if typ != websocket.TextMessage {
			t.Fatalf("frame type %d, want text", typ)
		}
		if len(data) == 0 {
			continue
		}
		var f wireFrame
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("frame %q: %v", data, err)
		}
		if len(f.Activities) == 0 {
			t.Fatalf("frame without activities: %s", data)
		}
		// The watermark is the seq of the frame's last entry: equal to that activity's sequence
		// id, or larger for a revision, which keeps the original sequence id.
		seqs := f.seqs(t)
		if wm, err := strconv.ParseUint(f.Watermark, 10, 64); err != nil || wm < seqs[len(seqs)-1] {
			t.Fatalf("watermark %q, last sequence id %d", f.Watermark, seqs[len(seqs)-1])
		}
		return f, nil
	}
}

func mustReadFrame(t *testing.T, ws *websocket.Conn) wireFrame {
	t.Helper()
	f, err := readFrame(t, ws)
	if err != nil {
		t.Fatalf("read frame: %v", err)
	}
	return f
}

// readSeqs reads frames until the last seq is at least upTo and returns every seq received.
func readSeqs(t *testing.T, ws *websocket.Conn, upTo uint64) []uint64 {
	t.Helper()
	var out []uint64
	for len(out) == 0 || out[len(out)-1] < upTo {
		out = append(out, mustReadFrame(t, ws).seqs(t)...)
	}
	return out
}

// closeCode reads until the connection closes and returns the close code.
func closeCode(t *testing.T, ws *websocket.Conn) int {
	t.Helper()
	for {
		_, err := readFrame(t, ws)
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code
		}
		t.Fatalf("connection ended without a close frame: %v", err)
	}
}

func q(conv string, kv ...string) url.Values {
	v := url.Values{"conv": {conv}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// smallReadBuffer dials with a small socket receive buffer, so a client that stops reading makes
// the server's writes block quickly.
func smallReadBuffer(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	return c, err
}

func (e *env) lastSeq(conv string) uint64 {
	e.log.mu.Lock()
	defer e.log.mu.Unlock()
	return uint64(len(e.log.convs[conv]))
}
