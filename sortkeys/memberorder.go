package sortkeys

// A memberOrder is a gen-a or gen-b byStream group's members in list order: a treap whose
// comparisons read the members' list indexes, which keep their order since the list never
// reorders the units it holds. Every member is in the list whenever the order is read or
// changed: a unit leaves its group before it leaves the list.
type memberOrder struct {
	root *memberNode
	n    uint64
}

type memberNode struct {
	u           *unit
	left, right *memberNode
	prio        uint64
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

// splitMembers splits t into the members at list indexes below i and the others.
func splitMembers(list unitList, t *memberNode, i int) (*memberNode, *memberNode) {
	if t == nil {
		return nil, nil
	}
	if list.Index(t.u) < i {
		l, r := splitMembers(list, t.right, i)
		t.right = l
		return t, r
	}
	l, r := splitMembers(list, t.left, i)
	t.left = r
	return l, t
}

// find is the link to the node of u or, when u is not there, to where priority prio puts it:
// down from the root while the nodes' priorities are not below prio (0: all the way to u).
func (o *memberOrder) find(list unitList, u *unit, prio uint64) **memberNode {
	i := list.Index(u)
	link := &o.root
	for t := *link; t != nil && t.u != u && t.prio >= prio; t = *link {
		if list.Index(t.u) < i {
			link = &t.right
		} else {
			link = &t.left
		}
	}
	return link
}

// insert adds u, a unit of list.
func (o *memberOrder) insert(list unitList, u *unit) {
	n := &memberNode{u: u, prio: treapPrio(&o.n)}
	link := o.find(list, u, n.prio)
	n.left, n.right = splitMembers(list, *link, list.Index(u))
	*link = n
}

// remove takes out u, a member still in list: its node is rotated down, past the child of
// higher priority each time, until it has at most one child to leave in its place.
func (o *memberOrder) remove(list unitList, u *unit) {
	link := o.find(list, u, 0)
	for t := *link; ; {
		switch {
		case t.left == nil:
			*link = t.right
			return
		case t.right == nil:
			*link = t.left
			return
		case t.left.prio > t.right.prio:
			l := t.left
			t.left, l.right, *link = l.right, t, l
			link = &l.right
		default:
			r := t.right
			t.right, r.left, *link = r.left, t, r
			link = &r.left
		}
	}
}

// first is the member first in list order (the order is not empty).
func (o *memberOrder) first() *unit {
	t := o.root
	for t.left != nil {
		t = t.left
	}
	return t.u
}
