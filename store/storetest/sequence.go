package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

const (
	writers         = 64
	appendsPerWrite = 8
)

// testContiguityOneConversation: 64 concurrent writers to one conversation get seqs 1..N with
// no holes or reuse, and each caller's result is what was stored (field case R03-A).
func testContiguityOneConversation(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	createConversation(t, s, "one")
	results := make([][]store.AppendResult, writers)
	parallel(writers, func(w int) {
		for i := range appendsPerWrite {
			a := message(fmt.Sprintf("w%d-%d", w, i), "")
			if i%4 == 3 {
				a = typing()
				a.Text = fmt.Sprintf("w%d-%d", w, i)
			}
			r, err := s.Append(context.Background(), "one", a)
			if err != nil {
				t.Errorf("Append: %v", err)
				return
			}
			results[w] = append(results[w], r)
		}
	})
	if t.Failed() {
		return
	}
	log := checkLog(t, s, "one", writers*appendsPerWrite)
	byText := map[string]store.Entry{}
	for _, e := range log {
		if _, dup := byText[e.Activity.Text]; dup {
			t.Fatalf("%q stored twice", e.Activity.Text)
		}
		byText[e.Activity.Text] = e
	}
	for w, rs := range results {
		var prev uint64
		for _, r := range rs {
			if r.Duplicate {
				t.Errorf("writer %d: Duplicate set without a clientActivityID", w)
			}
			if r.Seq <= prev {
				t.Errorf("writer %d: seq %d after %d: one writer's appends must be in its order", w, r.Seq, prev)
			}
			prev = r.Seq
			stored := byText[r.Activity.Text]
			if stored.Seq != r.Seq || stored.Activity.ID != r.Activity.ID || stored.Activity.Timestamp != r.Activity.Timestamp {
				t.Errorf("result %+v differs from stored seq %d id %q ts %q", r.Entry, stored.Seq, stored.Activity.ID, stored.Activity.Timestamp)
			}
			if r.Ephemeral != r.Activity.IsTyping() || stored.Ephemeral != r.Ephemeral {
				t.Errorf("seq %d: ephemeral result %v stored %v, want %v", r.Seq, r.Ephemeral, stored.Ephemeral, r.Activity.IsTyping())
			}
		}
	}
}

// testContiguityManyConversations: 64 concurrent writers spread over many conversations; each
// conversation's log is exactly 1..k.
func testContiguityManyConversations(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	const convs = 24
	for c := range convs {
		createConversation(t, s, fmt.Sprintf("c%02d", c))
	}
	var counts [convs]atomic.Int64
	parallel(writers, func(w int) {
		for i := range appendsPerWrite {
			c := (w*7 + i*5) % convs
			if _, err := s.Append(context.Background(), fmt.Sprintf("c%02d", c), message(fmt.Sprintf("w%d-%d", w, i), "")); err != nil {
				t.Errorf("Append: %v", err)
				return
			}
			counts[c].Add(1)
		}
	})
	if t.Failed() {
		return
	}
	total := 0
	for c := range convs {
		n := int(counts[c].Load())
		total += n
		checkLog(t, s, fmt.Sprintf("c%02d", c), n)
	}
	if total != writers*appendsPerWrite {
		t.Fatalf("appended %d, want %d", total, writers*appendsPerWrite)
	}
}

// testFrozenClock (field case R02-A): with the clock frozen, back-to-back activities still get
// strictly increasing seqs and timestamps at least 1 ms apart.
func testFrozenClock(t *testing.T, f Factory) {
	frozen := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	s, _ := open(t, f, Config{Now: func() time.Time { return frozen }})
	createConversation(t, s, "r02")
	var got []string
	for _, text := range []string{"x1", "x2", "x3"} {
		r := appendOK(t, s, "r02", message(text, ""))
		got = append(got, fmt.Sprintf("%s seq=%d ts=%s", text, r.Seq, r.Activity.Timestamp))
	}
	want := []string{
		"x1 seq=1 ts=2024-05-01T10:00:00.000Z",
		"x2 seq=2 ts=2024-05-01T10:00:00.001Z",
		"x3 seq=3 ts=2024-05-01T10:00:00.002Z",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	parallel(writers, func(w int) {
		if _, err := s.Append(context.Background(), "r02", message(fmt.Sprintf("w%d", w), "")); err != nil {
			t.Errorf("Append: %v", err)
		}
	})
	log := checkLog(t, s, "r02", 3+writers)
	last := log[len(log)-1].Activity.Timestamp
	if want := activity.FormatTimestamp(frozen.Add(time.Duration(len(log)-1) * time.Millisecond)); last != want {
		t.Errorf("last timestamp %s, want %s (1 ms steps)", last, want)
	}
}

// testClockGoesBack: a clock that jumps back (NTP step) or has sub-millisecond resolution never
// makes timestamps repeat or decrease along seq (DESIGN invariant 2).
func testClockGoesBack(t *testing.T, f Factory) {
	base := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	var (
		mu  sync.Mutex
		now = base
	)
	s, _ := open(t, f, Config{Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}})
	createConversation(t, s, "skew")
	for _, tc := range []struct {
		clock time.Duration
		want  string
	}{
		{400 * time.Microsecond, "2024-05-01T10:00:00.000Z"},
		{700 * time.Microsecond, "2024-05-01T10:00:00.001Z"}, // same millisecond
		{5 * time.Second, "2024-05-01T10:00:05.000Z"},
		{-time.Hour, "2024-05-01T10:00:05.001Z"}, // clock stepped back
		{5*time.Second + 500*time.Microsecond, "2024-05-01T10:00:05.002Z"},
		{10 * time.Second, "2024-05-01T10:00:10.000Z"},
	} {
		mu.Lock()
		now = base.Add(tc.clock)
		mu.Unlock()
		if got := appendOK(t, s, "skew", message("m", "")).Activity.Timestamp; got != tc.want {
			t.Errorf("clock at %v: timestamp %s, want %s", tc.clock, got, tc.want)
		}
	}
}

