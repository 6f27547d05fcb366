package sortkeys

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// literalUIBefore is how delete found its ghost's anchor before uiBefore: the element before
// lid's first live appearance in the whole uiList, or -1.
func literalUIBefore(g *genC, lid int) int {
	ui := g.uiList()
	for i, r := range ui {
		if !r.ghost && int(r.lid) == lid {
			if i > 0 {
				return int(ui[i-1].lid)
			}
			break
		}
	}
	return -1
}

// literalGroupsWithSession scans every grouping for session s.
func literalGroupsWithSession(g *genC, s *session) []*grouping {
	var out []*grouping
	for _, gr := range g.groupList {
		if gr != nil && gr.sessionPart(s.sid) >= 0 {
			out = append(out, gr)
		}
	}
	return out
}

// TestDeleteAnchor replays random logs with deletes and requires, before every delete, the
// anchor the whole uiList gives and the groupings a scan of all of them finds.
func TestDeleteAnchor(t *testing.T) {
	deletes, ghosted := 0, 0
	for seed := uint64(1); seed <= 60; seed++ {
		n := 200 + int(seed)*40
		logs := map[string][]Event{"wild": randomLog(seed, n, true), "deletes": deleteLog(seed, n)}
		for name, events := range logs {
			for _, ref := range []bool{false, true} {
				var r *Replay
				if ref {
					r = newReference(Options{Profile: GenC, UserID: "u-user"})
				} else {
					r = New(Options{Profile: GenC, UserID: "u-user"})
				}
				g := r.st.c
				for i, ev := range events {
					if ev.Op == OpDelete {
						if lid, ok := g.idMap.get(ev.ActivityID); ok && g.act(lid) != nil {
							where := fmt.Sprintf("%s seed %d event %d (reference list %v)", name, seed, i, ref)
							want := literalUIBefore(g, lid)
							if got, _ := g.uiBefore(lid); got != want {
								t.Fatalf("%s: anchor %d, want %d", where, got, want)
							}
							deletes++
							if len(g.ghosts[want]) > 0 || (want > 0 && g.act(want) == nil) {
								ghosted++
							}
							for _, si := range g.linked(lid, false) {
								if s := g.sessionList[si]; s != nil {
									got, want := g.groupsWithSession(s), literalGroupsWithSession(g, s)
									slices.SortFunc(got, func(a, b *grouping) int { return int(a.idx - b.idx) })
									if !slices.Equal(got, want) {
										t.Fatalf("%s: groupings of session %s differ", where, s.sid)
									}
								}
							}
						}
					}
					if err := r.Apply(ev); err != nil {
						t.Fatalf("%s seed %d event %d: %v", name, seed, i, err)
					}
				}
			}
		}
	}
	// The logs must reach the cases that matter: many deletes, many next to ghosts.
	if deletes < 5000 || ghosted < 500 {
		t.Fatalf("only %d deletes, %d next to ghosts", deletes, ghosted)
	}
	t.Logf("%d deletes, %d next to ghosts", deletes, ghosted)
}

// runsOfDeletes is a wild random log of about n events followed by deletes of the ids it
// delivered, oldest first, with now and then a new message deleted right after it: runs of
// ghosts each anchored after the one before.
func runsOfDeletes(seed uint64, n int) []Event {
	events := randomLog(seed, n, true)
	rng := rand.New(rand.NewPCG(seed, 7))
	var ids []string
	seen := map[string]bool{}
	for _, ev := range events {
		var a struct{ ID string }
		if json.Unmarshal(ev.Activity, &a) == nil && a.ID != "" && !seen[a.ID] {
			seen[a.ID] = true
			ids = append(ids, a.ID)
		}
	}
	for i, id := range ids {
		if rng.IntN(4) == 0 {
			fresh := fmt.Sprint("late-", i)
			events = append(events, shapeMsg(fresh, rng.IntN(86400), ""), Event{Op: OpDelete, ActivityID: fresh})
		}
		events = append(events, Event{Op: OpDelete, ActivityID: id})
	}
	return events
}

// TestDeleteAnchorRuns requires, on logs of consecutive deletes, the anchor the whole uiList
// gives before every delete, and the order and screen of the reference replay after every event.
func TestDeleteAnchorRuns(t *testing.T) {
	deletes := 0
	for seed := uint64(1); seed <= 30; seed++ {
		events := runsOfDeletes(seed, 100+int(seed)*10)
		opts := Options{Profile: GenC, UserID: "u-user"}
		fast := New(opts)
		agreesWithReference(t, fmt.Sprint("seed ", seed), fast, opts, events, true, anchorCheck(t, fast.st.c, seed, &deletes))
	}
	t.Logf("%d deletes", deletes)
}

// anchorCheck requires, before each delete of a shown activity, the anchor the whole uiList gives,
// and counts those deletes.
func anchorCheck(t *testing.T, g *genC, seed uint64, deletes *int) func(int, Event) {
	return func(i int, ev Event) {
		if ev.Op != OpDelete {
			return
		}
		if lid, ok := g.idMap.get(ev.ActivityID); ok && g.act(lid) != nil {
			if got, want := first(g.uiBefore(lid)), literalUIBefore(g, lid); got != want {
				t.Fatalf("seed %d event %d: anchor %d, want %d", seed, i, got, want)
			}
			*deletes++
		}
	}
}

func first(a, _ int) int { return a }

// TestStreamDeletesEqualsReference replays logs of a few long livestream sessions whose
// revisions (some delivered more than once, with sequences rising, repeated or falling) are
// deleted in random orders, and requires before every delete the anchor the whole uiList gives,
// and after every event the reference's order and screen.
func TestStreamDeletesEqualsReference(t *testing.T) {
	deletes, graves := 0, 0
	for seed := uint64(1); seed <= 16; seed++ {
		events := seededLog(seed, 29, 500, func(rng *rand.Rand, i int) Event {
			id := fmt.Sprint("r", rng.IntN(1+i))
			switch rng.IntN(8) {
			case 0, 1:
				return Event{Op: OpDelete, ActivityID: id}
			case 2:
				return shapeMsg(fmt.Sprint("m", i), rng.IntN(60), "")
			}
			return sessionRevision(id, fmt.Sprint("s", rng.IntN(2)), i/2+rng.IntN(20), rng.IntN(60), "")
		})
		opts := Options{Profile: GenC, UserID: "u-user"}
		fast := New(opts)
		agreesWithReference(t, fmt.Sprint("seed ", seed), fast, opts, events, true, anchorCheck(t, fast.st.c, seed, &deletes))
		for _, s := range fast.st.c.sessionList {
			if s != nil && s.dead != nil {
				graves++
			}
		}
	}
	if graves == 0 {
		t.Fatal("no session kept entries of deleted activities")
	}
	t.Logf("%d deletes, %d sessions with dead entries", deletes, graves)
}
