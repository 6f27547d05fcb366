// Package storetest is the contract every store.Store implementation must pass: call Run from
// the implementation's tests. Test names say which DESIGN invariant or field case they guard.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// Config is what the suite asks of a store it opens.
type Config struct {
	// OnCommit is the commit hook to install; nil for none.
	OnCommit store.CommitHook
	// Now is the clock for timestamps; nil for the real clock.
	Now func() time.Time
}

// Factory opens the implementation under test.
type Factory struct {
	// Open opens the store whose data lives in directory dir with cfg, failing t on error. dir is
	// either empty (a new store) or was used by a store that has since been closed, which must
	// find its data again (reopen).
	Open func(t testing.TB, dir string, cfg Config) store.Store
}

// Run runs the contract suite against f.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f Factory)
	}{
		{"Conversations", testConversations},
		{"UpdateConversationConcurrent", testUpdateConversationConcurrent},
		{"Invariant1_ContiguityOneConversation", testContiguityOneConversation},
		{"Invariant1_ContiguityManyConversations", testContiguityManyConversations},
		{"Invariant2_FrozenClock_R02", testFrozenClock},
		{"Invariant2_ClockGoesBack", testClockGoesBack},
		{"Invariant3_Lossless_R22", testLossless},
		{"Invariant3_CallerActivityUnchanged", testCallerActivityUnchanged},
		{"Invariant5_ReopenKeepsEverything", testReopen},
		{"Invariant6_IdempotentResend_R07", testIdempotentResend},
		{"Invariant6_ConcurrentResend", testConcurrentResend},
		{"Invariant7_ReadAfter", testReadAfter},
		{"Invariant7_ReadAfterPaging", testReadAfterPaging},
		{"Invariant7_TailWhileWriting", testTailWhileWriting},
		{"Invariant8_TypingNotReplayed_R24", testTypingNotReplayed},
		{"Invariant9_Update_R12", testUpdate},
		{"Delete_R12", testDelete},
		{"LongHistory", testLongHistory},
		{"CommitHook", testCommitHook},
		{"AppendIf", testAppendIf},
		{"AppendIfConcurrent", testAppendIfConcurrent},
		{"Attachments", testAttachments},
		{"UnknownConversation", testUnknownConversation},
		{"Closed", testClosed},
		{"ContextCancelled", testContextCancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, f) })
	}
}

// open opens a new store in a fresh directory and closes it when the test ends.
func open(t *testing.T, f Factory, cfg Config) (store.Store, string) {
	t.Helper()
	dir := t.TempDir()
	return reopen(t, f, dir, cfg), dir
}

func reopen(t *testing.T, f Factory, dir string, cfg Config) store.Store {
	t.Helper()
	s := f.Open(t, dir, cfg)
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func createConversation(t testing.TB, s store.Store, id string) store.Conversation {
	t.Helper()
	c, created, err := s.CreateConversation(context.Background(), store.Conversation{ID: id})
	if err != nil || !created {
		t.Fatalf("CreateConversation(%q) = created %v, %v", id, created, err)
	}
	return c
}

func message(text, clientActivityID string) *activity.Activity {
	a := &activity.Activity{Type: activity.TypeMessage, Text: text, From: &activity.ChannelAccount{ID: "u1", Role: activity.RoleUser}}
	if clientActivityID != "" {
		a.SetChannelData(activity.KeyClientActivityID, jsonString(clientActivityID))
	}
	return a
}

func typing() *activity.Activity {
	return &activity.Activity{Type: activity.TypeTyping, From: &activity.ChannelAccount{ID: "bot", Role: activity.RoleBot}}
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func appendOK(t testing.TB, s store.Store, conv string, a *activity.Activity) store.AppendResult {
	t.Helper()
	r, err := s.Append(context.Background(), conv, a)
	if err != nil {
		t.Fatalf("Append(%q): %v", conv, err)
	}
	return r
}

func readAfter(t testing.TB, s store.Store, conv string, watermark uint64, limit int) ([]store.Entry, uint64) {
	t.Helper()
	es, wm, err := s.ReadAfter(context.Background(), conv, watermark, limit)
	if err != nil {
		t.Fatalf("ReadAfter(%q, %d, %d): %v", conv, watermark, limit, err)
	}
	return es, wm
}

func readLog(t testing.TB, s store.Store, conv string) []store.Entry {
	t.Helper()
	es, err := s.ReadLog(context.Background(), conv, 0, 0)
	if err != nil {
		t.Fatalf("ReadLog(%q): %v", conv, err)
	}
	return es
}

func lastSeq(t testing.TB, s store.Store, conv string) uint64 {
	t.Helper()
	c, err := s.Conversation(context.Background(), conv)
	if err != nil {
		t.Fatalf("Conversation(%q): %v", conv, err)
	}
	return c.LastSeq
}

var timestampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// checkStamp checks the keys Append puts on an activity created at seq (DESIGN invariants 2, 4).
func checkStamp(t testing.TB, conv string, seq uint64, a *activity.Activity) time.Time {
	t.Helper()
	if want := activity.FormatID(conv, seq); a.ID != want {
		t.Errorf("seq %d: id %q, want %q", seq, a.ID, want)
	}
	raw := a.ChannelData[activity.KeySequenceID]
	if want := strconv.FormatUint(seq, 10); string(raw) != want {
		t.Errorf("seq %d: channelData[%q] = %s, want the JSON integer %s", seq, activity.KeySequenceID, raw, want)
	}
	if !timestampRE.MatchString(a.Timestamp) {
		t.Errorf("seq %d: timestamp %q is not UTC with 3 fractional digits", seq, a.Timestamp)
	}
	ts, err := activity.ParseTimestamp(a.Timestamp)
	if err != nil {
		t.Errorf("seq %d: timestamp %q: %v", seq, a.Timestamp, err)
	}
	return ts
}

// checkLog checks a conversation's raw log: seqs exactly 1..n, each KindActivity entry stamped
// with its seq, timestamps strictly increasing along seq (DESIGN invariants 1, 2, 4). It
// returns the log.
func checkLog(t testing.TB, s store.Store, conv string, n int) []store.Entry {
	t.Helper()
	log := readLog(t, s, conv)
	if len(log) != n {
		t.Fatalf("%s: log has %d entries, want %d", conv, len(log), n)
	}
	var prev time.Time
	for i, e := range log {
		if e.Seq != uint64(i+1) {
			t.Fatalf("%s: entry %d has seq %d, want %d (hole or reuse)", conv, i, e.Seq, i+1)
		}
		if e.Kind != store.KindActivity {
			continue
		}
		ts := checkStamp(t, conv, e.Seq, e.Activity)
		if !ts.After(prev) {
			t.Errorf("%s: timestamp at seq %d (%s) does not increase", conv, e.Seq, e.Activity.Timestamp)
		}
		prev = ts
	}
	if got := lastSeq(t, s, conv); got != uint64(n) {
		t.Errorf("%s: LastSeq %d, want %d", conv, got, n)
	}
	return log
}

// seqs lists the seqs of entries.
func seqs(es []store.Entry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

// texts lists the texts of entries' activities.
func texts(es []store.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Activity.Text
	}
	return out
}

// parallel runs fn(i) for i in [0, n) on n goroutines and waits.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}
