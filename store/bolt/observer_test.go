package bolt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/directline-go/directline/store"
)

// commitRecorder is an Observer that keeps every report.
type commitRecorder struct {
	mu      sync.Mutex
	commits []commitReport
}

type commitReport struct {
	requests, entries int
	took              time.Duration
}

func (r *commitRecorder) Committed(requests, entries int, d time.Duration) {
	r.mu.Lock()
	r.commits = append(r.commits, commitReport{requests, entries, d})
	r.mu.Unlock()
}

func (r *commitRecorder) totals() (commits, requests, entries int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.commits {
		requests += c.requests
		entries += c.entries
	}
	return len(r.commits), requests, entries
}

// TestObserverCountsWritesAndEntries: every durable write transaction is reported once, with
// the writes it grouped and the log entries it appended; writes that fail on their own input
// count as writes without entries.
func TestObserverCountsWritesAndEntries(t *testing.T) {
	rec := &commitRecorder{}
	s := openConversation(t, Options{Observer: rec}, "c")
	ctx := context.Background()
	if _, _, entries := rec.totals(); entries != 0 {
		t.Fatalf("creating a conversation appended %d entries, want 0", entries)
	}
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := s.Append(ctx, "c", message(fmt.Sprintf("w%d-%d", w, i), "")); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	res, err := s.Append(ctx, "c", message("to revise", ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "c", res.Entry.Activity.ID, message("revised", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "missing", message("lost", "")); !errors.Is(err, store.ErrConversationNotFound) {
		t.Fatalf("append to a missing conversation: %v", err)
	}

	commits, requests, entries := rec.totals()
	// create + appends + append + update + failed append
	if wantReq := 1 + writers*each + 1 + 1 + 1; requests != wantReq {
		t.Errorf("requests reported = %d, want %d", requests, wantReq)
	}
	if wantEntries := writers*each + 2; entries != wantEntries {
		t.Errorf("entries reported = %d, want %d (activities and the revision)", entries, wantEntries)
	}
	if got := int(s.commits.Load()); commits != got {
		t.Errorf("%d commits reported, the writer ran %d", commits, got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, c := range rec.commits {
		if c.requests < 1 || c.requests > maxBatch || c.took < 0 {
			t.Errorf("implausible report %+v", c)
		}
	}
}
