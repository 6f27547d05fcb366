package sortkeys

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestIDTableMatchesMap drives the id table and a Go map with the same random sets and lookups,
// through several growths. Prefetches of the key or of another one come
// before some operations: they keep a hash that the next get or set of the same string reuses.
// Long keys fill chunks past the offsets a ref can hold, and a few keys need a chunk of their own.
func TestIDTableMatchesMap(t *testing.T) {
	for _, c := range []struct {
		name string
		keys int
		ops  int
		long bool
	}{{"few keys", 20, 2000, false}, {"growing", 5000, 20000, false}, {"long keys", 300, 3000, true}} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(c.keys)))
			keys := make([]string, c.keys)
			for i := range keys {
				keys[i] = "id-" + strconv.Itoa(i)
				if c.long {
					n := rng.IntN(30000)
					if i%60 == 0 {
						n = idKeyChunkMax + i
					}
					keys[i] += strings.Repeat("k", n)
				}
			}
			tab := newIDTable()
			ref := map[string]int{}
			for op := 0; op < c.ops; op++ {
				key := keys[rng.IntN(c.keys)]
				switch rng.IntN(3) {
				case 0:
					tab.prefetch(key)
				case 1:
					tab.prefetch(keys[rng.IntN(c.keys)])
				}
				switch rng.IntN(10) {
				case 0, 1, 2, 3, 4:
					lid := 1 + rng.IntN(c.keys)
					// As in a replay, a set often follows a get of the same string, whose hash
					// it reuses; a shorter view of the same bytes must be hashed anew.
					if rng.IntN(2) == 0 {
						tab.get(key)
						if rng.IntN(3) == 0 {
							key = key[:len(key)-1]
						}
					}
					if got := tab.set(key, lid); got != key {
						t.Fatalf("op %d: set kept %.20q…, want %.20q…", op, got, key)
					}
					ref[key] = lid
				default:
					got, ok := tab.get(key)
					want, wantOK := ref[key]
					if got != want || ok != wantOK {
						t.Fatalf("op %d: get(%.20q…) = %d, %v; want %d, %v", op, key, got, ok, want, wantOK)
					}
				}
				if tab.n != len(ref) {
					t.Fatalf("op %d: %d keys, want %d", op, tab.n, len(ref))
				}
			}
			for k, want := range ref {
				if got, ok := tab.get(k); !ok || got != want {
					t.Fatalf("get(%.20q…) = %d, %v at the end; want %d", k, got, ok, want)
				}
			}
			if c.long && len(tab.keys) < 4 {
				t.Fatalf("%d key chunks: the long keys did not reach the ref limits", len(tab.keys))
			}
		})
	}
}
