package directline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/directline/stream"
	"github.com/directline-go/directline/store"
	"github.com/directline-go/directline/store/bolt"
)

// BenchmarkPostActivity measures Direct Line 3.0 POST activities with a conversation token, over
// HTTP on loopback, from several conversations at once: authentication, decoding, the store
// append (without fsync, so the figure is the CPU of the request path rather than the disk's
// latency) and the answer. ns/op and allocs/op include the benchmark's own HTTP client.
func BenchmarkPostActivity(b *testing.B) {
	key, err := LoadOrCreateKey(filepath.Join(b.TempDir(), "key"))
	if err != nil {
		b.Fatal(err)
	}
	var hub *stream.Hub
	st, err := bolt.Open(filepath.Join(b.TempDir(), "directline.db"), bolt.Options{NoSync: true, OnCommit: func(c string, entries []store.Entry) { hub.OnCommit(c, entries) }})
	if err != nil {
		b.Fatal(err)
	}
	hub = stream.NewHub(st, stream.Options{})
	ts := httptest.NewUnstartedServer(nil)
	srv, err := New(Options{
		Store: st, Hub: hub, PublicURL: "http://" + ts.Listener.Addr().String(),
		Secrets: []string{testSecret}, SigningKey: key,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	defer func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hub.Shutdown(ctx)
		_ = st.Close()
	}()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: bot.PooledTransport(64)}

	const conversations = 16
	type conv struct{ id, token string }
	convs := make([]conv, conversations)
	for i := range convs {
		resp, err := benchDo(hc, http.MethodPost, ts.URL+BasePath+"/conversations", testSecret, nil)
		if err != nil {
			b.Fatal(err)
		}
		var started conversationResponse
		if err := json.Unmarshal(resp, &started); err != nil || started.Token == "" {
			b.Fatalf("POST conversations: %s", resp)
		}
		convs[i] = conv{started.ConversationID, started.Token}
	}
	body := []byte(`{"type":"message","from":{"id":"dl_user","name":"User"},"text":"Hello, I would like to check the status of my order.","locale":"en-US"}`)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := convs[int(next.Add(1))%conversations]
		url := ts.URL + BasePath + "/conversations/" + c.id + "/activities"
		for pb.Next() {
			if _, err := benchDo(hc, http.MethodPost, url, c.token, body); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchDo sends one request and returns the body of its 2xx answer.
func benchDo(hc *http.Client, method, url, auth string, body []byte) ([]byte, error) {
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+auth)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode/100 != 2 {
		err = fmt.Errorf("%s %s: HTTP %d %s", method, url, resp.StatusCode, data)
	}
	return data, err
}
