package sortkeys

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMemberOrder inserts units into a list and some of them into a member order, at random
// places and with positions that repeat, are missing, infinite or -0 (and NaN, which no JSON
// position is but the order must leave out), and removes members and other units in random
// orders, as genAB does: a member leaves its order before it leaves the list. After every step
// it requires what scans of the list give: the members in list order, size, first and last, the
// first member with a position above each of several, every member's rank and the end of its
// stretch of consecutive members.
func TestMemberOrder(t *testing.T) {
	positions := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0}
	queries := append(slices.Clone(positions), -1, 3, 7.5, 20)
	steps := 0
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 29))
		list := &sliceList{}
		var o memberOrder
		in := map[*unit]bool{}
		var members []*unit // list order, by scan
		for step := range 100 + rng.IntN(700) {
			steps++
			switch k := rng.IntN(10); {
			case k < 6 || list.Len() == 0:
				ab := &abInfo{}
				switch rng.IntN(6) {
				case 0:
				case 1:
					ab.hasPos, ab.pos = true, positions[rng.IntN(len(positions))]
				default:
					ab.hasPos, ab.pos = true, float64(rng.IntN(20))
				}
				u := &unit{rec: &record{ab: ab}}
				// Mostly at the end, as parts and revisions come; else anywhere.
				i := list.Len()
				if rng.IntN(3) == 0 {
					i = rng.IntN(list.Len() + 1)
				}
				list.Insert(u, i)
				if rng.IntN(4) > 0 {
					o.insert(list, u)
					in[u] = true
				}
			default:
				u := list.At(rng.IntN(list.Len()))
				if in[u] {
					o.remove(list, u)
					delete(in, u)
				}
				list.Remove(u)
			}
			members = members[:0]
			for _, u := range list.units {
				if in[u] {
					members = append(members, u)
				}
			}
			what := fmt.Sprintf("seed %d step %d", seed, step)
			var got []*unit
			walkMembers(o.root, func(t *memberNode) { got = append(got, t.u) })
			if !slices.Equal(got, members) {
				t.Fatalf("%s: order holds %d units, not the %d members in list order", what, len(got), len(members))
			}
			if o.len() != len(members) {
				t.Fatalf("%s: len %d, want %d", what, o.len(), len(members))
			}
			if len(members) == 0 {
				if o.last() != nil {
					t.Fatalf("%s: last of an empty order", what)
				}
				continue
			}
			if o.first() != members[0] || o.last() != members[len(members)-1] {
				t.Fatalf("%s: first or last is not the scan's", what)
			}
			for _, pos := range queries {
				want := (*unit)(nil)
				for _, u := range members {
					if ab := u.rec.ab; ab.hasPos && ab.pos-pos > 0 {
						want = u
						break
					}
				}
				if got := o.firstPosAbove(pos); got != want {
					t.Fatalf("%s: firstPosAbove(%v) is not the scan's", what, pos)
				}
			}
			for q, u := range members {
				i := list.Index(u)
				if got := o.rank(list, i); got != q {
					t.Fatalf("%s: rank at %d = %d, want %d", what, i, got, q)
				}
				end := i + 1
				for end < list.Len() && in[list.At(end)] {
					end++
				}
				if got := o.stretchEnd(list, i); got != end {
					t.Fatalf("%s: stretchEnd(%d) = %d, want %d", what, i, got, end)
				}
			}
		}
	}
	t.Logf("%d steps", steps)
}

// walkMembers calls f on t's nodes in order.
func walkMembers(t *memberNode, f func(*memberNode)) {
	if t != nil {
		walkMembers(t.left, f)
		f(t)
		walkMembers(t.right, f)
	}
}

