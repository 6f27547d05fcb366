package sortkeys

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPartList places, updates and removes parts in random orders, with positions that repeat,
// are missing, NaN, infinite or -0 and timestamps that are undefined or NaN, as upsert and
// delete do, and requires after every step what the slice and scans they replaced give: the
// order, find and index, at, the first position above each of several, and the timestamps folded.
func TestPartList(t *testing.T) {
	positions := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0}
	steps := 0
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 19))
		var nodes partNodes
		var pl partList
		var flat []part
		randPart := func(lid int) part {
			p := part{kind: unitActivity, lid: lid}
			if rng.IntN(4) == 0 {
				p = part{kind: unitSession, sid: string(rune('a' + lid%26)), lid: lid}
			}
			switch rng.IntN(8) {
			case 0:
			case 1:
				p.ts = num(math.NaN())
			default:
				p.ts = num(float64(rng.IntN(50)))
			}
			switch rng.IntN(6) {
			case 0:
			case 1:
				p.hasPos, p.pos = true, positions[rng.IntN(len(positions))]
			default:
				p.hasPos, p.pos = true, float64(rng.IntN(30))
			}
			return p
		}
		scanAbove := func(pos float64) int {
			for i, p := range flat {
				if p.hasPos && p.pos-pos > 0 {
					return i
				}
			}
			return len(flat)
		}
		indexOf := func(k partKey) int {
			return slices.IndexFunc(flat, func(p part) bool { return p.key() == k })
		}
		for step := range 200 + rng.IntN(800) {
			np := randPart(1 + rng.IntN(60))
			k := np.key()
			i := indexOf(k)
			switch {
			case i >= 0 && rng.IntN(3) == 0: // delete
				pl.remove(pl.find(k))
				flat = slices.Delete(flat, i, i+1)
			case i >= 0 && !np.hasPos: // update in place
				pn := pl.find(k)
				pn.p = np
				pl.changed(pn)
				flat[i] = np
			case i >= 0: // update with a position
				pn := pl.find(k)
				pl.remove(pn)
				pn.p = np
				pn.pull()
				pl.insert(pl.firstPosAbove(np.pos), pn)
				flat = slices.Delete(flat, i, i+1)
				flat = slices.Insert(flat, scanAbove(np.pos), np)
			default:
				at := len(flat)
				if np.hasPos {
					at = scanAbove(np.pos)
				}
				pl.insert(at, nodes.alloc(np))
				flat = slices.Insert(flat, at, np)
			}
			steps++
			var got []part
			for pn := pl.first(); pn != nil; pn = pn.next() {
				got = append(got, pn.p)
			}
			var back []part
			if pl.len() > 0 {
				for pn := pl.at(pl.len() - 1); pn != nil; pn = pn.prev() {
					back = append(back, pn.p)
				}
			}
			slices.Reverse(back)
			same := func(a, b part) bool {
				return a.kind == b.kind && a.lid == b.lid && a.sid == b.sid && sameNum(a.ts, b.ts) &&
					a.hasPos == b.hasPos && math.Float64bits(a.pos) == math.Float64bits(b.pos)
			}
			if pl.len() != len(flat) || !slices.EqualFunc(got, flat, same) || !slices.EqualFunc(back, flat, same) {
				t.Fatalf("seed %d step %d: parts differ", seed, step)
			}
			want := undef
			for i, p := range flat {
				want = foldTimestamp(want, p.ts)
				if pn := pl.find(p.key()); pn == nil || pl.index(pn) != i || pl.at(i) != pn {
					t.Fatalf("seed %d step %d: part %d not found in its place", seed, step, i)
				}
			}
			if !sameNum(pl.ts(), want) {
				t.Fatalf("seed %d step %d: timestamp %v, want %v", seed, step, pl.ts(), want)
			}
			for _, pos := range append([]float64{float64(rng.IntN(32)) - 1, 0.5}, positions...) {
				if got, want := pl.firstPosAbove(pos), scanAbove(pos); got != want {
					t.Fatalf("seed %d step %d: first position above %v at %d, want %d", seed, step, pos, got, want)
				}
			}
		}
	}
	t.Logf("%d steps", steps)
}

// TestPartUpdatesEqualsReference replays logs of a few big HowTo groupings whose parts (plain
// and livestream) are updated, moved and deleted, and requires before every delete the anchor
// the whole uiList gives, and after every event the reference's order and screen.
func TestPartUpdatesEqualsReference(t *testing.T) {
	deletes := 0
	for seed := uint64(1); seed <= 20; seed++ {
		events := seededLog(seed, 23, 400, func(rng *rand.Rand, i int) Event {
			id := fmt.Sprint("p", rng.IntN(40))
			group := fmt.Sprint("_:h", rng.IntN(3))
			switch rng.IntN(12) {
			case 0:
				return Event{Op: OpDelete, ActivityID: id}
			case 1:
				return shapeMsg(fmt.Sprint("m", i), rng.IntN(900), "")
			case 2:
				sid := fmt.Sprint("s", rng.IntN(4))
				return in(fmt.Sprintf(`{"type":"typing","id":"r%d","text":"x","from":{"id":"bot"},`+
					`"timestamp":"2025-01-01T00:%02d:00.000Z","channelData":{"streamType":"streaming","streamSequence":%d,"streamId":%q},`+
					`"entities":[{"@context":"https://schema.org","@id":"","@type":"Message","type":"https://schema.org/Message",`+
					`"isPartOf":{"@id":%q,"@type":"HowTo"},"position":%d}]}`, i, rng.IntN(15), 1+rng.IntN(9), sid, group, rng.IntN(20)))
			case 3:
				return Event{Op: OpDelete, ActivityID: fmt.Sprint("r", rng.IntN(i+1))}
			}
			return howToPart(id, group, rng.IntN(20), rng.IntN(900))
		})
		opts := Options{Profile: GenC, UserID: "u-user"}
		fast := New(opts)
		agreesWithReference(t, fmt.Sprint("seed ", seed), fast, opts, events, true, anchorCheck(t, fast.st.c, seed, &deletes))
	}
	t.Logf("%d deletes", deletes)
}
