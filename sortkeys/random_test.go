package sortkeys

import (
	"slices"
	"testing"
)

// TestFastEqualsReference replays random logs with the B-tree list and indexed searches and with
// the linear reference, and requires the same order (and, for gen-c, screen) after every event.
func TestFastEqualsReference(t *testing.T) {
	for _, p := range []Profile{GenA, GenB, GenC} {
		for seed := uint64(1); seed <= 24; seed++ {
			events := randomLog(seed, 100+int(seed)*8, seed%2 == 0)
			fast := New(Options{Profile: p, UserID: "u-user"})
			ref := newReference(Options{Profile: p, UserID: "u-user"})
			for i, ev := range events {
				if err := fast.Apply(ev); err != nil {
					t.Fatalf("%s seed %d event %d: %v", p, seed, i, err)
				}
				if err := ref.Apply(ev); err != nil {
					t.Fatalf("%s seed %d event %d (reference): %v", p, seed, i, err)
				}
				if got, want := fast.Names(), ref.Names(); !slices.Equal(got, want) {
					t.Fatalf("%s seed %d event %d: %s", p, seed, i, firstDiff(got, want))
				}
				if p == GenC && i%10 == 0 {
					if got, want := bubbleNames(fast.Screen()), bubbleNames(ref.Screen()); !slices.Equal(got, want) {
						t.Fatalf("%s seed %d event %d screen: %s", p, seed, i, firstDiff(got, want))
					}
				}
			}
		}
	}
}
