package sortkeys

import "math"

// partList is a HowTo grouping's parts in order: a treap by index whose nodes keep their
// subtree's size, highest position and timestamp, so that finding, placing, removing or
// changing a part costs O(log n) in a grouping of n parts, where a slice moved and rescanned
// them all (one big grouping whose parts are updated).
type partList struct {
	root *partNode
	// keys finds a part by its local id or session in a list of more than partScan parts, from
	// the first time one is looked for there; a shorter list is scanned. Most groupings never
	// look a part up (no part of theirs is revised) and never build it.
	keys map[partKey]*partNode
}

type partNode struct {
	p                   part
	left, right, parent *partNode
	prio                uint64
	size                int
	// maxPos is the highest position in the subtree, NaN ones aside (-Inf: none); ts is its
	// parts' timestamps folded (foldTimestamp).
	maxPos float64
	ts     jsNum
}

// partKey is what tells a grouping's parts apart: a session part's session, another part's
// local id. A grouping holds one part per key (upsert replaces a linked one).
type partKey struct {
	kind unitKind
	lid  int
	sid  string
}

func (p *part) key() partKey {
	if p.kind == unitSession {
		return partKey{kind: unitSession, sid: p.sid}
	}
	return partKey{kind: p.kind, lid: p.lid}
}

const partScan = 8

// partNodes allocates part nodes, with priorities from treapPrio.
type partNodes struct {
	arena arena[partNode]
	n     uint64
}

func (a *partNodes) alloc(p part) *partNode {
	t := a.arena.alloc()
	t.p, t.prio = p, treapPrio(&a.n)
	t.pull()
	return t
}

func sizeOf(t *partNode) int {
	if t == nil {
		return 0
	}
	return t.size
}

// pull recomputes t's subtree fields from its children, which it adopts.
func (t *partNode) pull() {
	t.size, t.maxPos, t.ts = 1, math.Inf(-1), undef
	if l := t.left; l != nil {
		l.parent = t
		t.size += l.size
		t.maxPos, t.ts = l.maxPos, l.ts
	}
	if t.p.hasPos && !math.IsNaN(t.p.pos) {
		t.maxPos = max(t.maxPos, t.p.pos)
	}
	t.ts = foldTimestamp(t.ts, t.p.ts)
	if r := t.right; r != nil {
		r.parent = t
		t.size += r.size
		t.maxPos = max(t.maxPos, r.maxPos)
		t.ts = foldTimestamp(t.ts, r.ts)
	}
}

func mergeParts(a, b *partNode) *partNode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = mergeParts(a.right, b)
		a.pull()
		return a
	}
	b.left = mergeParts(a, b.left)
	b.pull()
	return b
}

// splitParts splits t into its first k parts and the rest.
func splitParts(t *partNode, k int) (*partNode, *partNode) {
	if t == nil {
		return nil, nil
	}
	if sizeOf(t.left) >= k {
		l, r := splitParts(t.left, k)
		t.left = r
		t.pull()
		return l, t
	}
	l, r := splitParts(t.right, k-sizeOf(t.left)-1)
	t.right = l
	t.pull()
	return t, r
}

func (pl *partList) setRoot(t *partNode) {
	pl.root = t
	if t != nil {
		t.parent = nil
	}
}

func (pl *partList) len() int { return sizeOf(pl.root) }

// ts is the grouping's logical timestamp: its parts' timestamps folded (undefined: no part).
func (pl *partList) ts() jsNum {
	if pl.root == nil {
		return undef
	}
	return pl.root.ts
}

// insert puts t, a node on its own, at index i.
func (pl *partList) insert(i int, t *partNode) {
	if i == pl.len() {
		pl.insertLast(t)
	} else {
		l, r := splitParts(pl.root, i)
		pl.setRoot(mergeParts(mergeParts(l, t), r))
	}
	if pl.keys != nil {
		pl.keys[t.p.key()] = t
	}
}

// insertLast puts t after every part, the common case (parts without positions or in
// position order), without splitting: down the right spine to where t's priority belongs,
// with the rest of the spine as its left subtree.
func (pl *partList) insertLast(t *partNode) {
	var parent *partNode
	cur := pl.root
	for cur != nil && cur.prio > t.prio {
		parent, cur = cur, cur.right
	}
	t.left = cur
	t.pull()
	if parent == nil {
		pl.setRoot(t)
		return
	}
	parent.right = t
	pl.changed(parent)
}

// remove takes t out.
func (pl *partList) remove(t *partNode) {
	l, r := splitParts(pl.root, pl.index(t))
	_, r = splitParts(r, 1)
	pl.setRoot(mergeParts(l, r))
	if pl.keys != nil {
		delete(pl.keys, t.p.key())
	}
}

// changed updates the subtree fields above t, whose part's timestamp or position changed (not
// its key).
func (pl *partList) changed(t *partNode) {
	for ; t != nil; t = t.parent {
		t.pull()
	}
}

// find is the part of key k, or nil.
func (pl *partList) find(k partKey) *partNode {
	if pl.keys == nil && pl.len() > partScan {
		pl.keys = make(map[partKey]*partNode, pl.len())
		for n := pl.first(); n != nil; n = n.next() {
			pl.keys[n.p.key()] = n
		}
	}
	if pl.keys != nil {
		return pl.keys[k]
	}
	for n := pl.first(); n != nil; n = n.next() {
		if n.p.key() == k {
			return n
		}
	}
	return nil
}

// index is t's index.
func (pl *partList) index(t *partNode) int {
	i := sizeOf(t.left)
	for ; t.parent != nil; t = t.parent {
		if t == t.parent.right {
			i += sizeOf(t.parent.left) + 1
		}
	}
	return i
}

// at is the part of index i (0 <= i < len).
func (pl *partList) at(i int) *partNode {
	t := pl.root
	for {
		switch l := sizeOf(t.left); {
		case i < l:
			t = t.left
		case i == l:
			return t
		default:
			i -= l + 1
			t = t.right
		}
	}
}

// firstPosAbove is the index of the first part with a position above pos, as the reducer's
// findIndex tests it (p.position - position > 0), or len when there is none. A NaN position
// is above none and has none above it, so the subtrees' highest positions leave NaN out.
func (pl *partList) firstPosAbove(pos float64) int {
	t := pl.root
	if t == nil || !(t.maxPos > pos) {
		return pl.len()
	}
	i := 0
	for {
		if l := t.left; l != nil && l.maxPos > pos {
			t = l
			continue
		}
		if t.p.hasPos && t.p.pos-pos > 0 {
			return i + sizeOf(t.left)
		}
		i += sizeOf(t.left) + 1
		t = t.right
	}
}

func (pl *partList) first() *partNode {
	t := pl.root
	for t != nil && t.left != nil {
		t = t.left
	}
	return t
}

// next and prev are the parts after and before t (nil: none).
func (t *partNode) next() *partNode {
	if t.right != nil {
		t = t.right
		for t.left != nil {
			t = t.left
		}
		return t
	}
	for t.parent != nil && t == t.parent.right {
		t = t.parent
	}
	return t.parent
}

func (t *partNode) prev() *partNode {
	if t.left != nil {
		t = t.left
		for t.right != nil {
			t = t.right
		}
		return t
	}
	for t.parent != nil && t == t.parent.left {
		t = t.parent
	}
	return t.parent
}
