package bot

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connServer is an httptest server that counts the connections it accepted and keeps the open
// ones, so a test can close them from the server's side.
type connServer struct {
	*httptest.Server
	accepted atomic.Int32
	mu       sync.Mutex
	conns    []net.Conn
}

func newConnServer(t *testing.T, h http.HandlerFunc) *connServer {
	t.Helper()
	s := &connServer{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// closeConns closes every connection the server accepted so far.
func (s *connServer) closeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

func echoHandler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Method", r.Method)
	w.Write(body)
}

// post sends body to u through tr and returns the answer's body, read to its end.
func post(t *testing.T, tr http.RoundTripper, u, body string) (string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil {
		// A body read to its end stays there, as net/http's bodies do.
		if n, eof := resp.Body.Read(make([]byte, 1)); n != 0 || eof != io.EOF {
			t.Fatalf("read after the end: %d, %v", n, eof)
		}
	}
	return string(data), err
}

func idleCount(tr *Transport) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, l := range tr.idle {
		n += len(l)
	}
	return n
}

func TestTransportAnswersAndReuses(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    string
		// conns is how many connections three requests take.
		conns int32
	}{
		{"content length", echoHandler, "hello", 1},
		{"empty answer", func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }, "", 1},
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Write([]byte("hel"))
			w.(http.Flusher).Flush()
			w.Write([]byte("lo"))
		}, "hello", 1},
		{"interim answer first", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			echoHandler(w, r)
		}, "hello", 1},
		{"connection close", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			echoHandler(w, r)
		}, "hello", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newConnServer(t, tc.handler)
			tr := NewTransport(4, 0)
			defer tr.CloseIdleConnections()
			for i := 0; i < 3; i++ {
				got, err := post(t, tr, s.URL+"/api/messages", "hello")
				if err != nil || got != tc.want {
					t.Fatalf("request %d: %q, %v; want %q", i, got, err, tc.want)
				}
			}
			if n := s.accepted.Load(); n != tc.conns {
				t.Fatalf("%d connections, want %d", n, tc.conns)
			}
		})
	}
}

// An idle connection the server closed (its keep-alive timeout, a restart) is replaced before a
// request is written to it: the request would otherwise fail although the server is up.
func TestTransportReplacesConnectionClosedByServer(t *testing.T) {
	s := newConnServer(t, echoHandler)
	tr := NewTransport(4, 0)
	defer tr.CloseIdleConnections()
	if got, err := post(t, tr, s.URL, "one"); err != nil || got != "one" {
		t.Fatalf("first request: %q, %v", got, err)
	}
	s.closeConns()
	tr.mu.Lock()
	kc := tr.idle[hostPort(mustURL(t, s.URL))][0]
	tr.mu.Unlock()
	// The server's FIN reaches the client's socket asynchronously; wait for it, not for a time.
	for peerOpen(kc.conn) {
		time.Sleep(time.Millisecond)
	}
	if got, err := post(t, tr, s.URL, "two"); err != nil || got != "two" {
		t.Fatalf("request after the server closed the idle connection: %q, %v", got, err)
	}
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A body closed before its end leaves the connection in the middle of an answer: it is closed,
// and the next request gets a new one.
func TestTransportUnreadBodyDropsConnection(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 256<<10)
	s := newConnServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write(big) })
	tr := NewTransport(4, 0)
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after Close succeeded")
	}
	if n := idleCount(tr); n != 0 {
		t.Fatalf("%d idle connections after an unread body, want 0", n)
	}
	if got, err := post(t, tr, s.URL, ""); err != nil || got != string(big) {
		t.Fatalf("next request: %d bytes, %v", len(got), err)
	}
	if n := s.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// The request's context ends a request stuck on a silent server, and the connection is not
