package sortkeys

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestBtreeListMatchesSliceList drives the B-tree and the linear reference with the same random
// insertions, removals, in-place key changes (Refresh), repositions, quiet marks (single units
// and runs of up to 300) and searches, over enough units for three levels of nodes, and requires
// the same answers throughout. A reposition that the B-tree settles from the unit's own path
// (staysPut) must be one the reference leaves in place.
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
			u.setTS(key())
			u.setLTS(key())
			u.seq = float64(rng.IntN(300))
		}
		fast, ref := newBtreeList(), &sliceList{}
		var in []*unit
		stays := 0
		for op := 0; op < 12000; op++ {
			switch k := rng.IntN(23); {
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
			case k < 20:
				// Half the repositions keep the unit's keys, as most revisions in a replay do. A
				// quiet unit is marked loud first, as in a replay.
				u := in[rng.IntN(len(in))]
				fast.Quiet(u, false)
				ref.Quiet(u, false)
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
			case k < 22:
				u, quiet := in[rng.IntN(len(in))], rng.IntN(3) > 0
				fast.Quiet(u, quiet)
				ref.Quiet(u, quiet)
			default:
				quiet := rng.IntN(4) > 0
				from := rng.IntN(ref.Len())
				for i := from; i < min(ref.Len(), from+rng.IntN(300)); i++ {
					fast.Quiet(ref.At(i), quiet)
					ref.Quiet(ref.At(i), quiet)
				}
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
			for range 4 {
				i := rng.IntN(ref.Len() + 1)
				if got, want := fast.LoudBefore(i), ref.LoudBefore(i); got != want {
					t.Fatalf("seed %d op %d: LoudBefore(%d) %d, want %d", seed, op, i, got, want)
				}
			}
			if op%10 == 0 {
				checkMaxima(t, fast.root)
				checkQuiet(t, fast.root)
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
		u := &unit{kind: unitKind(rng.IntN(3)), tsDef: true, tsV: clock, ltsDef: true, ltsV: clock - float64(rng.IntN(5))}
		switch rng.IntN(12) {
		case 0:
			u.setTS(undef)
		case 1:
			u.setTS(num(math.NaN()))
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
		changed := rng.IntN(4) == 0 && u.ts().isNumber()
		if changed {
			u.setTS(num(u.tsV + float64(rng.IntN(3))))
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

// checkQuiet requires every node to count the quiet units under it, and every mask bit to be set
// exactly for a quiet unit (leaf) or a kid of quiet units only (inner node): LoudBefore skips by
// the bits, and Quiet and Remove keep them from the counts.
func checkQuiet(t *testing.T, nd *bnode) {
	t.Helper()
	if nd == nil {
		return
	}
	if nd.mask&^below(nd.n) != 0 {
		t.Fatalf("mask %b has bits from entry %d on", nd.mask, nd.n)
	}
	if nd.leaf {
		if q := bits.OnesCount64(nd.mask); int(nd.quiet) != q {
			t.Fatalf("leaf counts %d quiet units, its mask %d", nd.quiet, q)
		}
		return
	}
	q := int32(0)
	for j, k := range nd.kids[:nd.n] {
		checkQuiet(t, k)
		q += k.quiet
		if all := int(k.quiet) == nd.cnt[j]; all != (nd.mask>>j&1 != 0) {
			t.Fatalf("entry %d: kid has %d quiet of %d units, bit %v", j, k.quiet, nd.cnt[j], !all)
		}
	}
	if q != nd.quiet {
		t.Fatalf("node counts %d quiet units, its kids %d", nd.quiet, q)
	}
}
