package sortkeys

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestIDTableMatchesMap drives the id table and a Go map with the same random sets, lookups and
// deletes by local id, through several growths.
func TestIDTableMatchesMap(t *testing.T) {
	for _, c := range []struct {
		name string
		keys int
		ops  int
	}{{"few keys", 20, 2000}, {"growing", 5000, 20000}} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(c.keys)))
			tab := newIDTable()
			ref := map[string]int{}
			for op := 0; op < c.ops; op++ {
				key := "id-" + strconv.Itoa(rng.IntN(c.keys))
				switch rng.IntN(10) {
				case 0:
					lid := 1 + rng.IntN(c.keys)
					tab.deleteLid(lid)
					for k, v := range ref {
						if v == lid {
							delete(ref, k)
						}
					}
				case 1, 2, 3, 4:
					lid := 1 + rng.IntN(c.keys)
					// As in a replay, a set often follows a get of the same string, whose hash
					// it reuses; a shorter view of the same bytes must be hashed anew.
					if rng.IntN(2) == 0 {
						tab.get(key)
						if rng.IntN(3) == 0 {
							key = key[:len(key)-1]
						}
					}
					tab.set(key, lid)
					ref[key] = lid
				default:
					got, ok := tab.get(key)
					want, wantOK := ref[key]
					if got != want || ok != wantOK {
						t.Fatalf("op %d: get(%q) = %d, %v; want %d, %v", op, key, got, ok, want, wantOK)
					}
				}
				if tab.n != len(ref) {
					t.Fatalf("op %d: %d keys, want %d", op, tab.n, len(ref))
				}
			}
		})
	}
}
