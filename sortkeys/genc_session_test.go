package sortkeys

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestSessionChunks inserts session entries and buries local ids in random orders, with
// repeated sequences, +Inf and revisions sharing a local id, and requires after every step what
// one sorted slice gives: the live entries in order, the count, first and last of all, firstKey,
// and lastEntry for every bound. Half the seeds search their sessions through byLid from the
// start.
func TestSessionChunks(t *testing.T) {
	ops, graves := 0, 0
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		g := New(Options{Profile: GenC}).st.c
		s := g.newSession()
		if seed%2 == 0 {
			s.byLid = map[int32]lidEntries{}
		}
		var flat []sessionEntry
		var lids []int32
		inserted := uint32(0)
		steps := 50 + rng.IntN(1500)
		span := 1 + rng.IntN(3*steps)
		for step := range steps {
			if len(flat) > 0 && rng.IntN(4) == 0 {
				lid := flat[rng.IntN(len(flat))].lid
				if rng.IntN(3) == 0 {
					lid = lids[rng.IntN(len(lids))] // maybe deleted already
				}
				i := slices.IndexFunc(flat, func(e sessionEntry) bool { return e.lid == lid })
				live := g.act(int(lid)) != nil
				if got := s.bury(lid); got != (live && i >= 0) {
					t.Fatalf("seed %d step %d: bury %d = %v", seed, step, lid, got)
				}
				if live && i >= 0 {
					flat = slices.Delete(flat, i, i+1)
				}
				g.loc(int(lid)).rec = nil
			} else {
				seq := float64(1 + rng.IntN(span))
				if rng.IntN(50) == 0 {
					seq = math.Inf(1)
				}
				lid := int32(0)
				if len(lids) > 0 && rng.IntN(5) == 0 && g.act(int(lids[len(lids)-1])) != nil {
					lid = lids[len(lids)-1-rng.IntN(min(len(lids), 3))] // another revision with the same local id
				}
				if lid == 0 || g.act(int(lid)) == nil {
					lid = g.newLid()
					g.loc(int(lid)).rec = &record{}
					lids = append(lids, lid)
				}
				e := sessionEntry{lid: lid, n: inserted, ts: num(float64(step)), seq: seq}
				s.insert(e)
				inserted++
				i := sort.Search(len(flat), func(i int) bool { return flat[i].seq > seq })
				flat = slices.Insert(flat, i, e)
			}
			ops++
			if s.dead != nil {
				graves++
			}
			checkSession(t, g, s, flat, seed, step)
		}
	}
	if graves < ops/4 {
		t.Fatalf("%d of %d steps with dead entries", graves, ops)
	}
	t.Logf("%d steps, %d with dead entries", ops, graves)
}

func checkSession(t *testing.T, g *genC, s *session, flat []sessionEntry, seed uint64, step int) {
	t.Helper()
	var got, live []sessionEntry
	for _, e := range flat {
		if g.act(int(e.lid)) != nil {
			live = append(live, e)
		}
	}
	for ci, c := range s.chunks {
		if len(c) > entryChunk || (len(c) == 0 && len(s.chunks) > 1) {
			t.Fatalf("seed %d step %d: chunk %d of %d holds %d", seed, step, ci, len(s.chunks), len(c))
		}
		got = append(got, c...)
	}
	if !slices.Equal(got, live) || s.n != len(flat) {
		t.Fatalf("seed %d step %d: entries differ (%d, want %d)", seed, step, s.n, len(flat))
	}
	if len(flat) > 0 && (s.first() != flat[0] || s.last() != flat[len(flat)-1]) {
		t.Fatalf("seed %d step %d: first or last differs", seed, step)
	}
	for _, e := range append(live[max(0, len(live)-3):], live[:min(3, len(live))]...) {
		if got, _ := s.firstKey(e.lid); got != flat[slices.IndexFunc(flat, func(x sessionEntry) bool { return x.lid == e.lid })].key() {
			t.Fatalf("seed %d step %d: firstKey(%d) = %v", seed, step, e.lid, got)
		}
	}
	for _, b := range []int{0, len(flat) / 3, len(flat) / 2, max(0, len(flat)-1), len(flat)} {
		// Bounds before the entry of index b: its key, the key right after the one ahead, or
		// after every entry.
		var bounds []entryKey
		if b < len(flat) {
			bounds = append(bounds, flat[b].key())
		} else {
			bounds = append(bounds, endKey)
		}
		if b > 0 {
			bounds = append(bounds, entryKey{flat[b-1].seq, flat[b-1].n + 1})
		}
		want := -1
		for e := b - 1; e >= 0; e-- {
			if g.act(int(flat[e].lid)) != nil {
				want = e
				break
			}
		}
		for _, k := range bounds {
			r, e, ok := g.lastEntry(s, k)
			if ok != (want >= 0) || (ok && (e != flat[want].key() || r != g.act(int(flat[want].lid)))) {
				t.Fatalf("seed %d step %d: lastEntry(%v) = %v, want index %d", seed, step, k, e, want)
			}
		}
	}
}
