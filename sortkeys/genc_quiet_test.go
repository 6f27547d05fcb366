package sortkeys

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// quietLog is a gen-c log of n events that leaves many main-list units showing nothing: sessions
// whose revisions are delivered more than once and deleted (which keeps them in the list with
// entries of deleted activities only), at later and later times and now and then earlier ones.
// grouped puts most sessions into a few HowTo groupings, some into two, next to plain parts.
// Between them: messages, most deleted at once; late revisions of quiet sessions, which show
// again, some deleted later; deletes of earlier ids in random order.
func quietLog(seed uint64, n int, grouped bool) []Event {
	rng := rand.New(rand.NewPCG(seed, 31))
	var events []Event
	var ids []string // delivered, for deletes in random order
	sessions := 0
	group := func() string {
		if !grouped || rng.IntN(5) == 0 {
			return ""
		}
		return partOfEntities(fmt.Sprint("_:g", rng.IntN(1+sessions/8)), "")
	}
	for i := 0; len(events) < n; i++ {
		sec := 2 * i
		if rng.IntN(8) == 0 {
			sec = rng.IntN(sec + 1)
		}
		switch k := rng.IntN(20); {
		case k < 8:
			sid := fmt.Sprint("s", sessions)
			sessions++
			ext := group()
			for range 2 + rng.IntN(2) {
				events = append(events, sessionRevision(sid, sid, 1, sec, ext))
			}
			if grouped && rng.IntN(4) == 0 { // the same revision into a second grouping
				events = append(events, sessionRevision(sid, sid, 1, sec, group()))
			}
			events = append(events, Event{Op: OpDelete, ActivityID: sid})
		case k < 12:
			m := fmt.Sprint("m", i)
			events = append(events, shapeMsg(m, sec+1, ""))
			if rng.IntN(5) > 0 {
				events = append(events, Event{Op: OpDelete, ActivityID: m})
			} else {
				ids = append(ids, m)
			}
		case k < 14 && grouped:
			p := fmt.Sprint("p", i)
			events = append(events, howToPart(p, fmt.Sprint("_:g", rng.IntN(1+sessions/8)), rng.IntN(3), sec))
			ids = append(ids, p)
		case k < 17 && sessions > 0:
			r := fmt.Sprint("r", i)
			sid := fmt.Sprint("s", rng.IntN(sessions))
			events = append(events, sessionRevision(r, sid, 2+rng.IntN(3), sec, group()))
			ids = append(ids, r)
		case len(ids) > 0:
			j := rng.IntN(len(ids))
			events = append(events, Event{Op: OpDelete, ActivityID: ids[j]})
			ids[j] = ids[len(ids)-1]
			ids = ids[:len(ids)-1]
		}
	}
	return events[:n]
}

// TestQuietUnitsEqualsReference replays the quiet logs and requires, before every delete, that
// the list's LoudBefore names for every index the unit a step back over the units, asking each
// for the last record it emits, finds (the walk emittedBefore made before the list kept quiet
// units), and the anchor the whole uiList gives; after every event, the reference's order and
// screen. The logs must reach long runs of quiet units, groupings among them, and quiet units
// that show something again.
func TestQuietUnitsEqualsReference(t *testing.T) {
	for _, c := range []struct {
		name    string
		grouped bool
	}{{"sessions", false}, {"groupings", true}} {
		t.Run(c.name, func(t *testing.T) {
			deletes, skips, quietGroupings, woken := 0, 0, 0, 0
			for seed := uint64(1); seed <= 16; seed++ {
				events := quietLog(seed, 600, c.grouped)
				opts := Options{Profile: GenC, UserID: "u-user"}
				fast := New(opts)
				g := fast.st.c
				literal := literalLoudBefore(g)
				quiet := map[*unit]bool{}
				anchors := anchorCheck(t, g, seed, &deletes)
				agreesWithReference(t, fmt.Sprint("seed ", seed), fast, opts, events, true, func(i int, ev Event) {
					now := map[*unit]bool{}
					for ui := range g.list.Len() {
						u := g.list.At(ui)
						if _, _, ok := g.lastIn(ui, math.MaxInt, endKey); !ok {
							now[u] = true
							if u.kind == unitGrouping {
								quietGroupings++
							}
						} else if quiet[u] {
							woken++
						}
					}
					quiet = now
					if ev.Op != OpDelete {
						return
					}
					for ui := range g.list.Len() + 1 {
						got, want := g.loudBefore(ui), literal(ui)
						if got != want {
							t.Fatalf("seed %d event %d: loud unit before %d is %d, want %d", seed, i, ui, got, want)
						}
						if want < ui-2 {
							skips++
						}
					}
					anchors(i, ev)
				})
			}
			t.Logf("%d deletes; %d answers skipping more than one quiet unit; %d quiet groupings seen, %d quiet units woken", deletes, skips, quietGroupings, woken)
			if skips < 1000 || woken < 50 || (c.grouped && quietGroupings < 100) {
				t.Fatal("the logs do not reach the cases that matter")
			}
		})
	}
}
