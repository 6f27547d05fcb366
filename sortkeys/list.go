package sortkeys

import "math"

// unitKind says what a main-list entry stands for (WEBCHAT-ORDERING §4.1 sortedChatHistoryList).
type unitKind uint8

const (
	unitActivity unitKind = iota
	unitSession
	unitGrouping
)

// unit is one entry of the main list: in gen-c a plain activity, a livestream session or a HowTo
// grouping; in gen-a and gen-b always one activity. It doubles as the node of the treap that
// holds the list.
type unit struct {
	kind unitKind
	// rec is the activity of a plain unit (gen-c) or of every gen-a/gen-b unit.
	rec *record
	// key is the session or grouping id.
	key string
	// ts is the logical timestamp the entry was inserted with (gen-c).
	ts jsNum
	// lts is +new Date(localTimestamp) of a plain unit's current revision (gen-c).
	lts jsNum
	// seq is (webchat:sequence-id || 0) (gen-a, gen-b).
	seq float64

	// Treap links and subtree aggregates.
	left, right, parent *unit
	prio                uint32
	size                int
	maxTs               float64 // over units whose ts is a number
	maxLtsUndef         float64 // over plain units without ts whose lts is a number
	maxLtsAll           float64 // over plain units whose lts is a number
	maxSeq              float64
}

// unitList is the ordered main list. treapList is the production implementation; the tests hold
// a linear one with the same contract.
type unitList interface {
	Len() int
	// Insert puts u at index i (0 ≤ i ≤ Len()).
	Insert(u *unit, i int)
	// Remove takes u out of the list.
	Remove(u *unit)
	// Index is u's current index.
	Index(u *unit) int
	// Refresh must be called after u's ts, lts or seq changed in place.
	Refresh(u *unit)
	// Reposition moves u, which is in the list and whose ts or lts may have changed in place, to
	// where Remove(u) followed by Insert(u, FirstGreater(u)) puts it.
	Reposition(u *unit)
	// FirstGreater is the index of the first unit X with compare(X, q) > 0 (gen-c comparator,
	// WEBCHAT-ORDERING §4.3 step 5), or Len() when there is none.
	FirstGreater(q *unit) int
	// FirstSeqAbove is the index of the first unit at or after from whose seq is > v, or Len().
	FirstSeqAbove(v float64, from int) int
	// At is the unit at index i (0 ≤ i < Len()).
	At(i int) *unit
	// Each visits the units in order until f returns false.
	Each(f func(*unit) bool)
}

// greater is compare(x, q) > 0 with Web Chat's gen-c comparator: logical timestamps when both are
// defined (NaN never greater), else localTimestamps when both are plain activities carrying one,
// else never.
func greater(x, q *unit) bool {
	if x.ts.def && q.ts.def {
		return x.ts.v > q.ts.v
	}
	if x.kind == unitActivity && q.kind == unitActivity && x.lts.def && q.lts.def {
		return x.lts.v > q.lts.v
	}
	return false
}

// treapList is an implicit treap (order by position, heap by random priority) with parent links,
// so that insertion at an index, removal by handle, and "first unit that compares greater" are
// all O(log n) expected.
type treapList struct {
	root *unit
	rng  uint64
}

func newTreapList() *treapList { return &treapList{rng: 0x9E3779B97F4A7C15} }

func (t *treapList) nextPrio() uint32 {
	t.rng ^= t.rng << 13
	t.rng ^= t.rng >> 7
	t.rng ^= t.rng << 17
	return uint32(t.rng >> 32)
}

func sizeOf(n *unit) int {
	if n == nil {
		return 0
	}
	return n.size
}

var negInf = math.Inf(-1)

// pull recomputes n's size and aggregates from its children.
func pull(n *unit) {
	n.size = 1
	n.maxTs, n.maxLtsUndef, n.maxLtsAll, n.maxSeq = negInf, negInf, negInf, n.seq
	if n.ts.isNumber() {
		n.maxTs = n.ts.v
	}
	if n.kind == unitActivity && n.lts.isNumber() {
		n.maxLtsAll = n.lts.v
		if !n.ts.def {
			n.maxLtsUndef = n.lts.v
		}
	}
	if n.left != nil {
		n.absorb(n.left)
	}
	if n.right != nil {
		n.absorb(n.right)
	}
}

// absorb folds a child's size and aggregates into n. Aggregates never hold NaN, so plain
// comparisons do.
func (n *unit) absorb(c *unit) {
	n.size += c.size
	if c.maxTs > n.maxTs {
		n.maxTs = c.maxTs
	}
	if c.maxLtsUndef > n.maxLtsUndef {
		n.maxLtsUndef = c.maxLtsUndef
	}
	if c.maxLtsAll > n.maxLtsAll {
		n.maxLtsAll = c.maxLtsAll
	}
	if c.maxSeq > n.maxSeq {
		n.maxSeq = c.maxSeq
	}
}

func (t *treapList) Len() int { return sizeOf(t.root) }

// split cuts n into the first k units and the rest.
func split(n *unit, k int) (l, r *unit) {
	if n == nil {
		return nil, nil
	}
	if sizeOf(n.left) < k {
		a, b := split(n.right, k-sizeOf(n.left)-1)
		n.right = a
		if a != nil {
			a.parent = n
		}
		pull(n)
		if b != nil {
			b.parent = nil
		}
		return n, b
	}
	a, b := split(n.left, k)
	n.left = b
	if b != nil {
		b.parent = n
	}
	pull(n)
	if a != nil {
		a.parent = nil
	}
	return a, n
}

