package bot

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Transport.
const (
	// DefaultIdleTimeout is how long an idle connection may be reused, as http.DefaultTransport.
	DefaultIdleTimeout = 90 * time.Second
	// dialTimeout and dialKeepAlive are http.DefaultTransport's.
	dialTimeout   = 30 * time.Second
	dialKeepAlive = 30 * time.Second
)

// aLongTimeAgo is a deadline in the past: setting it unblocks a read or write at once.
var aLongTimeAgo = time.Unix(1, 0)

// Transport is an http.RoundTripper that sends plain-HTTP/1.1 requests (a bot on the same host or
// network, the built-in demo bot, that bot's Bot Connector calls) on the caller's goroutine over
// pooled keep-alive connections: one write of the request and reads of the answer, with no
// goroutines per connection and no channel handoffs per request as in http.Transport, which
// costs several times the CPU of the request itself on loopback.
//
// It sends everything else through its fallback http.Transport: https URLs, requests a proxy
// from the environment applies to (HTTP_PROXY, NO_PROXY; never loopback), upgrades, and every
// request on systems where an idle connection cannot be checked for a close by the server before
// reuse (all but Linux). Unlike http.Transport it asks for no gzip encoding. A request is never
// retried: a POST on a connection that fails is the caller's error, as with http.Transport (an
// idle connection the server has closed is noticed before reuse and replaced).
type Transport struct {
	fallback    *http.Transport
	maxIdle     int
	timeout     time.Duration
	idleTimeout time.Duration
	dialer      net.Dialer

	mu     sync.Mutex
	idle   map[string][]*keepConn // by host:port, most recently used last
	closed bool                   // CloseIdleConnections ran: nothing is pooled
}

// NewTransport returns a Transport keeping up to perHost idle connections per host (at least 2)
// for DefaultIdleTimeout each. timeout > 0 bounds every request from its first byte written to
// its answer's last byte read (a deadline on the connection; through the fallback, a context
// deadline); 0 leaves only the request's context.
func NewTransport(perHost int, timeout time.Duration) *Transport {
	return &Transport{
		fallback:    PooledTransport(perHost),
		maxIdle:     max(perHost, 2),
		timeout:     timeout,
		idleTimeout: DefaultIdleTimeout,
		dialer:      net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive},
		idle:        make(map[string][]*keepConn),
	}
}

// RoundTrip implements http.RoundTripper. Errors: the dial's (*net.OpError with Op "dial"), the
// request context's error when it ended the request, or the connection's.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.direct(req) {
		return t.viaFallback(req)
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		closeRequestBody(req)
		return nil, err
	}
	key := hostPort(req.URL)
	kc := t.get(key)
	if kc == nil {
		conn, err := t.dialer.DialContext(ctx, "tcp", key)
		if err != nil {
			closeRequestBody(req)
			return nil, err
		}
		kc = &keepConn{t: t, key: key, conn: conn, br: bufio.NewReader(conn), bw: bufio.NewWriter(conn)}
	}
	return kc.roundTrip(ctx, req)
}

// direct reports whether RoundTrip sends req itself.
func (t *Transport) direct(req *http.Request) bool {
	if !canCheckIdle || req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		return false
	}
	if req.Header.Get("Upgrade") != "" {
		return false
	}
	if t.fallback.Proxy != nil {
		if p, err := t.fallback.Proxy(req); err != nil || p != nil {
			return false
		}
	}
	return true
}

