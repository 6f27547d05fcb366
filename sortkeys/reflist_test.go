package sortkeys

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// sliceList is the straightforward reference for unitList: a slice, linear scans, and Web Chat's
// comparator evaluated directly on every unit.
type sliceList struct {
	units []*unit
	quiet map[*unit]bool
}

func (s *sliceList) Len() int { return len(s.units) }

func (s *sliceList) Insert(u *unit, i int) {
	s.units = append(s.units, nil)
	copy(s.units[i+1:], s.units[i:])
	s.units[i] = u
}

func (s *sliceList) Remove(u *unit) {
	i := s.Index(u)
	s.units = append(s.units[:i], s.units[i+1:]...)
	delete(s.quiet, u)
}

func (s *sliceList) Quiet(u *unit, quiet bool) {
	if !slices.Contains(s.units, u) {
		return
	}
	if s.quiet == nil {
		s.quiet = map[*unit]bool{}
	}
	s.quiet[u] = quiet
}

func (s *sliceList) LoudBefore(i int) int {
	for i--; i >= 0 && s.quiet[s.units[i]]; i-- {
	}
	return i
}

func (s *sliceList) Index(u *unit) int {
	for i, x := range s.units {
		if x == u {
			return i
		}
	}
	panic("unit not in list")
}

func (s *sliceList) Refresh(*unit) {}

func (s *sliceList) InsertOrdered(u *unit) { s.Insert(u, s.FirstGreater(u)) }

func (s *sliceList) Reposition(u *unit, _ bool) {
	s.Remove(u)
	s.Insert(u, s.FirstGreater(u))
}

func (s *sliceList) FirstGreater(q *unit) int {
	for i, x := range s.units {
		if greater(x, q) {
			return i
		}
	}
	return len(s.units)
}

func (s *sliceList) FirstSeqAbove(v float64, from int) int {
	for i := from; i < len(s.units); i++ {
		if s.units[i].seq > v {
			return i
		}
	}
	return len(s.units)
}

func (s *sliceList) At(i int) *unit { return s.units[i] }

func (s *sliceList) Each(f func(*unit) bool) {
	for _, u := range s.units {
		if !f(u) {
			return
		}
	}
}

// newReference replays with the slice list and literal scans in place of the indexed searches:
// for gen-a and gen-b the neighbour and insertion searches, for gen-c the search for a unit that
// shows something.
func newReference(opts Options) *Replay {
	r := newReplayWith(opts, func() unitList { return &sliceList{} })
	switch g := r.st.eng.(type) {
	case *genAB:
		g.beforeAfter = literalBeforeAfter(g.list)
		g.insertAt = literalInsertAt(g.list, g.genB)
	case *genC:
		g.loudBefore = literalLoudBefore(g)
	}
	return r
}

// literalLoudBefore is how emittedBefore stepped back before the list kept quiet units: unit by
// unit, asking each for the last record it emits.
func literalLoudBefore(g *genC) func(int) int {
	return func(i int) int {
		for i--; i >= 0; i-- {
			if _, _, ok := g.lastIn(i, math.MaxInt, endKey); ok {
				break
			}
		}
		return i
	}
}

// literalBeforeAfter is findBeforeAfter.ts over the whole list.
func literalBeforeAfter(list unitList) func(string, []*unit, float64, func(*unit) bool, func(*unit) bool) (*unit, *unit) {
	return func(_ string, _ []*unit, _ float64, matches, isBefore func(*unit) bool) (*unit, *unit) {
		const unknown, before, after = 0, 1, 2
		var lastValue *unit
		last := unknown
		for i := 0; i < list.Len(); i++ {
			x := list.At(i)
			cur := unknown
			if matches(x) {
				cur = after
				if isBefore(x) {
					cur = before
				}
			}
			if ((last == before || last == unknown) && cur == after) || (last == before && cur != before) {
				return lastValue, x
			}
			lastValue, last = x, cur
		}
		if last == before {
			return lastValue, nil
		}
		return nil, nil
	}
}

// literalInsertAt is the reducer's findIndex over the whole list.
func literalInsertAt(list unitList, genB bool) func(*record) int {
	return func(r *record) int {
		for i := 0; i < list.Len(); i++ {
			x := list.At(i).rec
			if genB && x.ab.hasPos && r.ab.hasPos && x.ab.hasPartOf && r.ab.hasPartOf && x.ab.partOf == r.ab.partOf {
				if x.ab.pos > r.ab.pos {
					return i
				}
				continue
			}
			if seqKey(x.ab.seq) > seqKey(r.ab.seq) {
				return i
			}
		}
		return list.Len()
	}
}

// agreesWithReference replays events with fast and with the reference for opts, and fails at the
// first event after which they differ in error, order, or (with screens) screen. before, when not
// nil, is called ahead of each event.
func agreesWithReference(t *testing.T, what string, fast *Replay, opts Options, events []Event, screens bool, before func(i int, ev Event)) {
	t.Helper()
	ref := newReference(opts)
	for i, ev := range events {
		if before != nil {
			before(i, ev)
		}
		errF, errR := fast.Apply(ev), ref.Apply(ev)
		if fmt.Sprint(errF) != fmt.Sprint(errR) {
			t.Fatalf("%s event %d: error %v, reference %v", what, i, errF, errR)
		}
		if got, want := fast.Names(), ref.Names(); !slices.Equal(got, want) {
			t.Fatalf("%s event %d: %s", what, i, firstDiff(got, want))
		}
		if screens {
			if got, want := bubbleNames(fast.Screen()), bubbleNames(ref.Screen()); !slices.Equal(got, want) {
				t.Fatalf("%s event %d screen: %s", what, i, firstDiff(got, want))
			}
		}
	}
}