func merge(a, b *unit) *unit {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	if a.prio > b.prio {
		a.right = merge(a.right, b)
		a.right.parent = a
		pull(a)
		return a
	}
	b.left = merge(a, b.left)
	b.left.parent = b
	pull(b)
	return b
}

func (t *treapList) Insert(u *unit, i int) {
	u.left, u.right, u.parent = nil, nil, nil
	u.prio = t.nextPrio()
	// Descend to where u's priority puts it, split the subtree found there around position i,
	// hang the halves under u and fix the aggregates on the way back up: one path, not the three
	// of split-merge-merge.
	var parent *unit
	link := &t.root
	n := t.root
	for n != nil && n.prio > u.prio {
		parent = n
		if l := sizeOf(n.left); i <= l {
			link, n = &n.left, n.left
		} else {
			i -= l + 1
			link, n = &n.right, n.right
		}
	}
	l, r := split(n, i)
	u.left, u.right = l, r
	if l != nil {
		l.parent = u
	}
	if r != nil {
		r.parent = u
	}
	pull(u)
	*link = u
	u.parent = parent
	for p := parent; p != nil; p = p.parent {
		pull(p)
	}
}

func (t *treapList) Remove(u *unit) {
	p := u.parent
	m := merge(u.left, u.right)
	if m != nil {
		m.parent = p
	}
	switch {
	case p == nil:
		t.root = m
	case p.left == u:
		p.left = m
	default:
		p.right = m
	}
	for ; p != nil; p = p.parent {
		pull(p)
	}
	u.left, u.right, u.parent = nil, nil, nil
}

func (t *treapList) Index(u *unit) int {
	i := sizeOf(u.left)
	for n := u; n.parent != nil; n = n.parent {
		if n.parent.right == n {
			i += sizeOf(n.parent.left) + 1
		}
	}
	return i
}

// Reposition leaves u where it is when it would be reinserted at the same index, which is the
// common case for a revised session or activity: no unit before u compares greater than u and
// the unit after it does (compare(u, u) is never > 0, so FirstGreater skips u itself).
func (t *treapList) Reposition(u *unit) {
	t.Refresh(u)
	idx, at := t.Index(u), t.FirstGreater(u)
	if at == idx+1 {
		return
	}
	t.Remove(u)
	if at > idx {
		at--
	}
	t.Insert(u, at)
}

// Refresh recomputes aggregates from u up, and stops at the first node whose aggregates come out
// unchanged: its ancestors depend on u only through them. A revision that keeps its unit's keys
// costs one node, not the whole path.
func (t *treapList) Refresh(u *unit) {
	for n := u; n != nil; n = n.parent {
		before := n.aggregates()
		pull(n)
		if n.aggregates() == before {
			return
		}
	}
}

type aggregates struct {
	size                                  int
	maxTs, maxLtsUndef, maxLtsAll, maxSeq float64
}

// aggregates are n's subtree values; they never hold NaN, so == compares them exactly.
func (n *unit) aggregates() aggregates {
	return aggregates{n.size, n.maxTs, n.maxLtsUndef, n.maxLtsAll, n.maxSeq}
}

// first returns the index of the first unit at or after from for which self holds, descending
// only into subtrees for which sub (an exact aggregate test) holds; Len() when there is none.
func (t *treapList) first(from int, sub, self func(*unit) bool) int {
	var rec func(n *unit, base int) int
	rec = func(n *unit, base int) int {
		if n == nil || !sub(n) || base+n.size <= from {
			return -1
		}
		idx := base + sizeOf(n.left)
		if from < idx {
			if r := rec(n.left, base); r >= 0 {
				return r
			}
		}
		if idx >= from && self(n) {
			return idx
		}
		return rec(n.right, idx+1)
	}
	if r := rec(t.root, 0); r >= 0 {
		return r
	}
	return t.Len()
}

func (t *treapList) FirstGreater(q *unit) int {
	qPlainLts := q.kind == unitActivity && q.lts.isNumber()
	switch {
	case q.ts.isNumber():
		v := q.ts.v
		return t.first(0, func(n *unit) bool {
			return n.maxTs > v || (qPlainLts && n.maxLtsUndef > q.lts.v)
		}, func(n *unit) bool { return greater(n, q) })
	case q.ts.def: // NaN: only the localTimestamp fallback against units without ts can win
		if !qPlainLts {
			return t.Len()
		}
		return t.first(0, func(n *unit) bool { return n.maxLtsUndef > q.lts.v },
			func(n *unit) bool { return greater(n, q) })
	default:
		if !qPlainLts {
			return t.Len()
		}
		return t.first(0, func(n *unit) bool { return n.maxLtsAll > q.lts.v },
			func(n *unit) bool { return greater(n, q) })
	}
}

func (t *treapList) FirstSeqAbove(v float64, from int) int {
	return t.first(from, func(n *unit) bool { return n.maxSeq > v }, func(n *unit) bool { return n.seq > v })
}

func (t *treapList) At(i int) *unit {
	n := t.root
	for n != nil {
		l := sizeOf(n.left)
		switch {
		case i < l:
			n = n.left
		case i == l:
			return n
		default:
			i -= l + 1
			n = n.right
		}
	}
	return nil
}

func (t *treapList) Each(f func(*unit) bool) {
	// Iterative in-order walk: the tree can be deep enough that recursion per unit is wasteful.
	stack := make([]*unit, 0, 64)
	n := t.root
	for n != nil || len(stack) > 0 {
		for n != nil {
			stack = append(stack, n)
			n = n.left
		}
		n = stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !f(n) {
			return
		}
		n = n.right
	}
}
