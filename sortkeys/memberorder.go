package sortkeys

import "math"

// A memberOrder is a set of gen-a or gen-b units in list order: the members of a byStream group
// (findBeforeAfter reads its first) or the parts of a gen-b part grouping (insertionIndex reads
// the first with a higher position and the stretches of consecutive parts). It is a treap whose
// comparisons read the units' list indexes, which keep their order since the list never
// reorders the units it holds; each node keeps its subtree's size and highest position, so that
// a unit's rank and those reads cost O(log n) index reads in a set of n units. Every unit is in
// the list whenever the order is read or changed: a unit leaves its set before it leaves the
// list.
type memberOrder struct {
	root *memberNode
	n    uint64
}

type memberNode struct {
	u           *unit
	left, right *memberNode
	prio        uint64
	size        int
	// maxPos is the highest webchat:entity-position among the subtree's units (-Inf: none). NaN
	// ones are left out: the reducer's p.position - position > 0 never holds for them.
	maxPos float64
}

// treapPrio steps a treap's priority counter n and returns it mixed as splitmix64 does: the
// treap's shape depends on nothing in the log.
func treapPrio(n *uint64) uint64 {
	*n += 0x9E3779B97F4A7C15
	z := *n
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

func memberSize(t *memberNode) int {
	if t == nil {
		return 0
	}
	return t.size
}

// pull recomputes t's size and highest position from its unit and children.
func (t *memberNode) pull() {
	t.size, t.maxPos = 1, math.Inf(-1)
	if ab := t.u.rec.ab; ab.hasPos && ab.pos > t.maxPos {
		t.maxPos = ab.pos
	}
	if l := t.left; l != nil {
		t.size += l.size
		t.maxPos = max(t.maxPos, l.maxPos)
	}
	if r := t.right; r != nil {
		t.size += r.size
		t.maxPos = max(t.maxPos, r.maxPos)
	}
}

// splitMembers splits t into the members at list indexes below i and the others.
func splitMembers(list unitList, t *memberNode, i int) (*memberNode, *memberNode) {
	if t == nil {
		return nil, nil
	}
	if list.Index(t.u) < i {
		l, r := splitMembers(list, t.right, i)
		t.right = l
		t.pull()
		return t, r
	}
	l, r := splitMembers(list, t.left, i)
	t.left = r
	t.pull()
	return l, t
}

// mergeMembers joins a and b, every member of a before every member of b.
func mergeMembers(a, b *memberNode) *memberNode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = mergeMembers(a.right, b)
		a.pull()
		return a
	}
	b.left = mergeMembers(a, b.left)
	b.pull()
	return b
}

func (o *memberOrder) len() int { return memberSize(o.root) }

// insert adds u, a unit of list. Units mostly join after all the others (a livestream's
// revisions, a grouping's parts in position order): those go down the right spine, reading no
// other index.
func (o *memberOrder) insert(list unitList, u *unit) {
	n := &memberNode{u: u, prio: treapPrio(&o.n)}
	n.pull()
	i := list.Index(u)
	if last := o.last(); last == nil || list.Index(last) < i {
		o.root = appendMember(o.root, n)
	} else {
		o.root = insertMember(list, o.root, n, i)
	}
}

// appendMember adds n, on its own, after every member of t.
func appendMember(t, n *memberNode) *memberNode {
	if t == nil || n.prio > t.prio {
		n.left = t
		n.pull()
		return n
	}
	t.right = appendMember(t.right, n)
	t.pull()
	return t
}

// insertMember adds n, on its own, whose unit is at list index i, to t.
func insertMember(list unitList, t, n *memberNode, i int) *memberNode {
	if t == nil {
		return n
	}
	if n.prio > t.prio {
		n.left, n.right = splitMembers(list, t, i)
		n.pull()
		return n
	}
	if list.Index(t.u) < i {
		t.right = insertMember(list, t.right, n, i)
	} else {
		t.left = insertMember(list, t.left, n, i)
	}
	t.pull()
	return t
}

// remove takes out u, a member still in list. The last member, which leaves most often (a
// revision or part replaced right after it came), is found without reading an index.
func (o *memberOrder) remove(list unitList, u *unit) {
	if o.last() == u {
		o.root = removeLastMember(o.root)
		return
	}
	o.root = removeMember(list, o.root, u, list.Index(u))
}

func removeLastMember(t *memberNode) *memberNode {
	if t.right == nil {
		return t.left
	}
	t.right = removeLastMember(t.right)
	t.pull()
	return t
}

// removeMember takes u, at list index i, out of t.
func removeMember(list unitList, t *memberNode, u *unit, i int) *memberNode {
	if t.u == u {
		return mergeMembers(t.left, t.right)
	}
	if list.Index(t.u) < i {
		t.right = removeMember(list, t.right, u, i)
	} else {
		t.left = removeMember(list, t.left, u, i)
	}
	t.pull()
	return t
}

// first is the member first in list order (the order is not empty).
func (o *memberOrder) first() *unit {
	t := o.root
	for t.left != nil {
		t = t.left
	}
	return t.u
}

// last is the member last in list order, nil when there is none.
func (o *memberOrder) last() *unit {
	t := o.root
	if t == nil {
		return nil
	}
	for t.right != nil {
		t = t.right
	}
	return t.u
}

// firstPosAbove is the first member in list order whose position is above pos, nil when there
// is none.
func (o *memberOrder) firstPosAbove(pos float64) *unit {
	t := o.root
	if t == nil || !(t.maxPos > pos) {
		return nil
	}
	for {
		if l := t.left; l != nil && l.maxPos > pos {
			t = l
			continue
		}
		if ab := t.u.rec.ab; ab.hasPos && ab.pos > pos {
			return t.u
		}
		t = t.right
	}
}

// rank is the number of members at list indexes below i.
func (o *memberOrder) rank(list unitList, i int) int {
	r := 0
	for t := o.root; t != nil; {
		if list.Index(t.u) < i {
			r += memberSize(t.left) + 1
			t = t.right
		} else {
			t = t.left
		}
	}
	return r
}

// stretchEnd returns the list index right after the stretch of consecutive members that begins
// with the one at list index i. Since the list never reorders its units, a member's list index
// minus its rank never falls along the order, and it stays level exactly over such a stretch:
// the stretch ends at the first member where it rises.
func (o *memberOrder) stretchEnd(list unitList, i int) int {
	q := o.rank(list, i)
	end, r := o.len(), 0
	for t := o.root; t != nil; {
		k := r + memberSize(t.left)
		if list.Index(t.u)-k > i-q {
			end, t = k, t.left
		} else {
			r, t = k+1, t.right
		}
	}
	return i + end - q
}
