package stream

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

func TestFrameMarshalJSON(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame Frame
		want  string
	}{
		{"one activity", Frame{Activities: []json.RawMessage{json.RawMessage(`{"type":"message"}`)}, Watermark: 7}, `{"activities":[{"type":"message"}],"watermark":"7"}`},
		{"two activities", Frame{Activities: []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"b":2}`)}, Watermark: 12}, `{"activities":[{"a":1},{"b":2}],"watermark":"12"}`},
		{"no activities", Frame{Watermark: 3}, `{"activities":[],"watermark":"3"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.frame)
			if err != nil || string(b) != tc.want {
				t.Fatalf("got %s, %v; want %s", b, err, tc.want)
			}
		})
	}
}

// next reads frames from sub until the watermark reaches upTo and returns the sequence ids.
func next(t *testing.T, sub *Subscription, upTo uint64) []uint64 {
	t.Helper()
	var out []uint64
	for len(out) == 0 || out[len(out)-1] < upTo {
		f, err := sub.Next(context.Background())
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if len(f.Activities) == 0 || len(f.Activities) > maxFrameActivities {
			t.Fatalf("frame with %d activities", len(f.Activities))
		}
		for _, raw := range f.Activities {
			var a struct {
				ChannelData map[string]uint64 `json:"channelData"`
			}
			if err := json.Unmarshal(raw, &a); err != nil {
				t.Fatal(err)
			}
			out = append(out, a.ChannelData["webchat:sequence-id"])
		}
		if f.Watermark != out[len(out)-1] {
			t.Fatalf("watermark %d, last seq %d", f.Watermark, out[len(out)-1])
		}
	}
	return out
}

