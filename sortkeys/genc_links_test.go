package sortkeys

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGenCDeleteAfterRecreate deletes an activity of a HowTo grouping or a livestream session
// whose id an earlier, deleted one already used: the delete must reach the grouping or session the
// activity joined (the recreated one), whose timestamp or existence then decides where later
// activities go.
func TestGenCDeleteAfterRecreate(t *testing.T) {
	part := func(id, ts string) string {
		return `{"type":"message","id":"` + id + `","timestamp":"` + ts + `","entities":[{"type":"https://schema.org/Message",` +
			`"@type":"Message","@id":"","isPartOf":{"@id":"_:g","@type":"HowTo"},"position":1}]}`
	}
	stream := func(id, ts string) string {
		return `{"type":"typing","id":"` + id + `","timestamp":"` + ts + `","text":"x",` +
			`"channelData":{"streamType":"streaming","streamSequence":1}}`
	}
	plain := func(id, ts string) string {
		return `{"type":"message","id":"` + id + `","timestamp":"` + ts + `","text":"x"}`
	}
	for _, c := range []struct {
		name   string
		events []Event
		want   []string
	}{
		// b1 leaves the recreated grouping, whose timestamp drops to b2's: d1 comes after it.
		{"grouping", []Event{
			{Op: OpIncoming, Activity: json.RawMessage(part("a1", "2025-01-01T00:00:01Z"))},
			{Op: OpDelete, ActivityID: "a1"},
			{Op: OpIncoming, Activity: json.RawMessage(part("b1", "2025-01-01T00:00:05Z"))},
			{Op: OpIncoming, Activity: json.RawMessage(part("b2", "2025-01-01T00:00:03Z"))},
			{Op: OpDelete, ActivityID: "b1"},
			{Op: OpIncoming, Activity: json.RawMessage(plain("d1", "2025-01-01T00:00:04Z"))},
		}, []string{"b2", "d1"}},
		// The recreated session is deleted with its only activity: a third one with its id starts
		// a new session, after c1.
		{"session", []Event{
			{Op: OpIncoming, Activity: json.RawMessage(stream("s1", "2025-01-01T00:00:01Z"))},
			{Op: OpDelete, ActivityID: "s1"},
			{Op: OpIncoming, Activity: json.RawMessage(stream("s1", "2025-01-01T00:00:02Z"))},
			{Op: OpIncoming, Activity: json.RawMessage(plain("c1", "2025-01-01T00:00:09Z"))},
			{Op: OpDelete, ActivityID: "s1"},
			{Op: OpIncoming, Activity: json.RawMessage(stream("s1", "2025-01-01T00:00:10Z"))},
		}, []string{"c1", "s1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := New(Options{Profile: GenC, UserID: "u"})
			for _, ev := range c.events {
				if err := r.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
			if got := r.Names(); !slices.Equal(got, c.want) {
				t.Fatalf("order %q, want %q", got, c.want)
			}
		})
	}
}

// TestPrefetchLeaf asks for the leaf lines of units in a B-tree whose slot hints removals left
// stale, and of units out of the list: a prefetch must neither fault nor change the tree.
func TestPrefetchLeaf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fast, ref := newBtreeList(), &sliceList{}
	var in []*unit
	for n := 0; n < 3000; n++ {
		u := &unit{kind: unitActivity, tsDef: true, tsV: float64(rng.IntN(500))}
		i := ref.FirstGreater(u)
		fast.Insert(u, i)
		ref.Insert(u, i)
		in = append(in, u)
	}
	for _, u := range in[:1000] {
		fast.Remove(u)
		ref.Remove(u)
	}
	prefetch(nil)
	for _, u := range in {
		prefetchLeaf(u)
	}
	for i := 0; i < ref.Len(); i++ {
		if fast.At(i) != ref.At(i) || fast.Index(ref.At(i)) != i {
			t.Fatalf("unit %d moved", i)
		}
	}
}