// reused; the transport's timeout does the same without a context deadline.
func TestTransportContextAndTimeoutEndStuckRequests(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 4)
	s := newConnServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stuck" {
			arrived <- struct{}{}
			<-release
		}
		echoHandler(w, r)
	})
	defer close(release)

	tr := NewTransport(4, 0)
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/stuck", strings.NewReader("x"))
		_, err := tr.RoundTrip(req)
		errc <- err
	}()
	<-arrived
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := idleCount(tr); n != 0 {
		t.Fatalf("%d idle connections after a canceled request, want 0", n)
	}

	timed := NewTransport(4, 100*time.Millisecond)
	defer timed.CloseIdleConnections()
	_, err := post(t, timed, s.URL+"/stuck", "x")
	<-arrived
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if got, err := post(t, timed, s.URL, "after"); err != nil || got != "after" {
		t.Fatalf("request after a timeout: %q, %v", got, err)
	}
}

// https and proxied requests go through the fallback http.Transport.
func TestTransportFallback(t *testing.T) {
	t.Run("https", func(t *testing.T) {
		s := httptest.NewTLSServer(http.HandlerFunc(echoHandler))
		defer s.Close()
		tr := NewTransport(4, time.Minute)
		defer tr.CloseIdleConnections()
		tr.fallback.TLSClientConfig = s.Client().Transport.(*http.Transport).TLSClientConfig
		if got, err := post(t, tr, s.URL, "secure"); err != nil || got != "secure" {
			t.Fatalf("%q, %v", got, err)
		}
		if n := idleCount(tr); n != 0 {
			t.Fatalf("%d connections pooled by the direct path, want 0", n)
		}
	})
	t.Run("proxy", func(t *testing.T) {
		var proxied atomic.Int32
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.IsAbs() {
				proxied.Add(1)
			}
			echoHandler(w, r)
		}))
		defer proxy.Close()
		tr := NewTransport(4, 0)
		defer tr.CloseIdleConnections()
		proxyURL := mustURL(t, proxy.URL)
		tr.fallback.Proxy = func(*http.Request) (*url.URL, error) { return proxyURL, nil }
		if got, err := post(t, tr, "http://bot.invalid/api/messages", "via proxy"); err != nil || got != "via proxy" {
			t.Fatalf("%q, %v", got, err)
		}
		if proxied.Load() != 1 {
			t.Fatal("the proxy did not get the request")
		}
	})
}

// After CloseIdleConnections nothing is pooled: a transport being shut down keeps no sockets.
func TestTransportCloseIdleConnections(t *testing.T) {
	s := newConnServer(t, echoHandler)
	tr := NewTransport(4, 0)
	if _, err := post(t, tr, s.URL, "a"); err != nil {
		t.Fatal(err)
	}
	if n := idleCount(tr); n != 1 {
		t.Fatalf("%d idle connections, want 1", n)
	}
	tr.CloseIdleConnections()
	if _, err := post(t, tr, s.URL, "b"); err != nil {
		t.Fatal(err)
	}
	if n := idleCount(tr); n != 0 {
		t.Fatalf("%d idle connections after CloseIdleConnections, want 0", n)
	}
}