// checkPartOrders requires that g's part orders hold exactly, per grouping, the list's units
// with a part-of and a numeric position, in list order, and that every node's size and highest
// position are its subtree's.
func checkPartOrders(t *testing.T, what string, g *genAB) {
	t.Helper()
	want := map[string][]*unit{}
	g.list.Each(func(u *unit) bool {
		if ab := u.rec.ab; ab.hasPartOf && ab.hasPos {
			want[ab.partOf] = append(want[ab.partOf], u)
		}
		return true
	})
	if len(g.parts) != len(want) {
		t.Fatalf("%s: %d part orders for %d groupings", what, len(g.parts), len(want))
	}
	for key, o := range g.parts {
		var got []*unit
		var check func(*memberNode) (int, float64)
		check = func(n *memberNode) (int, float64) {
			if n == nil {
				return 0, math.Inf(-1)
			}
			ls, lm := check(n.left)
			got = append(got, n.u)
			rs, rm := check(n.right)
			m := math.Max(lm, rm)
			if ab := n.u.rec.ab; !math.IsNaN(ab.pos) {
				m = math.Max(m, ab.pos)
			}
			if n.size != ls+rs+1 || n.maxPos != m {
				t.Fatalf("%s: grouping %q node has size %d and highest position %v, want %d and %v",
					what, key, n.size, n.maxPos, ls+rs+1, m)
			}
			return n.size, m
		}
		check(o.root)
		if !slices.Equal(got, want[key]) {
			t.Fatalf("%s: grouping %q order holds %d units, not its %d parts in list order", what, key, len(got), len(want[key]))
		}
	}
}

// bigPartsCase is a shape of gen-b log for bigPartsLog.
type bigPartsCase struct {
	name string
	// groupings share parts first delivered in position order, parts each; updates then move
	// parts between them.
	groupings, parts int
	// positions are what an update's position is drawn from besides a part's own: JSON numbers,
	// "" for none, or a string, which is no position either.
	positions []string
	// cdOdds: one part in cdOdds carries its part-of and position in channelData (0: never).
	cdOdds int
	// seqOdds: one plain message in seqOdds carries a webchat:sequence-id (0: never).
	seqOdds int
	// sends: the user sends parts, later fulfilled as parts that may sit elsewhere.
	sends bool
}

// bigPartsLog is a gen-b log of big part groupings updated at random: parts delivered first in
// position order, then, after every part is in, n more events of which most deliver again a
// part that is mostly not its grouping's last, keeping its position or taking another (equal
// to others', infinite, -0, or none), at a timestamp that falls, stays or rises; others move a
// part to another grouping, delete parts and deliver them again, or put plain messages between
// them, with c's sequence ids and user sends.
func bigPartsLog(seed uint64, c bigPartsCase, n int) []Event {
	rng := rand.New(rand.NewPCG(seed, 31))
	type state struct {
		group, sec int
		pos        string
	}
	parts := make([]state, c.groupings*c.parts)
	clock := 0
	stamp := func() int {
		switch k := rng.IntN(10); {
		case k < 3:
			clock -= rng.IntN(30)
		case k < 6:
		default:
			clock += rng.IntN(4)
		}
		return max(clock, 0)
	}
	at := func(sec int) string {
		return fmt.Sprintf("2025-01-01T%02d:%02d:%02d.000Z", sec/3600%24, sec/60%60, sec%60)
	}
	partEvent := func(op Op, id, cid string, s state) Event {
		group := fmt.Sprint("_:g", s.group)
		a := fmt.Sprintf(`{"type":"message","text":"step","timestamp":%q`, at(s.sec))
		if id != "" {
			a += fmt.Sprintf(`,"id":%q`, id)
		}
		cd := ""
		if cid != "" {
			a += `,"from":{"id":"u-user","role":"user"}`
			cd = fmt.Sprintf(`"clientActivityID":%q`, cid)
		} else {
			a += `,"from":{"id":"bot","role":"bot"}`
		}
		if c.cdOdds > 0 && rng.IntN(c.cdOdds) == 0 {
			if cd != "" {
				cd += ","
			}
			cd += fmt.Sprintf(`"webchat:entity-part-of":%q`, group)
			if s.pos != "" {
				cd += `,"webchat:entity-position":` + s.pos
			}
		} else {
			p := ""
			if s.pos != "" {
				p = `,"position":` + s.pos
			}
			a += partOfEntities(group, p)
		}
		if cd != "" {
			a += `,"channelData":{` + cd + `}`
		}
		return Event{Op: op, Activity: []byte(a + "}"), ClientActivityID: cidIf(op == OpFulfilled, cid)}
	}
	var events []Event
	for k := range parts {
		parts[k] = state{group: k / c.parts, pos: fmt.Sprint(k%c.parts + 1), sec: stamp()}
		events = append(events, partEvent(OpIncoming, fmt.Sprint("p", k), "", parts[k]))
	}
	var pending []string
	for range n {
		k := rng.IntN(len(parts))
		id := fmt.Sprint("p", k)
		switch op := rng.IntN(20); {
		case op < 10:
			if rng.IntN(3) == 0 {
				parts[k].pos = c.positions[rng.IntN(len(c.positions))]
			}
			parts[k].sec = stamp()
			events = append(events, partEvent(OpIncoming, id, "", parts[k]))
		case op < 11:
			parts[k].group = rng.IntN(c.groupings)
			events = append(events, partEvent(OpIncoming, id, "", parts[k]))
		case op < 13:
			events = append(events, Event{Op: OpDelete, ActivityID: id})
		case op < 16:
			extra := ""
			if c.seqOdds > 0 && rng.IntN(c.seqOdds) == 0 {
				seq := 1735689600000 + 1000*parts[rng.IntN(len(parts))].sec
				extra = fmt.Sprintf(`,"channelData":{"webchat:sequence-id":%d}`, seq+rng.IntN(2))
			}
			events = append(events, shapeMsg(fmt.Sprint("m", len(events)), stamp(), extra))
		case op < 18 && c.sends:
			cid := fmt.Sprint("c", len(events))
			pending = append(pending, cid)
			s := parts[k]
			s.sec = stamp()
			events = append(events, partEvent(OpPost, "", cid, s))
		case c.sends && len(pending) > 0:
			i := rng.IntN(len(pending))
			cid := pending[i]
			pending = slices.Delete(pending, i, i+1)
			s := parts[k]
			s.pos, s.sec = c.positions[rng.IntN(len(c.positions))], stamp()
			events = append(events, partEvent(OpFulfilled, fmt.Sprint("f", len(events)), cid, s))
		default:
			parts[k].sec = stamp()
			events = append(events, partEvent(OpIncoming, id, "", parts[k]))
		}
	}
	return events
}

