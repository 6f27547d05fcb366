package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// countingServer answers every request with its method, path and body, as the handler shapes
// it, and counts the connections clients open.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func echoHandler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%s %s %s %s", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), body)
}

func TestUserTransport(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		maxIdle int // 0: the default; -1: none, every request dials anew
		// wantConns is the connections the server sees for three requests.
		wantConns int64
	}{
		{"keep-alive: one connection", echoHandler, 0, 1},
		{"chunked answers", func(w http.ResponseWriter, r *http.Request) {
			echoHandler(w, r)
			w.(http.Flusher).Flush()
			io.WriteString(w, strings.Repeat("x", 5000))
		}, 0, 1},
		{"Connection: close is obeyed", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			echoHandler(w, r)
		}, 0, 3},
		{"a connection idle too long is dialled anew", echoHandler, -1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, conns := countingServer(t, tt.handler)
			tr := newUserTransport(srv.URL+"/v3/directline", http.DefaultTransport)
			if tt.maxIdle < 0 {
				tr.maxIdle = -1
			}
			c := &http.Client{Transport: tr}
			for i := range 3 {
				body := fmt.Sprint(`{"n":`, i, `}`)
				req, err := http.NewRequest(http.MethodPost, srv.URL+"/v3/directline/conversations/c1/activities?x=1", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer tok")
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := "POST /v3/directline/conversations/c1/activities?x=1 Bearer tok " + body
				if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(got), want) {
					t.Fatalf("request %d: %d %q (%v), want %q", i, resp.StatusCode, got, err, want)
				}
			}
			if n := conns.Load(); n != tt.wantConns {
				t.Errorf("%d connections, want %d", n, tt.wantConns)
			}
		})
	}
}

// TestUserTransportHandsOverWhatItDoesNotSend: another host, and a request made while the
// user's connection is busy, go through the shared transport; a connection the server drops
// fails its request, and the next one dials anew.
func TestUserTransportHandsOverWhatItDoesNotSend(t *testing.T) {
	srv, conns := countingServer(t, echoHandler)
	other, otherConns := countingServer(t, echoHandler)
	var dropped atomic.Bool
	dropping, dropConns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if dropped.CompareAndSwap(false, true) {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
			return
		}
		echoHandler(w, r)
	})
	tr := newUserTransport(srv.URL, http.DefaultTransport)
	get := func(tr *userTransport, url string) error {
		resp, err := (&http.Client{Transport: tr}).Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); !strings.HasPrefix(string(b), "GET /") {
			return fmt.Errorf("answer %q", b)
		}
		return nil
	}
	if err := get(tr, other.URL+"/a"); err != nil {
		t.Fatal(err)
	}
	tr.mu.Lock()
	err := get(tr, srv.URL+"/busy")
	tr.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := get(tr, srv.URL+"/own"); err != nil {
		t.Fatal(err)
	}
	if tr.conn == nil || otherConns.Load() != 1 || conns.Load() != 2 {
		t.Errorf("own connection %v, other host %d connections, base %d (want 1 and 2: shared, own)", tr.conn != nil, otherConns.Load(), conns.Load())
	}
	dt := newUserTransport(dropping.URL, http.DefaultTransport)
	if err := get(dt, dropping.URL+"/x"); err == nil {
		t.Fatal("a dropped connection gave no error")
	}
	if err := get(dt, dropping.URL+"/y"); err != nil {
		t.Fatalf("after a dropped connection: %v", err)
	}
	if dropConns.Load() != 2 {
		t.Errorf("%d connections to the dropping server, want 2", dropConns.Load())
	}
}
