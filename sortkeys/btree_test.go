package sortkeys

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBtreeListMatchesSliceList drives the B-tree and the linear reference with the same random
// insertions, removals, in-place key changes (Refresh), repositions and searches, over enough
// units for three levels of nodes, and requires the same answers throughout.
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
		for op := 0; op < 12000; op++ {
			switch k := rng.IntN(20); {
			case k < 11 || len(in) < 10:
				u := &unit{}
				randomize(u)
				i := ref.FirstGreater(u)
				if k%2 == 0 {
					i = rng.IntN(ref.Len() + 1)
				}
				if got := fast.FirstGreater(u); got != ref.FirstGreater(u) {
					t.Fatalf("seed %d op %d: FirstGreater %d, want %d", seed, op, got, ref.FirstGreater(u))
				}
				fast.Insert(u, i)
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
				u := in[rng.IntN(len(in))]
				randomize(u)
				fast.Reposition(u)
				ref.Reposition(u)
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
		if h := height(&Replay{st: &state{eng: &genC{list: fast}}}); h < 3 {
			t.Fatalf("seed %d: the tree has %v levels; the test needs at least 3", seed, h)
		}
	}
}