// viaFallback sends req through the fallback transport, under the timeout if there is one: the
// deadline ends when the answer's body is closed.
func (t *Transport) viaFallback(req *http.Request) (*http.Response, error) {
	if t.timeout <= 0 {
		return t.fallback.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.fallback.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelBody releases a fallback request's deadline when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// CloseIdleConnections closes the pooled connections and pools none afterwards (connections in
// use close when their request ends); the fallback's too. http.Client.CloseIdleConnections calls
// it.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.closed = make(map[string][]*keepConn), true
	t.mu.Unlock()
	for _, list := range idle {
		for _, kc := range list {
			kc.conn.Close()
		}
	}
	t.fallback.CloseIdleConnections()
}

// get takes the most recently used idle connection to key that is still open, or returns nil.
func (t *Transport) get(key string) *keepConn {
	now := time.Now()
	for {
		t.mu.Lock()
		list := t.idle[key]
		if len(list) == 0 {
			t.mu.Unlock()
			return nil
		}
		kc := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[key] = list[:len(list)-1]
		t.mu.Unlock()
		if now.Sub(kc.idleSince) < t.idleTimeout && peerOpen(kc.conn) {
			return kc
		}
		kc.conn.Close()
	}
}

// put pools a connection whose last answer was read to its end, or closes it when the pool for
// its host is full.
func (t *Transport) put(kc *keepConn) {
	kc.idleSince = time.Now()
	t.mu.Lock()
	if t.closed || len(t.idle[kc.key]) >= t.maxIdle {
		t.mu.Unlock()
		kc.conn.Close()
		return
	}
	t.idle[kc.key] = append(t.idle[kc.key], kc)
	t.mu.Unlock()
}

// keepConn is one keep-alive connection, used by one request at a time.
type keepConn struct {
	t         *Transport
	key       string
	conn      net.Conn
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
}

// roundTrip writes req and reads its answer's head; the body is read through the answer.
func (kc *keepConn) roundTrip(ctx context.Context, req *http.Request) (*http.Response, error) {
	if kc.t.timeout > 0 {
		kc.conn.SetDeadline(time.Now().Add(kc.t.timeout))
	}
	// Ending the context unblocks whatever the connection is doing; the connection is then
	// dropped, as its state is unknown.
	stop := context.AfterFunc(ctx, func() { kc.conn.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		kc.conn.Close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	err := writeRequest(kc.bw, req) // closes the request body
	if err == nil {
		err = kc.bw.Flush()
	}
	if err != nil {
		return fail(err)
	}
	resp, err := http.ReadResponse(kc.br, req)
	// An interim answer (100 Continue, 103 Early Hints) precedes the final one.
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(kc.br, req)
	}
	if err != nil {
		return fail(err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("bot: unexpected 101 Switching Protocols"))
	}
	b := &keepBody{kc: kc, rc: resp.Body, ctx: ctx, stop: stop, reuse: !resp.Close && !req.Close}
	if resp.Body == http.NoBody {
		b.finish(true)
		return resp, nil
	}
	resp.Body = b
	return resp, nil
}

// keepBody is an answer's body: read to its end, it gives the connection back to the pool;
// closed before, it closes the connection.
type keepBody struct {
	kc    *keepConn
	rc    io.ReadCloser
	ctx   context.Context
	stop  func() bool
	reuse bool
	done  atomic.Bool
	eof   bool // Read returned io.EOF: it keeps doing so, as net/http's bodies do
}

func (b *keepBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.done.Load() {
		return 0, errors.New("bot: read on a closed response body")
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.eof = true
		b.finish(true)
	case err != nil:
		b.finish(false)
		if cerr := b.ctx.Err(); cerr != nil {
			err = cerr
		}
	}
	return n, err
}

func (b *keepBody) Close() error {
	b.finish(false)
	return nil
}

// finish releases the connection once: to the pool when the body was read to its end, the
// connection may be kept and the context did not interrupt it; else closed.
func (b *keepBody) finish(complete bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	if b.stop() && complete && b.reuse {
		b.kc.t.put(b.kc)
		return
	}
	b.kc.conn.Close()
}

// hostPort is u's host with the http port when it names none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// writeRequest writes req in HTTP/1.1 form as req.Write does, and closes its body. The requests
// bots and the demo bot send (a body of known length, a plain host, header names that are
// tokens and values without line breaks or surrounding blanks) are written directly, without
// req.Write's sorting and rewriting of every header; anything else goes through req.Write.
func writeRequest(w *bufio.Writer, req *http.Request) error {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !plainRequest(req, host) {
		return req.Write(w)
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	w.WriteString(req.Method)
	w.WriteByte(' ')
	w.WriteString(req.URL.RequestURI())
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	if _, ok := req.Header["User-Agent"]; !ok {
		w.WriteString("\r\nUser-Agent: " + defaultUserAgent)
	}
	if req.ContentLength > 0 || req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch {
		w.WriteString("\r\nContent-Length: ")
		var n [20]byte
		w.Write(strconv.AppendInt(n[:0], req.ContentLength, 10))
	}
	for k, vs := range req.Header {
		if k == "Host" || k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			if k == "User-Agent" && v == "" {
				continue // an empty User-Agent means none, as in req.Write
			}
			w.WriteString("\r\n")
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(v)
		}
	}
	w.WriteString("\r\n\r\n")
	if !hasBody {
		return nil
	}
	defer req.Body.Close()
	n, err := io.Copy(w, io.LimitReader(req.Body, req.ContentLength))
	if err != nil {
		return err
	}
	if n == req.ContentLength {
		var extra [1]byte
		if m, _ := req.Body.Read(extra[:]); m > 0 {
			n++
		}
	}
	if n != req.ContentLength {
		return fmt.Errorf("bot: request body does not have the %d bytes of its ContentLength", req.ContentLength)
	}
	return nil
}

// defaultUserAgent is what req.Write sends when a request names no User-Agent.
const defaultUserAgent = "Go-http-client/1.1"

// plainRequest reports whether writeRequest can write req itself: a method and host of plain
// characters, a body of known length, no chunked encoding, trailers or Connection: close to handle, and every header
// name a token with values of visible characters and inner blanks only (req.Write would trim
// or rewrite the rest).
func plainRequest(req *http.Request, host string) bool {
	if req.Method == "" || req.Method == http.MethodConnect || !isToken(req.Method) || host == "" ||
		len(req.TransferEncoding) > 0 || req.Trailer != nil || req.Close || req.URL.Opaque != "" {
		return false
	}
	if req.ContentLength < 0 || req.ContentLength == 0 && req.Body != nil && req.Body != http.NoBody {
		return false // a body of unknown length goes chunked
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	for k, vs := range req.Header {
		if !isToken(k) || k == "Transfer-Encoding" || k == "Trailer" || k == "Connection" || k == "User-Agent" && len(vs) > 1 {
			return false
		}
		for _, v := range vs {
			if len(v) > 0 && (v[0] == ' ' || v[0] == '\t' || v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
				return false
			}
			for i := 0; i < len(v); i++ {
				if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
					return false
				}
			}
		}
	}
	return true
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
