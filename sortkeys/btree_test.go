package sortkeys

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBtreeListMatchesSliceList drives the B-tree and the linear reference with the same random
// insertions, removals, in-place key changes (Refresh), repositions and searches, over enough
// units for three levels of nodes, and requires the same answers throughout. A reposition that
// the B-tree settles from the unit's own path (staysPut) must be one the reference leaves in place.
func TestBtreeListMatchesSliceList(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		key := func() jsNum {
			switch rng.IntN(10) {
			case 0:
				return undef
			case 1:
				return num(math.NaN())
			}
			return num(float64(rng.IntN(500)))
		}
		randomize := func(u *unit) {
			u.kind = unitKind(rng.IntN(3))
			u.ts, u.lts, u.seq = key(), key(), float64(rng.IntN(300))
		}
		fast, ref := newBtreeList(), &sliceList{}
		var in []*unit
		stays := 0
		for op := 0; op < 12000; op++ {
			switch k := rng.IntN(20); {
			case k < 11 || len(in) < 10:
				u := &unit{}
				randomize(u)
				i := ref.FirstGreater(u)
				if got := fast.FirstGreater(u); got != i {
					t.Fatalf("seed %d op %d: FirstGreater %d, want %d", seed, op, got, i)
				}
				// Insertions at a random index, at the end (the append path), and ordered in one
				// descent (InsertOrdered).
				switch k % 4 {
				case 0:
					i = rng.IntN(ref.Len() + 1)
					fast.Insert(u, i)
				case 1:
					i = ref.Len()
					fast.Insert(u, i)
				default:
					fast.InsertOrdered(u)
				}
				ref.Insert(u, i)
				in = append(in, u)
			case k < 14:
				j := rng.IntN(len(in))
				u := in[j]
				in[j] = in[len(in)-1]
				in = in[:len(in)-1]
				fast.Remove(u)
				ref.Remove(u)
			case k < 17:
				u := in[rng.IntN(len(in))]
				randomize(u)
				fast.Refresh(u)
			default:
				// Half the repositions keep the unit's keys, as most revisions in a replay do.
				u := in[rng.IntN(len(in))]
				changed := rng.IntN(2) == 0
				if changed {
					randomize(u)
				}
				// As in a replay, the tree still holds u's previous keys.
				if fast.staysPut(u) {
					stays++
					if at, idx := ref.FirstGreater(u), ref.Index(u); at != idx+1 {
						t.Fatalf("seed %d op %d: staysPut, but FirstGreater %d and index %d", seed, op, at, idx)
					}
				}
				fast.Reposition(u, changed)
				ref.Reposition(u, changed)
			}
			if fast.Len() != ref.Len() {
				t.Fatalf("seed %d op %d: Len %d, want %d", seed, op, fast.Len(), ref.Len())
			}
			q := &unit{}
			randomize(q)
			if got, want := fast.FirstGreater(q), ref.FirstGreater(q); got != want {
				t.Fatalf("seed %d op %d: FirstGreater %d, want %d", seed, op, got, want)
			}
			v, from := float64(rng.IntN(300)), rng.IntN(ref.Len()+2)
			if got, want := fast.FirstSeqAbove(v, from), ref.FirstSeqAbove(v, from); got != want {
				t.Fatalf("seed %d op %d: FirstSeqAbove(%v, %d) %d, want %d", seed, op, v, from, got, want)
			}
			if ref.Len() > 0 {
				i := rng.IntN(ref.Len())
				if fast.At(i) != ref.At(i) || fast.Index(ref.At(i)) != i {
					t.Fatalf("seed %d op %d: At/Index disagree at %d", seed, op, i)
				}
			}
			if op%10 == 0 {
				checkMaxima(t, fast.root)
			}
			if op%1000 == 999 {
				i := 0
				fast.Each(func(u *unit) bool {
					if ref.At(i) != u {
						t.Fatalf("seed %d op %d: Each differs at %d", seed, op, i)
					}
					i++
					return true
				})
				if i != ref.Len() {
					t.Fatalf("seed %d op %d: Each visited %d of %d", seed, op, i, ref.Len())
				}
			}
		}
		if stays < 10 {
			t.Fatalf("seed %d: only %d repositions took the stays-put path", seed, stays)
		}
		if h := height(&Replay{st: &state{eng: &genC{list: fast}}}); h < 3 {
			t.Fatalf("seed %d: the tree has %v levels; the test needs at least 3", seed, h)
		}
	}
}

