package directline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/stream"
	"github.com/directline-go/directline/store"
	"github.com/directline-go/directline/store/bolt"
)

// nearEndWindow is how many activities before the end the GET's watermark sits: a client
// catching up after a short disconnect.
const nearEndWindow = 20

// BenchmarkGetActivitiesNearEnd measures Direct Line 3.0 GET activities with a watermark
// nearEndWindow activities before the end of a conversation of 100, 10k or 1M activities, over
// HTTP on loopback. The time should not depend on the length of the history before the
// watermark (store.Store.ReadAfter seeks). The history is written through the store without
// fsync to keep the set-up short; reads do not depend on it. ns/op is one GET; activities/op is
// what it returned.
func BenchmarkGetActivitiesNearEnd(b *testing.B) {
	dir := b.TempDir()
	for _, size := range []struct {
		name string
		n    int
	}{{"100", 100}, {"10k", 10_000}, {"1M", 1_000_000}} {
		var ge *getEndEnv
		b.Run("activities="+size.name, func(b *testing.B) {
			if ge == nil {
				ge = newGetEndEnv(b, filepath.Join(dir, size.name+".db"), size.n)
			}
			url := fmt.Sprintf("%s%s/conversations/%s/activities?watermark=%d", ge.ts.URL, BasePath, ge.conv, size.n-nearEndWindow)
			var returned int
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				returned = ge.get(b, url)
			}
			b.ReportMetric(float64(returned), "activities/op")
		})
		if ge != nil {
			ge.close()
		}
	}
}

// getEndEnv is a service over a store holding one conversation of n activities.
type getEndEnv struct {
	ts   *httptest.Server
	st   *bolt.Store
	hub  *stream.Hub
	conv string
	hc   *http.Client
}

func newGetEndEnv(b *testing.B, path string, n int) *getEndEnv {
	key, err := LoadOrCreateKey(path + ".key")
	if err != nil {
		b.Fatal(err)
	}
	var hub *stream.Hub
	st, err := bolt.Open(path, bolt.Options{NoSync: true, OnCommit: func(c string, entries []store.Entry) { hub.OnCommit(c, entries) }})
	if err != nil {
		b.Fatal(err)
	}
	hub = stream.NewHub(st, stream.Options{})
	ge := &getEndEnv{st: st, hub: hub, hc: &http.Client{Timeout: 30 * time.Second}}
	ge.ts = httptest.NewUnstartedServer(nil)
	srv, err := New(Options{
		Store: st, Hub: hub, PublicURL: "http://" + ge.ts.Listener.Addr().String(),
		Secrets: []string{testSecret}, SigningKey: key,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	ge.ts.Config.Handler = srv
	ge.ts.Start()

	req, _ := http.NewRequest(http.MethodPost, ge.ts.URL+BasePath+"/conversations", nil)
	req.Header.Set("Authorization", "Bearer "+testSecret)
	resp, err := ge.hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	var started struct {
		ConversationID string `json:"conversationId"`
	}
	err = json.NewDecoder(resp.Body).Decode(&started)
	resp.Body.Close()
	if err != nil || started.ConversationID == "" {
		b.Fatalf("POST conversations: HTTP %d, %v", resp.StatusCode, err)
	}
	ge.conv = started.ConversationID
	ge.fill(b, n)
	return ge
}

// fill appends n user messages from many writers, so that group commit packs them into few
// transactions.
func (ge *getEndEnv) fill(b *testing.B, n int) {
	proto := &activity.Activity{
		Type: activity.TypeMessage, Text: "Hello, I would like to check the status of my order.",
		From: &activity.ChannelAccount{ID: "dl_user", Name: "User", Role: activity.RoleUser},
	}
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 256 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := ge.st.Append(ctx, ge.conv, proto.Clone()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// get does one GET activities and returns the number of activities in the ActivitySet.
func (ge *getEndEnv) get(b *testing.B, url string) int {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+testSecret)
	resp, err := ge.hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct {
		Activities []json.RawMessage `json:"activities"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET activities: HTTP %d, %v", resp.StatusCode, err)
	}
	return len(set.Activities)
}

func (ge *getEndEnv) close() {
	ge.ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ge.hub.Shutdown(ctx)
	_ = ge.st.Close()
}