// testIdempotentResend (DESIGN invariant 6, field case R07): a resend with the same
// clientActivityID answers with the original entry, stores nothing and reaches no commit hook.
func testIdempotentResend(t *testing.T, f Factory) {
	var hooked atomic.Int64
	s, _ := open(t, f, Config{OnCommit: func(_ string, es []store.Entry) { hooked.Add(int64(len(es))) }})
	createConversation(t, s, "a")
	createConversation(t, s, "b")
	first := appendOK(t, s, "a", message("hello", "c1"))
	appendOK(t, s, "a", message("other", "c2"))
	resend := appendOK(t, s, "a", message("hello again", "c1"))
	if !resend.Duplicate || first.Duplicate {
		t.Fatalf("Duplicate: first %v, resend %v; want false, true", first.Duplicate, resend.Duplicate)
	}
	if resend.Seq != first.Seq || resend.Activity.ID != first.Activity.ID || resend.Activity.Timestamp != first.Activity.Timestamp {
		t.Errorf("resend answered seq %d id %q ts %q, want the original's seq %d id %q ts %q",
			resend.Seq, resend.Activity.ID, resend.Activity.Timestamp, first.Seq, first.Activity.ID, first.Activity.Timestamp)
	}
	if resend.Activity.Text != "hello" {
		t.Errorf("resend answered text %q, want the original's %q", resend.Activity.Text, "hello")
	}
	if sid, ok := resend.Activity.SequenceID(); !ok || sid != first.Seq {
		t.Errorf("resend sequence id %d %v, want %d", sid, ok, first.Seq)
	}
	checkLog(t, s, "a", 2)
	// clientActivityID is scoped to the conversation.
	other := appendOK(t, s, "b", message("hello", "c1"))
	if other.Duplicate || other.Seq != 1 {
		t.Errorf("same clientActivityID in another conversation: seq %d duplicate %v, want 1 false", other.Seq, other.Duplicate)
	}
	// Close waits for in-flight commits, so every hook call has happened by then.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := hooked.Load(); n != 3 {
		t.Errorf("commit hook saw %d entries, want 3 (resends are not entries)", n)
	}
}

// testConcurrentResend: many concurrent sends of one clientActivityID store it once.
func testConcurrentResend(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	createConversation(t, s, "r")
	results := make([]store.AppendResult, 32)
	parallel(len(results), func(i int) {
		r, err := s.Append(context.Background(), "r", message(fmt.Sprintf("try %d", i), "same"))
		if err != nil {
			t.Errorf("Append: %v", err)
		}
		results[i] = r
	})
	originals := 0
	for _, r := range results {
		if !r.Duplicate {
			originals++
		}
		if r.Seq != 1 || r.Activity.ID != activity.FormatID("r", 1) {
			t.Errorf("seq %d id %q, want 1 %q", r.Seq, r.Activity.ID, activity.FormatID("r", 1))
		}
	}
	if originals != 1 {
		t.Errorf("%d results not marked Duplicate, want 1", originals)
	}
	checkLog(t, s, "r", 1)
}

// testCommitHook: the hook gets every new entry (activities and revisions) once, in seq order
// per conversation, never concurrently, matching what was stored; it never sees resends.
func testCommitHook(t *testing.T, f Factory) {
	var (
		mu       sync.Mutex
		got      = map[string][]store.Entry{}
		inflight atomic.Int32
	)
	hook := func(conv string, es []store.Entry) {
		if inflight.Add(1) != 1 {
			t.Errorf("commit hook called concurrently")
		}
		defer inflight.Add(-1)
		mu.Lock()
		defer mu.Unlock()
		got[conv] = append(got[conv], es...)
	}
	s, _ := open(t, f, Config{OnCommit: hook})
	const convs = 6
	for c := range convs {
		createConversation(t, s, fmt.Sprintf("h%d", c))
	}
	parallel(writers, func(w int) {
		conv := fmt.Sprintf("h%d", w%convs)
		for i := range 4 {
			var (
				r   store.AppendResult
				err error
			)
			if i == 3 {
				r, err = s.Append(context.Background(), conv, typing())
			} else {
				r, err = s.Append(context.Background(), conv, message(fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("w%d-%d", w, i%2)))
			}
			if err != nil {
				t.Errorf("Append: %v", err)
				return
			}
			if i == 2 {
				if _, err := s.Update(context.Background(), conv, r.Activity.ID, message("revised", "")); err != nil {
					t.Errorf("Update: %v", err)
				}
			}
		}
	})
	logs := map[string][]store.Entry{}
	for c := range convs {
		conv := fmt.Sprintf("h%d", c)
		logs[conv] = readLog(t, s, conv)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for conv, log := range logs {
		hooked := got[conv]
		if !slices.Equal(seqs(hooked), seqs(log)) {
			t.Errorf("%s: hook saw seqs %v, log has %v", conv, seqs(hooked), seqs(log))
			continue
		}
		for i, e := range hooked {
			if e.Kind != log[i].Kind || e.Ephemeral != log[i].Ephemeral || mustJSON(t, e.Activity) != mustJSON(t, log[i].Activity) {
				t.Errorf("%s seq %d: hook saw %s, log has %s", conv, e.Seq, mustJSON(t, e.Activity), mustJSON(t, log[i].Activity))
			}
		}
	}
}