// TestManyLinks links local ids to random sessions and groupings, some to many more than
// linkScan, and deletes some, and requires after every step what a list per local id gives:
// isLinked and linked, in the order of linking, and no manyLinks entry left for a deleted one.
func TestManyLinks(t *testing.T) {
	steps := 0
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 13))
		g := New(Options{Profile: GenC}).st.c
		type key struct {
			idx   int
			group bool
		}
		model := map[int32][]key{}
		var lids []int32
		for range 3 + rng.IntN(5) {
			lids = append(lids, g.newLid())
		}
		for step := range 300 + rng.IntN(700) {
			lid := lids[rng.IntN(len(lids))]
			if rng.IntN(40) == 0 {
				g.unlink(int(lid))
				delete(model, lid)
			} else {
				k := key{rng.IntN(1 + rng.IntN(60)), rng.IntN(2) == 0}
				g.addLink(lid, g.loc(int(lid)), k.idx, k.group)
				if !slices.Contains(model[lid], k) {
					model[lid] = append(model[lid], k)
				}
			}
			steps++
			stale := 0
			for k := range g.manyLinks {
				if len(model[k.lid]) <= linkScan || !slices.Contains(model[k.lid], key{int(k.idx), k.group}) {
					stale++
				}
			}
			if stale > 0 {
				t.Fatalf("seed %d step %d: %d stale manyLinks entries", seed, step, stale)
			}
			for _, lid := range lids {
				for _, group := range []bool{false, true} {
					var want []int
					for _, k := range model[lid] {
						if k.group == group {
							want = append(want, k.idx)
						}
					}
					if got := g.linked(int(lid), group); !slices.Equal(got, want) {
						t.Fatalf("seed %d step %d: linked(%d, %v) = %v, want %v", seed, step, lid, group, got, want)
					}
					for idx := range 61 {
						if got, want := g.isLinked(lid, g.loc(int(lid)), idx, group), slices.Contains(model[lid], key{idx, group}); got != want {
							t.Fatalf("seed %d step %d: isLinked(%d, %d, %v) = %v", seed, step, lid, idx, group, got)
						}
					}
				}
			}
		}
	}
	t.Logf("%d steps", steps)
}

// TestRegroupEqualsReference replays logs where ids are re-delivered into new HowTo groupings
// and livestream sessions, with deletes, and requires the reference's order and screen after
// every event.
func TestRegroupEqualsReference(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		events := seededLog(seed, 17, 300, func(rng *rand.Rand, i int) Event {
			id := fmt.Sprint("x", rng.IntN(3))
			switch rng.IntN(10) {
			case 0:
				return Event{Op: OpDelete, ActivityID: id}
			case 1:
				return shapeMsg(fmt.Sprint("m", i), rng.IntN(600), "")
			case 2:
				return streamRevision(i, 1+rng.IntN(20), rng.IntN(3) == 0)
			}
			return howToPart(id, fmt.Sprint("_:g", rng.IntN(1+i/3)), rng.IntN(3), rng.IntN(600))
		})
		opts := Options{Profile: GenC, UserID: "u-user"}
		agreesWithReference(t, fmt.Sprint("seed ", seed), New(opts), opts, events, true, nil)
	}
}

// TestSessionRegroupEqualsReference replays logs where livestream sessions are re-delivered into
// many HowTo groupings, with deletes, and requires the reference's order and screen after every
// event, and before each event that inGrouping answers as a scan of session.groups does.
func TestSessionRegroupEqualsReference(t *testing.T) {
	many := 0
	for seed := uint64(1); seed <= 12; seed++ {
		events := seededLog(seed, 19, 250, func(rng *rand.Rand, i int) Event {
			sid := fmt.Sprint("s", rng.IntN(3))
			switch rng.IntN(12) {
			case 0:
				return Event{Op: OpDelete, ActivityID: fmt.Sprint("r", rng.IntN(i+1))}
			case 1:
				return shapeMsg(fmt.Sprint("m", i), rng.IntN(600), "")
			}
			id := fmt.Sprint("r", i)
			if rng.IntN(4) == 0 {
				id = sid
			}
			return sessionRevision(id, sid, 1+rng.IntN(20), rng.IntN(600), partOfEntities(fmt.Sprint("_:g", rng.IntN(1+i/4)), ""))
		})
		opts := Options{Profile: GenC, UserID: "u-user"}
		fast := New(opts)
		g := fast.st.c
		agreesWithReference(t, fmt.Sprint("seed ", seed), fast, opts, events, true, func(i int, _ Event) {
			for _, s := range g.sessionList {
				if s == nil {
					continue
				}
				if len(s.groups) > linkScan {
					many++
				}
				for gi := range int32(len(g.groupList)) {
					if got, want := g.inGrouping(s, gi), slices.Contains(s.groups, gi); got != want {
						t.Fatalf("seed %d event %d: inGrouping(%s, %d) = %v", seed, i, s.sid, gi, got)
					}
				}
			}
		})
	}
	if many == 0 {
		t.Fatal("no session reached more than linkScan groupings")
	}
}

// seededLog is n events, the i-th next(rng, i), with rng seeded by seed and stream.
func seededLog(seed, stream uint64, n int, next func(rng *rand.Rand, i int) Event) []Event {
	rng := rand.New(rand.NewPCG(seed, stream))
	events := make([]Event, n)
	for i := range events {
		events[i] = next(rng, i)
	}
	return events
}
