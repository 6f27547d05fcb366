package directline

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/directline-go/directline/directline/stream"
	"github.com/directline-go/directline/store"
	"github.com/directline-go/directline/store/bolt"
)

const testSecret = "test-secret.cwA.abc"

// fakeClock is a settable clock for token lifetimes.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// env is one service on a loopback listener with a real bbolt store and stream hub.
type env struct {
	t     *testing.T
	srv   *Server
	ts    *httptest.Server
	store *bolt.Store
	hub   *stream.Hub
	key   []byte
	path  string
	opts  Options
	// current is the Server the listener hands requests to (replaced by reopen).
	current atomic.Pointer[Server]
}

// newEnv starts a service; mods adjust the Options before New.
func newEnv(t *testing.T, mods ...func(*Options)) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, path: filepath.Join(dir, "directline.db")}
	key, err := LoadOrCreateKey(e.path + ".key")
	if err != nil {
		t.Fatal(err)
	}
	e.key = key
	e.ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.current.Load().ServeHTTP(w, r)
	}))
	e.opts = Options{
		PublicURL:  "http://" + e.ts.Listener.Addr().String(),
		Secrets:    []string{testSecret},
		SigningKey: key,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, m := range mods {
		m(&e.opts)
	}
	e.open()
	e.ts.Start()
	t.Cleanup(e.close)
	return e
}

// open opens the store and hub and builds the Server with e.opts.
func (e *env) open() {
	e.t.Helper()
	var hub *stream.Hub
	st, err := bolt.Open(e.path, bolt.Options{OnCommit: func(c string, entries []store.Entry) { hub.OnCommit(c, entries) }})
	if err != nil {
		e.t.Fatal(err)
	}
	hub = stream.NewHub(st, stream.Options{})
	e.store, e.hub = st, hub
	e.opts.Store, e.opts.Hub = st, hub
	srv, err := New(e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.srv = srv
	e.current.Store(srv)
}

// reopen simulates a restart: the hub and store are shut down and reopened from the same files,
// with the signing key read back from its key file.
func (e *env) reopen() {
	e.t.Helper()
	e.shutdown()
	key, err := LoadOrCreateKey(e.path + ".key")
	if err != nil {
		e.t.Fatal(err)
	}
	e.opts.SigningKey = key
	e.open()
}

func (e *env) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.hub.Shutdown(ctx)
	_ = e.store.Close()
}

func (e *env) close() {
	e.ts.Close()
	e.shutdown()
}

// url is the absolute URL of a path under BasePath.
func (e *env) url(path string) string { return e.ts.URL + BasePath + path }

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

// decode unmarshals the body into v, failing the test on error.
func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errorCode returns the code of a Direct Line ErrorResponse body, failing when the body is not
// exactly {"error":{"code","message"}} with both set.
func (r response) errorCode(t *testing.T) string {
	t.Helper()
	var body map[string]map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil || len(body) != 1 || body["error"] == nil {
		t.Fatalf("not an ErrorResponse: %q", r.body)
	}
	code, _ := body["error"]["code"].(string)
	msg, _ := body["error"]["message"].(string)
	if code == "" || msg == "" {
		t.Fatalf("ErrorResponse without code or message: %q", r.body)
	}
	return code
}

// request is one HTTP request for do.
type request struct {
	method string
	path   string // under BasePath, or absolute when it starts with http
	auth   string // Bearer value; "" = no Authorization header
	body   any    // nil, string, []byte or a value to marshal as JSON
	header map[string]string
}

func (e *env) do(rq request) response {
	e.t.Helper()
	var body io.Reader
	switch b := rq.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		body = bytes.NewReader(data)
	}
	u := rq.path
	if !strings.HasPrefix(u, "http") {
		u = e.url(u)
	}
	req, err := http.NewRequest(rq.method, u, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if rq.auth != "" {
		req.Header.Set("Authorization", "Bearer "+rq.auth)
	}
	if body != nil && rq.header["Content-Type"] == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", rq.method, u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// mustStatus fails unless r has the status.
func mustStatus(t *testing.T, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
}

// startConversation starts a conversation with the secret, bound to user when user != "".
func (e *env) startConversation(user string) conversationResponse {
	e.t.Helper()
	var body any
	if user != "" {
		body = map[string]any{"user": map[string]string{"id": user}}
	}
	r := e.do(request{method: http.MethodPost, path: "/conversations", auth: testSecret, body: body})
	mustStatus(e.t, r, http.StatusCreated)
	var c conversationResponse
	r.decode(e.t, &c)
	return c
}

// post posts an activity and returns its id.
func (e *env) post(auth, conv string, a any) string {
	e.t.Helper()
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv + "/activities", auth: auth, body: a})
	mustStatus(e.t, r, http.StatusOK)
	var rr resourceResponse
	r.decode(e.t, &rr)
	if rr.ID == "" {
		e.t.Fatalf("empty id in %s", r.body)
	}
	return rr.ID
}

// history reads GET activities after watermark (raw activities as generic JSON).
func (e *env) history(auth, conv, watermark string) ([]map[string]any, string) {
	e.t.Helper()
	r := e.do(request{method: http.MethodGet, path: "/conversations/" + conv + "/activities?watermark=" + watermark, auth: auth})
	mustStatus(e.t, r, http.StatusOK)
	var set struct {
		Activities []map[string]any `json:"activities"`
		Watermark  *string          `json:"watermark"`
	}
	r.decode(e.t, &set)
	if set.Watermark == nil || set.Activities == nil {
		e.t.Fatalf("ActivitySet without activities array or watermark: %s", r.body)
	}
	return set.Activities, *set.Watermark
}

// frame is one ActivitySet received on a stream.
type frame struct {
	Activities []map[string]any `json:"activities"`
	Watermark  string           `json:"watermark"`
}

// dial opens the stream URL.
func (e *env) dial(streamURL string) *websocket.Conn {
	e.t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(streamURL, nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		e.t.Fatalf("dial %s: %v (status %d)", streamURL, err, status)
	}
	e.t.Cleanup(func() { ws.Close() })
	return ws
}

// readActivities reads frames until n activities arrived (skipping keep-alives), with a generous
// deadline that only guards against a hang.
func readActivities(t *testing.T, ws *websocket.Conn, n int) ([]map[string]any, string) {
	t.Helper()
	var (
		got []map[string]any
		wm  string
	)
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(got) < n {
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("read stream after %d of %d activities: %v", len(got), n, err)
		}
		if len(data) == 0 {
			continue
		}
		var f frame
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("bad frame %q: %v", data, err)
		}
		got = append(got, f.Activities...)
		wm = f.Watermark
	}
	return got, wm
}
