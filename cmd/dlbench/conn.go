package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Limits of a userTransport exchange.
const (
	// exchangeTimeout bounds one request and its answer, as the shared client's timeout does.
	exchangeTimeout = 30 * time.Second
	// defaultMaxIdle is how long a connection may rest before it is dialled anew rather than
	// reused: below the shortest keep-alive time of the servers dlbench meets (Node's http
	// server closes idle connections after 5 s), so a request is never written into a
	// connection the server has already closed.
	defaultMaxIdle = 2 * time.Second
	// maxAnswer bounds an answer's body, as the client package does.
	maxAnswer = 64 << 20
)

// userTransport sends one simulated user's requests over a keep-alive connection of its own, on
// the calling goroutine: a user has one request in flight at a time, so it needs neither the
// shared transport's pool nor its two goroutines per connection and the hand-offs between them
// and the caller, which cost more CPU per message than anything else in dlbench. It speaks plain
// HTTP/1.1 to base's host only; a request to another host, over https, or while the connection is
// busy (a gap fill or a poll next to a POST) goes to the shared transport. A canceled context
// does not cut an exchange short (that would need a goroutine or a callback per request):
// exchangeTimeout bounds it.
type userTransport struct {
	shared http.RoundTripper
	host   string // host:port of base, "" when base is not http://
	dialer net.Dialer
	// maxIdle is defaultMaxIdle (tests shorten it).
	maxIdle time.Duration

	mu       sync.Mutex
	conn     net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	lastUsed time.Time
}

func newUserTransport(base string, shared http.RoundTripper) *userTransport {
	t := &userTransport{shared: shared, dialer: net.Dialer{Timeout: exchangeTimeout, KeepAlive: 30 * time.Second}, maxIdle: defaultMaxIdle}
	if rest, ok := strings.CutPrefix(base, "http://"); ok {
		host, _, _ := strings.Cut(rest, "/")
		t.host = hostPort(host)
	}
	return t
}

// hostPort adds HTTP's default port to a host without one.
func hostPort(host string) string {
	if _, _, err := net.SplitHostPort(host); err != nil {
		return net.JoinHostPort(strings.Trim(host, "[]"), "80")
	}
	return host
}

// RoundTrip implements http.RoundTripper.
func (t *userTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.host == "" || req.URL.Scheme != "http" || hostPort(req.URL.Host) != t.host || !t.mu.TryLock() {
		return t.viaShared(req)
	}
	defer t.mu.Unlock()
	resp, err := t.exchange(req)
	if err != nil {
		t.drop()
	}
	return resp, err
}

// viaShared sends req through the shared transport and reads the answer before returning, within
// exchangeTimeout.
func (t *userTransport) viaShared(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), exchangeTimeout)
	defer cancel()
	resp, err := t.shared.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return resp, nil
}

// drop closes the connection after a failure: its state is unknown.
func (t *userTransport) drop() {
	if t.conn != nil {
		t.conn.Close()
		t.conn = nil
	}
}

// exchange writes req and reads its answer on the user's connection; the caller holds t.mu.
func (t *userTransport) exchange(req *http.Request) (*http.Response, error) {
	if t.conn != nil && time.Since(t.lastUsed) > t.maxIdle {
		t.drop()
	}
	if t.conn == nil {
		c, err := t.dialer.DialContext(req.Context(), "tcp", t.host)
		if err != nil {
			return nil, err
		}
		t.conn = c
		if t.br == nil {
			t.br, t.bw = bufio.NewReaderSize(c, 4096), bufio.NewWriterSize(c, 4096)
		} else {
			t.br.Reset(c)
			t.bw.Reset(c)
		}
	}
	deadline := time.Now().Add(exchangeTimeout)
	if d, ok := req.Context().Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := t.conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	// net/http writes the request (headers sanitised, body framed by its length).
	if err := req.Write(t.bw); err != nil {
		return nil, err
	}
	if err := t.bw.Flush(); err != nil {
		return nil, err
	}
	var resp *http.Response
	var err error
	for {
		resp, err = http.ReadResponse(t.br, req)
		if err != nil {
			return nil, err
		}
		// An interim answer (100 Continue, 103 Early Hints) precedes the real one.
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	data, err := readAnswer(resp)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.Close {
		t.drop()
	}
	t.lastUsed = time.Now()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return resp, nil
}

// readAnswer reads an answer's body whole, so that the connection is free for the next request.
func readAnswer(resp *http.Response) ([]byte, error) {
	n := resp.ContentLength
	if n > maxAnswer {
		return nil, fmt.Errorf("answer of %d bytes is over %d", n, maxAnswer)
	}
	if n >= 0 {
		data := make([]byte, n)
		_, err := io.ReadFull(resp.Body, data)
		return data, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err == nil && len(data) > maxAnswer {
		err = errors.New("answer over the size limit")
	}
	return data, err
}