// TestBtreeRepositionInPlace builds the list as a replay does, every unit inserted where
// FirstGreater puts it, then repositions units with unchanged or nudged keys, most of which stay
// where they are: the B-tree must agree with the linear reference, and the stays-put path must
// have been taken often.
func TestBtreeRepositionInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	fast, ref := newBtreeList(), &sliceList{}
	var in []*unit
	clock := 0.0
	for n := 0; n < 6000; n++ {
		clock += float64(rng.IntN(3))
		u := &unit{kind: unitKind(rng.IntN(3)), ts: num(clock), lts: num(clock - float64(rng.IntN(5)))}
		switch rng.IntN(12) {
		case 0:
			u.ts = undef
		case 1:
			u.ts = num(math.NaN())
		}
		i := ref.FirstGreater(u)
		fast.Insert(u, i)
		ref.Insert(u, i)
		in = append(in, u)
	}
	stays := 0
	for op := 0; op < 6000; op++ {
		u := in[rng.IntN(len(in))]
		if rng.IntN(3) == 0 {
			// The most recent units are revised most often.
			u = in[len(in)-1-rng.IntN(min(len(in), 20))]
		}
		changed := rng.IntN(4) == 0 && u.ts.isNumber()
		if changed {
			u.ts = num(u.ts.v + float64(rng.IntN(3)))
		}
		if fast.staysPut(u) {
			stays++
			if at, idx := ref.FirstGreater(u), ref.Index(u); at != idx+1 {
				t.Fatalf("op %d: staysPut, but FirstGreater %d and index %d", op, at, idx)
			}
		}
		fast.Reposition(u, changed)
		ref.Reposition(u, changed)
		if op%10 == 0 {
			checkMaxima(t, fast.root)
		}
		if i := ref.Index(u); fast.Index(u) != i || fast.At(i) != u {
			t.Fatalf("op %d: unit at %d, want %d", op, fast.Index(u), i)
		}
	}
	i := 0
	fast.Each(func(u *unit) bool {
		if ref.At(i) != u {
			t.Fatalf("Each differs at %d", i)
		}
		i++
		return true
	})
	if stays < 1000 {
		t.Fatalf("only %d of 6000 repositions took the stays-put path", stays)
	}
}

// FirstGreater is the index of the first unit X with greater(X, q), read through the keys as
// InsertOrdered reads them: the tests compare it with the linear reference's.
func (t *btreeList) FirstGreater(q *unit) int {
	s, any := greaterSearch(q)
	if !any {
		return t.size
	}
	return t.first(&s, 0)
}

// checkMaxima requires every inner entry to hold exactly the maxima of its kid and the number of
// units under it: searches, Refresh and Remove rely on the maxima being exact.
func checkMaxima(t *testing.T, nd *bnode) {
	t.Helper()
	if nd == nil || nd.leaf {
		return
	}
	for j := 0; j < nd.n; j++ {
		a, n := nd.kids[j].summary()
		if nd.get(j) != a || nd.cnt[j] != n {
			t.Fatalf("entry %d holds %+v over %d units; its kid has %+v over %d", j, nd.get(j), nd.cnt[j], a, n)
		}
		if nd.kids[j].parent != nd || nd.kids[j].slot != j {
			t.Fatalf("kid %d does not point back to its parent and entry", j)
		}
		checkMaxima(t, nd.kids[j])
	}
}
