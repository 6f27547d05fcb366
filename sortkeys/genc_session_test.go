package sortkeys

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestSessionChunks inserts and removes session entries in random orders, with repeated
// sequences, +Inf and revisions sharing a local id, and requires after every step what one
// sorted slice gives: the entries in order, entryIndex, first and last, and lastEntry for
// every bound.
func TestSessionChunks(t *testing.T) {
	ops := 0
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		g := New(Options{Profile: GenC}).st.c
		s := g.newSession()
		var flat []sessionEntry
		var lids []int
		steps := 50 + rng.IntN(1500)
		span := 1 + rng.IntN(3*steps)
		for step := range steps {
			if len(flat) > 0 && rng.IntN(4) == 0 {
				lid := flat[rng.IntN(len(flat))].lid
				if rng.IntN(3) == 0 {
					lid = lids[rng.IntN(len(lids))] // maybe removed already
				}
				i := slices.IndexFunc(flat, func(e sessionEntry) bool { return e.lid == lid })
				if got := s.remove(lid); got != (i >= 0) {
					t.Fatalf("seed %d step %d: remove %d = %v", seed, step, lid, got)
				}
				if i >= 0 {
					flat = slices.Delete(flat, i, i+1)
				}
				if rng.IntN(2) == 0 {
					g.loc(lid).rec = nil
				}
			} else {
				seq := float64(1 + rng.IntN(span))
				if rng.IntN(50) == 0 {
					seq = math.Inf(1)
				}
				lid := 0
				if len(lids) > 0 && rng.IntN(5) == 0 {
					lid = lids[rng.IntN(len(lids))] // another revision with the same local id
				} else {
					lid = int(g.newLid())
					g.loc(lid).rec = &record{}
					lids = append(lids, lid)
				}
				e := sessionEntry{lid: lid, ts: num(float64(step)), seq: seq}
				s.insert(e)
				i := sort.Search(len(flat), func(i int) bool { return flat[i].seq > seq })
				flat = slices.Insert(flat, i, e)
			}
			ops++
			checkSession(t, g, s, flat, seed, step)
		}
	}
	t.Logf("%d steps", ops)
}

func checkSession(t *testing.T, g *genC, s *session, flat []sessionEntry, seed uint64, step int) {
	t.Helper()
	var got []sessionEntry
	for ci, c := range s.chunks {
		if len(c) > entryChunk || (len(c) == 0 && len(s.chunks) > 1) {
			t.Fatalf("seed %d step %d: chunk %d of %d holds %d", seed, step, ci, len(s.chunks), len(c))
		}
		got = append(got, c...)
	}
	if !slices.Equal(got, flat) || s.n != len(flat) {
		t.Fatalf("seed %d step %d: entries differ (%d, want %d)", seed, step, s.n, len(flat))
	}
	if len(flat) > 0 && (s.first() != flat[0] || s.last() != flat[len(flat)-1]) {
		t.Fatalf("seed %d step %d: first or last differs", seed, step)
	}
	for _, e := range flat[max(0, len(flat)-3):] {
		if got, want := s.entryIndex(e.lid), slices.IndexFunc(flat, func(x sessionEntry) bool { return x.lid == e.lid }); got != want {
			t.Fatalf("seed %d step %d: entryIndex(%d) = %d, want %d", seed, step, e.lid, got, want)
		}
	}
	for _, bound := range []int{0, len(flat) / 3, len(flat) / 2, len(flat) - 1, len(flat), math.MaxInt} {
		want := -1
		for e := min(bound, len(flat)) - 1; e >= 0; e-- {
			if g.act(flat[e].lid) != nil {
				want = e
				break
			}
		}
		r, e, ok := g.lastEntry(s, bound)
		if !ok {
			e = -1
		}
		if e != want || (ok && r != g.act(flat[e].lid)) {
			t.Fatalf("seed %d step %d: lastEntry(%d) = %d, want %d", seed, step, bound, e, want)
		}
	}
}