// R08 step 6: a subscription without a watermark replays the whole history; with one, only what
// follows it. Long histories come in frames of at most 100 activities.
func TestSubscribeWatermarkR08(t *testing.T) {
	for _, tc := range []struct {
		name      string
		watermark uint64
		has       bool
		want      []uint64
	}{
		{"no watermark", 7, false, seqRange(1, 251)},
		{"watermark 0", 0, true, seqRange(1, 251)},
		{"watermark 1", 1, true, seqRange(2, 251)},
		{"watermark 249", 249, true, []uint64{250, 251}},
		{"up to date", 250, true, []uint64{251}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := newMemLog()
			hub := NewHub(log, Options{})
			log.hook = hub.OnCommit
			for range 250 {
				log.append("c", message("m"), false)
			}
			sub, err := hub.Subscribe("c", tc.watermark, tc.has)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			log.append("c", message("live"), false)
			if got := next(t, sub, 251); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// commitDuring is a History that commits entries just before a read, as a writer racing the
// subscription would: registered already, so the hub queues them live while history may see them.
type commitDuring struct {
	log    *memLog
	before func()
}

func (c *commitDuring) ReadAfter(ctx context.Context, conv string, wm uint64, limit int) ([]store.Entry, uint64, error) {
	if f := c.before; f != nil {
		c.before = nil
		f()
	}
	return c.log.ReadAfter(ctx, conv, wm, limit)
}

// Regression: typing committed between registration and the history read was skipped by history
// and, being below the last history entry, dropped from the live queue too.
func TestTypingCommittedDuringReplayIsDelivered(t *testing.T) {
	log := newMemLog()
	h := &commitDuring{log: log}
	hub := NewHub(h, Options{})
	log.hook = hub.OnCommit
	log.append("c", message("old"), false) // 1
	h.before = func() {
		log.append("c", typing(), true)        // 2
		log.append("c", message("new"), false) // 3
	}
	sub, err := hub.Subscribe("c", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if got := next(t, sub, 3); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("got %v, want [1 2 3]", got)
	}
}

// An entry history already returned is not sent again when its commit hook runs late.
func TestLateCommitHookNoDuplicate(t *testing.T) {
	log := newMemLog()
	var late []store.Entry
	h := &commitDuring{log: log}
	hub := NewHub(h, Options{})
	log.append("c", message("a"), false) // 1, no hook: committed before the subscription
	h.before = func() {
		late = append(late, log.append("c", message("b"), false)) // 2: committed, hook pending
	}
	sub, err := hub.Subscribe("c", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if got := next(t, sub, 2); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("history %v, want [1 2]", got)
	}
	hub.OnCommit("c", late)
	log.hook = hub.OnCommit
	log.append("c", message("c"), false) // 3
	if got := next(t, sub, 3); !slices.Equal(got, []uint64{3}) {
		t.Fatalf("live %v, want [3] (2 only once)", got)
	}
}

// OnCommit hands several entries at once: they go out in frames of at most 100 activities, the
// watermark of each being its last entry.
func TestBatchedCommitSplitIntoFrames(t *testing.T) {
	log := newMemLog()
	hub := NewHub(log, Options{QueueSize: 1000})
	sub, err := hub.Subscribe("c", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var batch []store.Entry
	for range 250 {
		batch = append(batch, log.append("c", message("m"), false))
	}
	hub.OnCommit("c", batch)
	if got := next(t, sub, 250); !slices.Equal(got, seqRange(1, 250)) {
		t.Fatalf("got %v", got)
	}
}

// Large activities are split into frames of about 64 KiB, one activity per frame at least.
func TestLargeActivitiesSplitBySize(t *testing.T) {
	log := newMemLog()
	hub := NewHub(log, Options{})
	log.hook = hub.OnCommit
	big := strings.Repeat("x", 40<<10)
	for range 5 {
		log.append("c", message(big), false)
	}
	sub, err := hub.Subscribe("c", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for want := uint64(1); want <= 5; want++ {
		f, err := sub.Next(context.Background())
		if err != nil || len(f.Activities) != 1 || f.Watermark != want {
			t.Fatalf("frame %d: %d activities, watermark %d, %v", want, len(f.Activities), f.Watermark, err)
		}
	}
}

func TestSubscriptionEnds(t *testing.T) {
	log := newMemLog()
	hub := NewHub(log, Options{QueueSize: 2})
	log.hook = hub.OnCommit

	closed, _ := hub.Subscribe("c", 0, false)
	slow, _ := hub.Subscribe("c", 0, false)
	if n := hub.Subscribers("c"); n != 2 {
		t.Fatalf("subscribers %d", n)
	}
	closed.Close()
	closed.Close()
	if _, err := closed.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	for range 3 {
		log.append("c", message("m"), false)
	}
	if _, err := slow.Next(context.Background()); !errors.Is(err, ErrSlowConsumer) {
		t.Fatalf("Next after overflow: %v", err)
	}
	if n := hub.Subscribers("c"); n != 0 {
		t.Fatalf("subscribers after close and overflow %d", n)
	}

	log.readErr = errors.New("disk on fire")
	broken, _ := hub.Subscribe("c", 0, false)
	var herr *HistoryError
	if _, err := broken.Next(context.Background()); !errors.As(err, &herr) {
		t.Fatalf("Next with failing history: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	log.readErr = nil
	waiting, _ := hub.Subscribe("d", 0, false)
	if _, err := waiting.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next with cancelled context: %v", err)
	}
	if err := hub.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := waiting.Next(context.Background()); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Next after Shutdown: %v", err)
	}
}

// A typing entry at or below what was already sent is not sent when its commit hook runs late:
// it would go out of seq order (the client's watermark would move backwards).
func TestLateTypingBelowWatermarkDropped(t *testing.T) {
	for _, tc := range []struct {
		name      string
		watermark uint64
		has       bool
	}{
		{"below the starting watermark", 2, true},
		{"below the last history entry", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := newMemLog()
			hub := NewHub(log, Options{})
			log.append("c", message("a"), false)                   // 1
			late := []store.Entry{log.append("c", typing(), true)} // 2, hook pending
			log.append("c", message("b"), false)                   // 3, hook pending
			sub, err := hub.Subscribe("c", tc.watermark, tc.has)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if tc.watermark < 3 {
				want := []uint64{1, 3}[min(tc.watermark, 1):]
				if got := next(t, sub, 3); !slices.Equal(got, want) {
					t.Fatalf("history %v, want %v", got, want)
				}
			}
			hub.OnCommit("c", late)
			log.hook = hub.OnCommit
			log.append("c", message("c"), false) // 4
			if got := next(t, sub, 4); !slices.Equal(got, []uint64{4}) {
				t.Fatalf("live %v, want [4]", got)
			}
		})
	}
}

// A live entry that carries the store's encoding (store.Entry.JSON) goes out as those bytes; one
// without is encoded from its activity.
func TestLiveEntryJSONSentAsIs(t *testing.T) {
	log := newMemLog()
	hub := NewHub(log, Options{})
	sub, err := hub.Subscribe("c", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	withJSON := log.append("c", message("a"), false)
	withJSON.JSON = []byte(`{"type":"message","text":"as the store encoded it"}`)
	plain := log.append("c", message("b"), false)
	want, err := activity.Encode(plain.Activity)
	if err != nil {
		t.Fatal(err)
	}
	hub.OnCommit("c", []store.Entry{withJSON, plain})
	f, err := sub.Next(context.Background())
	if err != nil || len(f.Activities) != 2 || f.Watermark != 2 {
		t.Fatalf("frame %+v, %v", f, err)
	}
	if string(f.Activities[0]) != string(withJSON.JSON) || string(f.Activities[1]) != string(want) {
		t.Fatalf("frame activities %s and %s, want %s and %s", f.Activities[0], f.Activities[1], withJSON.JSON, want)
	}
}
