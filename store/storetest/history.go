package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// testReadAfter: the history after a watermark, the watermark answered, and limits (DESIGN
// invariants 7 and 8). Log: 1 m1, 2 typing, 3 m2, 4 typing, 5 typing.
func testReadAfter(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	createConversation(t, s, "ra")
	appendOK(t, s, "ra", message("m1", ""))
	appendOK(t, s, "ra", typing())
	appendOK(t, s, "ra", message("m2", ""))
	appendOK(t, s, "ra", typing())
	appendOK(t, s, "ra", typing())
	for _, tc := range []struct {
		name      string
		watermark uint64
		limit     int
		wantSeqs  []uint64
		wantWM    uint64
	}{
		{"from start", 0, 100, []uint64{1, 3}, 5},
		{"no limit", 0, 0, []uint64{1, 3}, 5},
		{"limit 1 stops at the entry returned", 0, 1, []uint64{1}, 1},
		{"typing skipped but covered", 1, 1, []uint64{3}, 3},
		{"only typing left: watermark is LastSeq", 3, 10, []uint64{}, 5},
		{"at the end", 5, 10, []uint64{}, 5},
		{"watermark ahead of the log answers LastSeq", 9, 10, []uint64{}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es, wm := readAfter(t, s, "ra", tc.watermark, tc.limit)
			if got := seqs(es); !slices.Equal(got, tc.wantSeqs) || wm != tc.wantWM {
				t.Fatalf("ReadAfter(%d, %d) = %v, watermark %d; want %v, %d", tc.watermark, tc.limit, got, wm, tc.wantSeqs, tc.wantWM)
			}
			for _, e := range es {
				if e.Ephemeral || e.Kind != store.KindActivity || e.Activity.IsTyping() {
					t.Errorf("seq %d: ephemeral %v kind %d type %q in history", e.Seq, e.Ephemeral, e.Kind, e.Activity.Type)
				}
				checkStamp(t, "ra", e.Seq, e.Activity)
			}
		})
	}
}

// testReadAfterPaging: following the returned watermark with a small limit yields every
// replayable entry exactly once, in order, and ends at LastSeq.
func testReadAfterPaging(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	createConversation(t, s, "pg")
	var want []string
	for i := range 25 {
		if i%3 == 1 {
			appendOK(t, s, "pg", typing())
			continue
		}
		text := fmt.Sprintf("m%d", i)
		appendOK(t, s, "pg", message(text, ""))
		want = append(want, text)
	}
	var (
		got []string
		wm  uint64
	)
	for range 100 {
		es, next := readAfter(t, s, "pg", wm, 4)
		if len(es) > 4 {
			t.Fatalf("limit 4, got %d entries", len(es))
		}
		if next < wm {
			t.Fatalf("watermark went back from %d to %d", wm, next)
		}
		got = append(got, texts(es)...)
		if len(es) == 0 {
			break
		}
		wm = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged history %q, want %q", got, want)
	}
	if wm != 25 {
		t.Errorf("final watermark %d, want 25", wm)
	}
}

