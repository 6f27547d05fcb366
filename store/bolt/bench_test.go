package bolt

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

var benchNoSync = flag.Bool("nosync", false, "benchmarks: commit without fsync, to separate CPU cost from disk latency")

// BenchmarkAppend measures durable appends (fsync on) from a fixed number of concurrent writers,
// to one conversation or spread over many, and reports appends/s. b.N is the total number of
// appends across writers.
func BenchmarkAppend(b *testing.B) {
	for _, writers := range []int{1, 64, 256} {
		for _, target := range []string{"many", "one"} {
			b.Run(fmt.Sprintf("writers=%d/conversations=%s", writers, target), func(b *testing.B) {
				benchmarkAppend(b, writers, target == "many")
			})
		}
	}
}

func benchmarkAppend(b *testing.B, writers int, many bool) {
	var commitTime commitTimer
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{NoSync: *benchNoSync, Observer: &commitTime})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	convs := 1
	if many {
		convs = writers
	}
	for c := range convs {
		if _, _, err := s.CreateConversation(ctx, store.Conversation{ID: fmt.Sprintf("conv-%04d", c)}); err != nil {
			b.Fatal(err)
		}
	}
	// A typical Web Chat message: text, from, localTimestamp and a clientActivityID.
	proto := &activity.Activity{
		Type: activity.TypeMessage, Text: "Hello, I would like to check the status of my order.",
		From:  &activity.ChannelAccount{ID: "dl_user", Name: "User", Role: activity.RoleUser},
		Extra: map[string]json.RawMessage{"localTimestamp": json.RawMessage(`"2024-05-01T19:00:00.123+09:00"`), "locale": json.RawMessage(`"en-US"`)},
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	commitsBefore, writesBefore := s.commits.Load(), pageWrites(s)
	commitTime.reset()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv := fmt.Sprintf("conv-%04d", w%convs)
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				a := proto.Clone()
				a.SetChannelData(activity.KeyClientActivityID, json.RawMessage(fmt.Sprintf(`"c-%d"`, i)))
				if _, err := s.Append(ctx, conv, a); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
	b.ReportMetric(float64(b.N)/float64(s.commits.Load()-commitsBefore), "appends/commit")
	// Page writes per append: what fsync has to push to disk, independent of the disk's speed.
	b.ReportMetric(float64(pageWrites(s)-writesBefore)/float64(b.N), "pages/append")
	// bbolt's commit of one transaction (page writes and fsync): on a shared disk this moves
	// appends/s more than anything the store does.
	b.ReportMetric(commitTime.mean().Seconds()*1000, "commit-ms")
}

// commitTimer is an Observer that averages commit durations.
type commitTimer struct {
	mu    sync.Mutex
	n     int
	total time.Duration
}

func (c *commitTimer) Committed(_, _ int, d time.Duration) {
	c.mu.Lock()
	c.n++
	c.total += d
	c.mu.Unlock()
}

func (c *commitTimer) reset() {
	c.mu.Lock()
	c.n, c.total = 0, 0
	c.mu.Unlock()
}

func (c *commitTimer) mean() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return 0
	}
	return c.total / time.Duration(c.n)
}

func pageWrites(s *Store) int64 {
	st := s.db.Stats()
	return st.TxStats.GetWrite()
}
