package stream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// benchEntries returns n stamped entries of one conversation, seq 1..n.
func benchEntries(n int) []store.Entry {
	out := make([]store.Entry, n)
	for i := range out {
		a := message("a typical reply of a few words")
		seq := uint64(i + 1)
		a.Stamp(activity.FormatID("c", seq), seq, "2026-01-01T00:00:00.000Z")
		out[i] = store.Entry{Seq: seq, Kind: store.KindActivity, Activity: a}
	}
	return out
}

// BenchmarkFanOut commits one entry per iteration to a conversation with N subscribers; the timer
// stops only after every subscriber has received every entry.
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run("subscribers="+strconv.Itoa(n), func(b *testing.B) {
			entries := benchEntries(b.N)
			hub := NewHub(newMemLog(), Options{QueueSize: b.N + 1})
			var wg sync.WaitGroup
			for range n {
				sub, err := hub.Subscribe("c", 0, true)
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer sub.Close()
					for {
						f, err := sub.Next(context.Background())
						if err != nil {
							b.Error(err)
							return
						}
						if f.Watermark == uint64(b.N) {
							return
						}
					}
				}()
			}
			b.ResetTimer()
			for i := range b.N {
				hub.OnCommit("c", entries[i:i+1])
			}
			wg.Wait()
		})
	}
}

// BenchmarkFanOutWebSocket is BenchmarkFanOut over real loopback WebSockets.
func BenchmarkFanOutWebSocket(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run("sockets="+strconv.Itoa(n), func(b *testing.B) {
			entries := benchEntries(b.N)
			hub := NewHub(newMemLog(), Options{QueueSize: b.N + 1})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hub.ServeWS(w, r, "c", 0, true, time.Time{})
			}))
			defer srv.Close()
			u := "ws" + strings.TrimPrefix(srv.URL, "http")
			var wg sync.WaitGroup
			for range n {
				ws, _, err := websocket.DefaultDialer.Dial(u, nil)
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer ws.Close()
					suffix := `"watermark":"` + strconv.Itoa(b.N) + `"}`
					for {
						_, data, err := ws.ReadMessage()
						if err != nil {
							b.Error(err)
							return
						}
						if strings.HasSuffix(string(data), suffix) {
							return
						}
					}
				}()
			}
			for hub.Connections() < n {
				runtime.Gosched()
			}
			b.ResetTimer()
			for i := range b.N {
				hub.OnCommit("c", entries[i:i+1])
			}
			wg.Wait()
			b.StopTimer()
			hub.Shutdown(context.Background())
		})
	}
}

// BenchmarkIdleStreamMemory opens idle streams and reports the heap and stack they hold, server
// and client ends together (the client side uses small buffers and no goroutine), so it bounds
// the server's per-stream footprint from above; the stack part is the server's alone.
func BenchmarkIdleStreamMemory(b *testing.B) {
	const streams = 1000
	for range b.N {
		b.StopTimer()
		hub := NewHub(newMemLog(), Options{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hub.ServeWS(w, r, r.URL.Query().Get("conv"), 0, false, time.Time{})
		}))
		u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/?conv="
		dialer := &websocket.Dialer{ReadBufferSize: 256, WriteBufferSize: 256}
		heap0, stack0 := memInUse()
		conns := make([]*websocket.Conn, 0, streams)
		for i := range streams {
			ws, _, err := dialer.Dial(u+strconv.Itoa(i), nil)
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, ws)
		}
		for hub.Connections() < streams {
			runtime.Gosched()
		}
		heap1, stack1 := memInUse()
		b.ReportMetric(float64(heap1-heap0+stack1-stack0)/streams, "bytes/stream")
		b.ReportMetric(float64(stack1-stack0)/streams, "stack-bytes/stream")
		for _, ws := range conns {
			ws.Close()
		}
		hub.Shutdown(context.Background())
		srv.Close()
	}
}

// memInUse returns heap and goroutine stack bytes in use after a full collection (which also
// shrinks oversized stacks).
func memInUse() (heap, stack int64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse), int64(m.StackInuse)
}