// writeRequest writes what req.Write writes, as a server reads it: directly for plain requests,
// through req.Write for the rest.
func TestWriteRequestMatchesRequestWrite(t *testing.T) {
	type build func() *http.Request
	newReq := func(method, u, body string, h map[string][]string) build {
		return func() *http.Request {
			var r io.Reader
			if body != "" {
				r = strings.NewReader(body)
			}
			req, err := http.NewRequest(method, u, r)
			if err != nil {
				t.Fatal(err)
			}
			for k, vs := range h {
				req.Header[k] = vs
			}
			return req
		}
	}
	cases := []struct {
		name  string
		req   build
		plain bool // written directly
	}{
		{"bot delivery", newReq("POST", "http://127.0.0.1:3978/api/messages", `{"type":"message"}`, map[string][]string{
			"Content-Type": {"application/json; charset=utf-8"}, "Accept": {"application/json"}, "Authorization": {"Bearer abc.def"}}), true},
		{"query and escapes", newReq("POST", "http://bot.example:8080/v3/conversations/a%7Cb/activities/a%7Cb%7C0000001?x=1&y=%20", `{}`, nil), true},
		{"empty POST", newReq("POST", "http://127.0.0.1/api", "", nil), true},
		{"GET", newReq("GET", "http://127.0.0.1/v3/attachments/x/views/original", "", map[string][]string{"Accept": {"*/*"}}), true},
		{"DELETE", newReq("DELETE", "http://[::1]:9/v3/conversations/c/activities/i", "", nil), true},
		{"own User-Agent", newReq("POST", "http://127.0.0.1/api", "x", map[string][]string{"User-Agent": {"bot/1.0"}}), true},
		{"no User-Agent", newReq("POST", "http://127.0.0.1/api", "x", map[string][]string{"User-Agent": {""}}), true},
		{"repeated header", newReq("POST", "http://127.0.0.1/api", "x", map[string][]string{"X-Tag": {"a", "b"}}), true},
		{"Host and Content-Length headers ignored", newReq("POST", "http://127.0.0.1/api", "xyz", map[string][]string{"Host": {"evil"}, "Content-Length": {"99"}}), true},
		{"value with line break", newReq("POST", "http://127.0.0.1/api", "x", map[string][]string{"X-A": {"a\r\nX-B: b"}}), false},
		{"value with outer blanks", newReq("POST", "http://127.0.0.1/api", "x", map[string][]string{"X-A": {" a "}}), false},
		{"invalid header name", newReq("POST", "http://127.0.0.1/api", "x", map[string][]string{"X A": {"a"}}), false},
		{"unknown length", func() *http.Request {
			req := newReq("POST", "http://127.0.0.1/api", "", nil)()
			req.Body, req.ContentLength = io.NopCloser(strings.NewReader("chunked body")), -1
			return req
		}, false},
		{"Connection: close", func() *http.Request {
			req := newReq("POST", "http://127.0.0.1/api", "x", nil)()
			req.Close = true
			return req
		}, false},
		{"unicode host", newReq("POST", "http://bücher.example/api", "x", nil), false},
	}
	read := func(t *testing.T, raw []byte) (*http.Request, string) {
		t.Helper()
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			t.Fatalf("reading %q: %v", raw, err)
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		return r, string(body)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req()
			if got := plainRequest(req, req.URL.Host); got != tc.plain {
				t.Fatalf("plainRequest = %v, want %v", got, tc.plain)
			}
			var want, got bytes.Buffer
			if err := tc.req().Write(&want); err != nil {
				t.Fatal(err)
			}
			bw := bufio.NewWriter(&got)
			if err := writeRequest(bw, tc.req()); err != nil {
				t.Fatal(err)
			}
			bw.Flush()
			wr, wbody := read(t, want.Bytes())
			gr, gbody := read(t, got.Bytes())
			if gr.Method != wr.Method || gr.RequestURI != wr.RequestURI || gr.Host != wr.Host || gbody != wbody ||
				gr.ContentLength != wr.ContentLength || !reflect.DeepEqual(gr.TransferEncoding, wr.TransferEncoding) ||
				!reflect.DeepEqual(gr.Header, wr.Header) || gr.Close != wr.Close {
				t.Fatalf("writeRequest sent\n%q\nreq.Write sends\n%q", got.Bytes(), want.Bytes())
			}
		})
	}
}

// A body shorter or longer than its ContentLength is an error, as with req.Write.
func TestWriteRequestBodyLengthMismatch(t *testing.T) {
	for _, body := range []string{"short", "much longer than said"} {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/api", io.NopCloser(strings.NewReader(body)))
		req.ContentLength = 10
		bw := bufio.NewWriter(io.Discard)
		if err := writeRequest(bw, req); err == nil {
			t.Errorf("%q with ContentLength 10: no error", body)
		}
	}
}
