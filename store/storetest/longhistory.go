package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// longHistory is how many entries testLongHistory appends per conversation: more than a store
// would keep in any small structure for its newest entries, so lookups reach older ones too.
const longHistory = 150

// testLongHistory: histories of a few hundred entries, written concurrently to conversations
// whose ids are prefixes of one another and which use the same clientActivityIDs, read back
// after reopen: contiguous seqs (invariant 1), resends of old and new entries (invariant 6),
// history and paging (invariant 7), typing skipped (invariant 8), revisions early and late in
// the history keeping their place (invariant 9), and a deletion.
func testLongHistory(t *testing.T, f Factory) {
	s, dir := open(t, f, Config{})
	ctx := context.Background()
	convs := []string{"p", "pp", "q"}
	for _, c := range convs {
		createConversation(t, s, c)
	}
	isTyping := func(seq int) bool { return seq%10 == 0 }
	parallel(len(convs), func(i int) {
		for seq := 1; seq <= longHistory; seq++ {
			a := message(fmt.Sprintf("%s-%d", convs[i], seq), fmt.Sprintf("c%d", seq))
			if isTyping(seq) {
				a = typing()
			}
			if _, err := s.Append(ctx, convs[i], a); err != nil {
				t.Error(err)
				return
			}
		}
	})
	if t.Failed() {
		return
	}
	for _, oseq := range []uint64{5, 121} {
		if _, err := s.Update(ctx, "p", activity.FormatID("p", oseq), message(fmt.Sprintf("p-%d revised", oseq), "")); err != nil {
			t.Fatalf("Update p|%d: %v", oseq, err)
		}
	}
	if err := s.Delete(ctx, "p", activity.FormatID("p", 40)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, f, dir, Config{})

	// Originals of p in history order, with the revised texts and without typing or p|40.
	var want []string
	for seq := 1; seq <= longHistory; seq++ {
		switch {
		case isTyping(seq) || seq == 40:
		case seq == 5 || seq == 121:
			want = append(want, fmt.Sprintf("p-%d revised", seq))
		default:
			want = append(want, fmt.Sprintf("p-%d", seq))
		}
	}
	for _, c := range convs {
		n := longHistory
		if c == "p" {
			n += 2
		}
		checkLog(t, s, c, n)
		for _, seq := range []uint64{1, 33, 77, longHistory - 1} {
			r := appendOK(t, s, c, message("resend", fmt.Sprintf("c%d", seq)))
			if !r.Duplicate || r.Seq != seq || r.Activity.Text != fmt.Sprintf("%s-%d", c, seq) {
				t.Errorf("%s: resend of c%d answered seq %d %q duplicate %v; want seq %d, the original", c, seq, r.Seq, r.Activity.Text, r.Duplicate, seq)
			}
		}
	}
	history, wm := readAfter(t, s, "p", 0, 0)
	if got := texts(history); !slices.Equal(got, want) || wm != longHistory+2 {
		t.Errorf("p history (watermark %d)\n%v\nwant (watermark %d)\n%v", wm, got, longHistory+2, want)
	}
	// A reader paging 7 at a time has seen p|5 and p|121 before their revisions (seqs 151,
	// 152), so it gets those as the newest entries too.
	var paged []store.Entry
	for w := uint64(0); ; {
		es, next := readAfter(t, s, "p", w, 7)
		paged = append(paged, es...)
		if next == w {
			break
		}
		w = next
	}
	if got := texts(paged); !slices.Equal(got, append(slices.Clone(want), "p-5 revised", "p-121 revised")) {
		t.Errorf("p paged 7 at a time\n%v", got)
	}
	if tail, _ := readAfter(t, s, "pp", longHistory-3, 0); !slices.Equal(seqs(tail), []uint64{longHistory - 2, longHistory - 1}) {
		t.Errorf("pp after %d: seqs %v", longHistory-3, seqs(tail))
	}
	if a, err := s.Activity(ctx, "p", activity.FormatID("p", 121)); err != nil || a.Text != "p-121 revised" {
		t.Errorf("Activity p|121: %v, %v", a, err)
	}
	if a, err := s.Activity(ctx, "q", activity.FormatID("q", 3)); err != nil || a.Text != "q-3" {
		t.Errorf("Activity q|3: %v, %v", a, err)
	}
	if _, err := s.Update(ctx, "p", activity.FormatID("p", 40), message("x", "")); !errors.Is(err, store.ErrActivityNotFound) {
		t.Errorf("Update of deleted p|40: %v, want ErrActivityNotFound", err)
	}
	if r := appendOK(t, s, "pp", message("next", "next")); r.Seq != longHistory+1 {
		t.Errorf("pp: next append got seq %d, want %d", r.Seq, longHistory+1)
	}
}