// testTailWhileWriting: a reader following the watermark while writers append sees every
// replayable entry exactly once and in seq order (DESIGN invariant 7).
func testTailWhileWriting(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	createConversation(t, s, "tail")
	const n = 16
	done := make(chan struct{})
	var (
		got []uint64
		wg  sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var wm uint64
		for finished := false; ; {
			select {
			case <-done:
				finished = true
			default:
			}
			es, next, err := s.ReadAfter(context.Background(), "tail", wm, 7)
			if err != nil {
				t.Errorf("ReadAfter: %v", err)
				return
			}
			got = append(got, seqs(es)...)
			if finished && len(es) == 0 && next == wm {
				return
			}
			wm = next
		}
	}()
	parallel(n, func(w int) {
		for i := range 6 {
			a := message(fmt.Sprintf("w%d-%d", w, i), "")
			if i == 2 {
				a = typing()
			}
			if _, err := s.Append(context.Background(), "tail", a); err != nil {
				t.Errorf("Append: %v", err)
			}
		}
	})
	close(done)
	wg.Wait()
	var want []uint64
	for _, e := range readLog(t, s, "tail") {
		if !e.Ephemeral {
			want = append(want, e.Seq)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tailing reader saw %v, want %v", got, want)
	}
}

// testTypingNotReplayed (field case R24): typing then message M: history has only M, the log
// has both, and the watermark covers the typing entry.
func testTypingNotReplayed(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	createConversation(t, s, "r24")
	ty := appendOK(t, s, "r24", typing())
	m := appendOK(t, s, "r24", message("M", ""))
	if !ty.Ephemeral || m.Ephemeral {
		t.Errorf("Ephemeral: typing %v, message %v; want true, false", ty.Ephemeral, m.Ephemeral)
	}
	checkStamp(t, "r24", 1, ty.Activity)
	es, wm := readAfter(t, s, "r24", 0, 10)
	if !slices.Equal(texts(es), []string{"M"}) || wm != 2 {
		t.Errorf("history %q watermark %d, want [M] 2", texts(es), wm)
	}
	es, wm = readAfter(t, s, "r24", 0, 1)
	if !slices.Equal(seqs(es), []uint64{2}) || wm != 2 {
		t.Errorf("limit 1: %v watermark %d, want [2] 2", seqs(es), wm)
	}
	if log := checkLog(t, s, "r24", 2); !log[0].Ephemeral || log[0].Activity.Type != activity.TypeTyping {
		t.Errorf("log entry 1: ephemeral %v type %q, want the typing activity", log[0].Ephemeral, log[0].Activity.Type)
	}
}

// testUpdate (DESIGN invariant 9, field case R12-A): the bot sends a1 (seq 1), the user sends U
// (seq 2), the bot updates a1 twice (seqs 3, 4).
func testUpdate(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	createConversation(t, s, "up")
	createConversation(t, s, "other")
	ctx := context.Background()
	a1 := appendOK(t, s, "up", message("v1", "card")).Activity
	appendOK(t, s, "up", message("U", ""))

	revised := message("v2", "")
	before := mustJSON(t, revised)
	rev, err := s.Update(ctx, "up", a1.ID, revised)
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, revised) != before {
		t.Errorf("Update modified the caller's activity")
	}
	if rev.Seq != 3 || rev.Kind != store.KindRevision || rev.Ephemeral {
		t.Errorf("revision seq %d kind %d ephemeral %v, want 3 KindRevision false", rev.Seq, rev.Kind, rev.Ephemeral)
	}
	checkRevision := func(what string, got *activity.Activity, text string) {
		t.Helper()
		if got.Text != text || got.ID != a1.ID || got.Timestamp != a1.Timestamp {
			t.Errorf("%s: text %q id %q ts %q, want %q %q %q", what, got.Text, got.ID, got.Timestamp, text, a1.ID, a1.Timestamp)
		}
		if sid, ok := got.SequenceID(); !ok || sid != 1 {
			t.Errorf("%s: sequence id %d %v, want 1 (the original's)", what, sid, ok)
		}
	}
	checkRevision("revision", rev.Activity, "v2")
	if got := lastSeq(t, s, "up"); got != 3 {
		t.Errorf("LastSeq %d, want 3: an update takes a watermark", got)
	}

	type read struct {
		Seq  uint64
		Kind store.EntryKind
		Text string
	}
	history := func(wm uint64) ([]read, uint64) {
		es, next := readAfter(t, s, "up", wm, 10)
		var out []read
		for _, e := range es {
			out = append(out, read{e.Seq, e.Kind, e.Activity.Text})
			if e.Activity.ID == a1.ID {
				checkRevision(fmt.Sprintf("history after %d", wm), e.Activity, e.Activity.Text)
			}
		}
		return out, next
	}
	for _, tc := range []struct {
		watermark uint64
		want      []read
		wantWM    uint64
	}{
		{0, []read{{1, store.KindActivity, "v2"}, {2, store.KindActivity, "U"}}, 3},
		{1, []read{{2, store.KindActivity, "U"}, {3, store.KindRevision, "v2"}}, 3},
		{2, []read{{3, store.KindRevision, "v2"}}, 3},
		{3, nil, 3},
	} {
		if got, wm := history(tc.watermark); !slices.Equal(got, tc.want) || wm != tc.wantWM {
			t.Errorf("after one update, ReadAfter(%d) = %v wm %d, want %v wm %d", tc.watermark, got, wm, tc.want, tc.wantWM)
		}
	}

	if _, err := s.Update(ctx, "up", a1.ID, message("v3", "")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		watermark uint64
		want      []read
	}{
		{0, []read{{1, store.KindActivity, "v3"}, {2, store.KindActivity, "U"}}},
		{1, []read{{2, store.KindActivity, "U"}, {4, store.KindRevision, "v3"}}},
		{2, []read{{4, store.KindRevision, "v3"}}},
		{3, []read{{4, store.KindRevision, "v3"}}},
		{4, nil},
	} {
		if got, wm := history(tc.watermark); !slices.Equal(got, tc.want) || wm != 4 {
			t.Errorf("after two updates, ReadAfter(%d) = %v wm %d, want %v wm 4", tc.watermark, got, wm, tc.want)
		}
	}
	latest, err := s.Activity(ctx, "up", a1.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkRevision("Activity", latest, "v3")

	// The raw log keeps each entry as written, the original with its first content.
	log := checkLog(t, s, "up", 4)
	if got := texts(log); !slices.Equal(got, []string{"v1", "U", "v2", "v3"}) {
		t.Errorf("ReadLog texts %q, want [v1 U v2 v3]", got)
	}
	if log[0].Activity.ClientActivityID() != "card" {
		t.Errorf("original record lost its clientActivityID")
	}
	if log[2].Kind != store.KindRevision || log[3].Kind != store.KindRevision {
		t.Errorf("ReadLog kinds %d %d, want KindRevision", log[2].Kind, log[3].Kind)
	}

	for _, tc := range []struct {
		name, conv, id string
		want           error
	}{
		{"unknown seq", "up", activity.FormatID("up", 99), store.ErrActivityNotFound},
		{"revision seq is not an activity id", "up", activity.FormatID("up", 3), store.ErrActivityNotFound},
		{"id of another conversation", "up", activity.FormatID("other", 1), store.ErrActivityNotFound},
		{"not an activity id", "up", "garbage", store.ErrActivityNotFound},
		{"seq 0", "up", activity.FormatID("up", 0), store.ErrActivityNotFound},
		{"unknown conversation", "nope", activity.FormatID("nope", 1), store.ErrConversationNotFound},
		{"unknown conversation, bad id", "nope", "garbage", store.ErrConversationNotFound},
	} {
		if _, err := s.Update(ctx, tc.conv, tc.id, message("x", "")); !errors.Is(err, tc.want) {
			t.Errorf("Update %s: %v, want %v", tc.name, err, tc.want)
		}
		if _, err := s.Activity(ctx, tc.conv, tc.id); !errors.Is(err, tc.want) {
			t.Errorf("Activity %s: %v, want %v", tc.name, err, tc.want)
		}
		if err := s.Delete(ctx, tc.conv, tc.id); !errors.Is(err, tc.want) {
			t.Errorf("Delete %s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if got := lastSeq(t, s, "up"); got != 4 {
		t.Errorf("failed updates took seqs: LastSeq %d, want 4", got)
	}
}

// testDelete (field case R12, open question decided): a deleted activity leaves history, takes
// no seq and cannot be updated; its revisions leave history with it; the raw log keeps it.
func testDelete(t *testing.T, f Factory) {
	var hooked sync.Map
	s, _ := open(t, f, Config{OnCommit: func(_ string, es []store.Entry) {
		for _, e := range es {
			hooked.Store(e.Seq, true)
		}
	}})
	ctx := context.Background()
	createConversation(t, s, "del")
	m1 := appendOK(t, s, "del", message("m1", ""))
	m2 := appendOK(t, s, "del", message("m2", "c2"))
	appendOK(t, s, "del", message("m3", ""))
	if _, err := s.Update(ctx, "del", m1.Activity.ID, message("m1 v2", "")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{m2.Activity.ID, m1.Activity.ID} {
		if err := s.Delete(ctx, "del", id); err != nil {
			t.Fatalf("Delete(%s): %v", id, err)
		}
	}
	if got := lastSeq(t, s, "del"); got != 4 {
		t.Errorf("LastSeq %d, want 4: delete takes no seq", got)
	}
	for _, wm := range []uint64{0, 1, 2} {
		if es, next := readAfter(t, s, "del", wm, 10); !slices.Equal(texts(es), []string{"m3"}) || next != 4 {
			t.Errorf("ReadAfter(%d) = %q wm %d, want [m3] 4", wm, texts(es), next)
		}
	}
	if es, next := readAfter(t, s, "del", 3, 10); len(es) != 0 || next != 4 {
		t.Errorf("ReadAfter(3) = %q wm %d, want the deleted activity's revision left out, wm 4", texts(es), next)
	}
	for _, id := range []string{m1.Activity.ID, m2.Activity.ID} {
		if _, err := s.Activity(ctx, "del", id); !errors.Is(err, store.ErrActivityNotFound) {
			t.Errorf("Activity(deleted %s): %v, want ErrActivityNotFound", id, err)
		}
		if _, err := s.Update(ctx, "del", id, message("again", "")); !errors.Is(err, store.ErrActivityNotFound) {
			t.Errorf("Update(deleted %s): %v, want ErrActivityNotFound", id, err)
		}
		if err := s.Delete(ctx, "del", id); !errors.Is(err, store.ErrActivityNotFound) {
			t.Errorf("Delete(deleted %s): %v, want ErrActivityNotFound", id, err)
		}
	}
	if got := texts(checkLog(t, s, "del", 4)); !slices.Equal(got, []string{"m1", "m2", "m3", "m1 v2"}) {
		t.Errorf("ReadLog texts %q, want every entry as written", got)
	}
	// A late resend of the deleted activity is still recognised, so it does not come back.
	if r := appendOK(t, s, "del", message("m2", "c2")); !r.Duplicate || r.Seq != m2.Seq {
		t.Errorf("resend of deleted: duplicate %v seq %d, want true %d", r.Duplicate, r.Seq, m2.Seq)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	hooked.Range(func(any, any) bool { n++; return true })
	if n != 4 {
		t.Errorf("commit hook saw %d entries, want 4 (delete produces none)", n)
	}
}