func cidIf(ok bool, cid string) string {
	if ok {
		return cid
	}
	return ""
}

// TestBigPartGroupingsEqualsReference replays, with gen-b, bigPartsLog in several shapes with
// the part orders and with the reducer's literal findIndex, and requires the same order and
// screen after every event, and part orders that hold each grouping's parts in list order with
// their subtrees' sizes and highest positions before every event. Most updates must replace a
// part that is not its grouping's last.
func TestBigPartGroupingsEqualsReference(t *testing.T) {
	numbers := []string{"1", "2", "2", "40", "150", "151", "0", "-0", "1e999", "-1e999", "2.5"}
	for _, c := range []bigPartsCase{
		{name: "one grouping, positions kept or equal", groupings: 1, parts: 250,
			positions: []string{"1", "100", "100", "200", "249"}},
		{name: "infinite, -0 and missing positions", groupings: 1, parts: 200,
			positions: append(slices.Clone(numbers), "", `"x"`)},
		{name: "two groupings, channelData and sequence ids", groupings: 2, parts: 120,
			positions: numbers, cdOdds: 3, seqOdds: 2},
		{name: "three groupings, sends", groupings: 3, parts: 80,
			positions: append(slices.Clone(numbers), ""), cdOdds: 5, seqOdds: 4, sends: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			nonLast, largest := 0, 0
			for seed := uint64(1); seed <= 5; seed++ {
				opts := Options{Profile: GenB, UserID: "u-user"}
				fast := New(opts)
				g := fast.st.eng.(*genAB)
				what := fmt.Sprint("seed ", seed)
				agreesWithReference(t, what, fast, opts, bigPartsLog(seed, c, 600), true, func(i int, ev Event) {
					checkPartOrders(t, fmt.Sprint(what, " event ", i), g)
					for _, o := range g.parts {
						largest = max(largest, o.len())
					}
					id := ev.ActivityID
					if ev.Op == OpIncoming {
						var a struct{ ID string }
						if err := json.Unmarshal(ev.Activity, &a); err != nil {
							t.Fatal(err)
						}
						id = a.ID
					}
					for _, u := range g.byID[id] {
						if ab := u.rec.ab; ab.hasPartOf && ab.hasPos && g.parts[ab.partOf].last() != u {
							nonLast++
						}
					}
				})
			}
			if nonLast < 1000 || largest < c.parts {
				t.Fatalf("%d parts replaced or deleted that were not their grouping's last; largest grouping %d", nonLast, largest)
			}
			t.Logf("%d parts replaced or deleted that were not their grouping's last; largest grouping %d", nonLast, largest)
		})
	}
}
