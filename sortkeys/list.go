package sortkeys

import (
	"math"
	"math/bits"
	"unsafe"
)

// unitKind says what a main-list entry stands for (WEBCHAT-ORDERING §4.1 sortedChatHistoryList).
type unitKind uint8

const (
	unitActivity unitKind = iota
	unitSession
	unitGrouping
)

// unit is one entry of the main list: in gen-c a plain activity, a livestream session or a HowTo
// grouping; in gen-a and gen-b always one activity.
type unit struct {
	kind unitKind
	// slot is where u was last seen in its leaf: a hint that shifts inside the leaf leave stale
	// (they do not touch the units they move), checked before the leaf is scanned.
	slot uint8
	// tsDef and ltsDef go with tsV and ltsV (ts and lts): beside kind, they take no room of
	// their own.
	tsDef, ltsDef bool
	// lid is a gen-c plain unit's local id: the order is read without touching its record. In
	// gen-a and gen-b it is the unit's index in its byStream group instead.
	lid int32
	// rec is the activity of a plain unit (gen-c) or of every gen-a/gen-b unit.
	rec *record
	// sess and grp are the session or grouping a gen-c unit stands for: the order is read
	// through them without looking their ids up.
	sess *session
	grp  *grouping
	// ts() is the logical timestamp the entry was inserted with (gen-c).
	tsV float64
	// lts() is +new Date(localTimestamp) of a plain unit's current revision (gen-c).
	ltsV float64
	// seq is (webchat:sequence-id || 0) (gen-a, gen-b).
	seq float64
	// leaf is the B-tree leaf holding the unit (nil while out of the list).
	leaf *bnode
}

func (u *unit) ts() jsNum        { return jsNum{def: u.tsDef, v: u.tsV} }
func (u *unit) lts() jsNum       { return jsNum{def: u.ltsDef, v: u.ltsV} }
func (u *unit) setTS(ts jsNum)   { u.tsDef, u.tsV = ts.def, ts.v }
func (u *unit) setLTS(lts jsNum) { u.ltsDef, u.ltsV = lts.def, lts.v }

// unitList is the ordered main list. btreeList is the production implementation; the tests hold
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
	// where Remove(u) followed by InsertOrdered(u) puts it. changed false says that u's keys are
	// those the list last saw (no Refresh is due). u must not be marked quiet.
	Reposition(u *unit, changed bool)
	// InsertOrdered inserts u before the first unit X with compare(X, u) > 0 (gen-c comparator,
	// WEBCHAT-ORDERING §4.3 step 5), or at the end when there is none.
	InsertOrdered(u *unit)
	// FirstSeqAbove is the index of the first unit at or after from whose seq is > v, or Len().
	FirstSeqAbove(v float64, from int) int
	// At is the unit at index i (0 ≤ i < Len()).
	At(i int) *unit
	// Quiet marks u, if it is in the list, as a unit that shows nothing (quiet) or not; units
	// enter unmarked, and a unit that leaves loses its mark.
	Quiet(u *unit, quiet bool)
	// LoudBefore is the index of the last unmarked unit before index i, or -1.
	LoudBefore(i int) int
	// Each visits the units in order until f returns false.
	Each(f func(*unit) bool)
}

// greater is compare(x, q) > 0 with Web Chat's gen-c comparator: logical timestamps when both are
// defined (NaN never greater), else localTimestamps when both are plain activities carrying one,
// else never.
func greater(x, q *unit) bool {
	if x.tsDef && q.tsDef {
		return x.tsV > q.tsV
	}
	if x.kind == unitActivity && q.kind == unitActivity && x.ltsDef && q.ltsDef {
		return x.ltsV > q.ltsV
	}
	return false
}

// btreeList is a counted B+-tree: leaves hold up to bmax units in list order, inner nodes hold up
// to bmax children with the number of units under each, and every entry carries the maxima of the
// search keys below it (aggs). Insertion at an index, removal by handle, Index and "first unit
// that compares greater" walk one root-to-leaf path of a tree about four levels deep for a
// million units, scanning small arrays at each level instead of chasing a pointer per level as a
// binary tree does: a million-unit list is far larger than the cache, and the arrays keep each
// level's work in a few cache lines. Nodes that removals leave underfull are not merged (a
// replay deletes little); empty ones are dropped. Units marked quiet (Quiet) are counted per
// node, and a bit per entry says which are quiet or hold only quiet units, so that LoudBefore
// skips a run of them a node at a time.
type btreeList struct {
	root *bnode
	size int
}

// bmax is the fan-out: the most entries a node holds.
const bmax = 64

// bnode is a leaf (units) or an inner node (kids, cnt). Entry j's search keys are ts[j],
// ltsUndef[j], ltsAll[j] and seq[j]: a leaf's are its unit's own (unitAggs), an inner node's the
// maxima over kid j's subtree. They never hold NaN, so > and == on them are exact.
type bnode struct {
	// The header first, in the line of the first units.
	parent *bnode
	n      int
	// slot is the entry of parent holding the node: walks up the tree read it instead of
	// scanning the parent's kids.
	slot int
	leaf bool
	// quiet is the number of quiet units under the node. Bit j of mask is set when entry j is a
	// quiet unit (leaf) or its kid holds quiet units only (inner node); bits from n on are clear.
	// A replay rarely has quiet units: while mask is 0 the shifts that keep it skip it.
	quiet int32
	mask  uint64
	// kids and cnt are an inner node's (newBnode), nil in a leaf: nearly every node is a leaf,
	// which is 2.6 KB without them where it took a 4 KB size class with them.
	kids  *[bmax]*bnode
	cnt   *[bmax]int
	units [bmax]*unit
	// The keys last: they hold no pointers, so the garbage collector does not scan them.
	ts, ltsUndef, ltsAll, seq [bmax]float64
}

// newBnode allocates a node, with its kids and counts in one allocation beside it when it is
// an inner node.
func newBnode(leaf bool) *bnode {
	nd := &bnode{leaf: leaf}
	if !leaf {
		in := new(struct {
			kids [bmax]*bnode
			cnt  [bmax]int
		})
		nd.kids, nd.cnt = &in.kids, &in.cnt
	}
	return nd
}

// aggs are one entry's search keys: maxima over units whose ts is a number (ts), over plain units
// without ts whose lts is a number (ltsUndef), over plain units whose lts is a number (ltsAll),
// and of seq.
type aggs struct{ ts, ltsUndef, ltsAll, seq float64 }

var negInf = math.Inf(-1)

// unitAggs are u's own search keys.
func unitAggs(u *unit) aggs {
	a := aggs{negInf, negInf, negInf, u.seq}
	if u.ts().isNumber() {
		a.ts = u.tsV
	}
	if u.kind == unitActivity && u.lts().isNumber() {
		a.ltsAll = u.ltsV
		if !u.tsDef {
			a.ltsUndef = u.ltsV
		}
	}
	return a
}

func (nd *bnode) get(j int) aggs { return aggs{nd.ts[j], nd.ltsUndef[j], nd.ltsAll[j], nd.seq[j]} }

func (nd *bnode) set(j int, a aggs) {
	nd.ts[j], nd.ltsUndef[j], nd.ltsAll[j], nd.seq[j] = a.ts, a.ltsUndef, a.ltsAll, a.seq
}

// keys are the maxima over nd's entries.
func (nd *bnode) keys() aggs {
	a := aggs{negInf, negInf, negInf, negInf}
	for j := 0; j < nd.n; j++ {
		a.ts = max(a.ts, nd.ts[j])
		a.ltsUndef = max(a.ltsUndef, nd.ltsUndef[j])
		a.ltsAll = max(a.ltsAll, nd.ltsAll[j])
		a.seq = max(a.seq, nd.seq[j])
	}
	return a
}

// summary is the maxima over nd's entries and the number of units under nd.
func (nd *bnode) summary() (aggs, int) {
	a := nd.keys()
	if nd.leaf {
		return a, nd.n
	}
	c := 0
	for j := 0; j < nd.n; j++ {
		c += nd.cnt[j]
	}
	return a, c
}

// unitSlot is the entry of u's leaf holding u. The search starts at u's hint and goes down
// first: removals before u, which move it down, are the usual reason for a stale hint.
func unitSlot(u *unit) int {
	nd := u.leaf
	h := min(int(u.slot), nd.n-1)
	for j := h; j >= 0; j-- {
		if nd.units[j] == u {
			u.slot = uint8(j)
			return j
		}
	}
	for j := h + 1; j < nd.n; j++ {
		if nd.units[j] == u {
			u.slot = uint8(j)
			return j
		}
	}
	panic("sortkeys: unit not in its leaf")
}

// prefetchLeaf starts loading the lines of u's leaf that repositioning u reads first (the
// header, u's entry among the units, its search keys), so that a caller who knows u well before
// it repositions it does not wait for them then. u.leaf nil (out of the list, or a list that is
// not a B-tree) asks for nothing.
func prefetchLeaf(u *unit) {
	nd := u.leaf
	if nd == nil {
		return
	}
	j := u.slot % bmax // a hint, always in range
	prefetch(unsafe.Pointer(nd))
	prefetch(unsafe.Pointer(&nd.units[j]))
	prefetch(unsafe.Pointer(&nd.ts[j]))
}

// openAt shifts entries j… of nd one place right.
func (nd *bnode) openAt(j int) {
	if nd.mask != 0 {
		nd.mask = nd.mask&below(j) | nd.mask&^below(j)<<1
	}
	if j == nd.n {
		nd.n++ // an append shifts nothing
		return
	}
	if nd.leaf {
		copy(nd.units[j+1:nd.n+1], nd.units[j:nd.n])
	} else {
		copy(nd.kids[j+1:nd.n+1], nd.kids[j:nd.n])
		copy(nd.cnt[j+1:nd.n+1], nd.cnt[j:nd.n])
		for k := j + 1; k <= nd.n; k++ {
			nd.kids[k].slot = k
		}
	}
	copy(nd.ts[j+1:nd.n+1], nd.ts[j:nd.n])
	copy(nd.ltsUndef[j+1:nd.n+1], nd.ltsUndef[j:nd.n])
	copy(nd.ltsAll[j+1:nd.n+1], nd.ltsAll[j:nd.n])
	copy(nd.seq[j+1:nd.n+1], nd.seq[j:nd.n])
	nd.n++
}

// closeAt removes entry j of nd.
func (nd *bnode) closeAt(j int) {
	if nd.mask != 0 {
		nd.mask = nd.mask&below(j) | nd.mask>>1&^below(j)
	}
	if nd.leaf {
		copy(nd.units[j:], nd.units[j+1:nd.n])
		nd.units[nd.n-1] = nil
	} else {
		copy(nd.kids[j:], nd.kids[j+1:nd.n])
		nd.kids[nd.n-1] = nil
		copy(nd.cnt[j:], nd.cnt[j+1:nd.n])
		for k := j; k < nd.n-1; k++ {
			nd.kids[k].slot = k
		}
	}
	copy(nd.ts[j:], nd.ts[j+1:nd.n])
	copy(nd.ltsUndef[j:], nd.ltsUndef[j+1:nd.n])
	copy(nd.ltsAll[j:], nd.ltsAll[j+1:nd.n])
	copy(nd.seq[j:], nd.seq[j+1:nd.n])
	nd.n--
}

// splitKid moves the entries of p's full kid j from h on into a new node at entry j+1.
func (p *bnode) splitKid(j, h int) {
	c := p.kids[j]
	s := newBnode(c.leaf)
	s.parent, s.n = p, c.n-h
	if c.leaf {
		copy(s.units[:], c.units[h:c.n])
		clear(c.units[h:c.n])
		for x, u := range s.units[:s.n] {
			u.leaf, u.slot = s, uint8(x)
		}
	} else {
		copy(s.kids[:], c.kids[h:c.n])
		clear(c.kids[h:c.n])
		copy(s.cnt[:], c.cnt[h:c.n])
		for x, k := range s.kids[:s.n] {
			k.parent, k.slot = s, x
		}
	}
	copy(s.ts[:], c.ts[h:c.n])
	copy(s.ltsUndef[:], c.ltsUndef[h:c.n])
	copy(s.ltsAll[:], c.ltsAll[h:c.n])
	copy(s.seq[:], c.seq[h:c.n])
	c.n = h
	if c.quiet != 0 {
		s.mask, c.mask = c.mask>>h, c.mask&below(h)
		s.quiet = s.quietUnder()
		c.quiet -= s.quiet
	}
	p.openAt(j + 1)
	p.kids[j+1] = s
	s.slot = j + 1
	a, n := c.summary()
	p.set(j, a)
	p.cnt[j] = n
	a, n = s.summary()
	p.set(j+1, a)
	p.cnt[j+1] = n
	p.markKid(j)
	p.markKid(j + 1)
}

// below is the mask of entries 0 to j-1.
func below(j int) uint64 { return 1<<j - 1 }

// quietUnder counts the quiet units under nd from its entries.
func (nd *bnode) quietUnder() int32 {
	if nd.leaf {
		return int32(bits.OnesCount64(nd.mask))
	}
	var q int32
	for _, k := range nd.kids[:nd.n] {
		q += k.quiet
	}
	return q
}

// markKid sets bit j of the inner node nd's mask when kid j holds quiet units only.
func (nd *bnode) markKid(j int) {
	if int(nd.kids[j].quiet) == nd.cnt[j] {
		nd.mask |= 1 << j
	} else {
		nd.mask &^= 1 << j
	}
}

func newBtreeList() *btreeList { return &btreeList{} }

func (t *btreeList) Len() int { return t.size }

// splitPoint is where a full node is split for an insertion at index i of the n units under it:
// in half, except for an insertion at its end, the common case of a replay whose timestamps
// grow, where the node stays full and the new one takes only what comes next; nodes filled by
// appends then stay full instead of half empty.
func splitPoint(i, n int) int {
	if i >= n {
		return bmax - 1
	}
	return bmax / 2
}

// Insert descends to the leaf position i, splitting full nodes on the way down so that the leaf
// has room and a split never climbs back up; the counts and maxima of the path grow on the way.
// An insertion at the end, the common case, follows the last entry of each node without
// counting.
func (t *btreeList) Insert(u *unit, i int) {
	if i == t.size {
		t.insert(u, nil)
		return
	}
	t.growRoot(false)
	a := unitAggs(u)
	nd := t.root
	for !nd.leaf {
		j := 0
		for j < nd.n-1 && i > nd.cnt[j] {
			i -= nd.cnt[j]
			j++
		}
		if nd.kids[j].n == bmax {
			nd.splitKid(j, splitPoint(i, nd.cnt[j]))
			if i > nd.cnt[j] {
				i -= nd.cnt[j]
				j++
			}
		}
		nd.grow(j, a)
		nd = nd.kids[j]
	}
	nd.put(i, u, a)
	t.size++
}

// InsertOrdered finds the place and inserts in one descent: at each level the entry whose subtree
// holds the first unit that compares greater than u (its maxima pass the search), or the last
// entry when none does, for an insertion at the end.
func (t *btreeList) InsertOrdered(u *unit) {
	s, any := greaterSearch(u)
	if !any {
		t.insert(u, nil)
		return
	}
	t.insert(u, &s)
}

// insert puts u before the first unit that passes s, or at the end when s is nil or no unit
// passes it.
func (t *btreeList) insert(u *unit, s *search) {
	if s != nil && t.root != nil && s.next(t.root, 0, t.root.n) == t.root.n {
		s = nil
	}
	t.growRoot(s == nil)
	a := unitAggs(u)
	nd := t.root
	for !nd.leaf {
		j := nd.n - 1
		if s != nil {
			j = s.next(nd, 0, nd.n)
		}
		if nd.kids[j].n == bmax {
			if s == nil {
				nd.splitKid(j, bmax-1)
				j++
			} else {
				nd.splitKid(j, bmax/2)
				// The first unit that passes is in one of the halves.
				if s.next(nd, j, j+1) != j {
					j++
				}
			}
		}
		nd.grow(j, a)
		nd = nd.kids[j]
	}
	i := nd.n
	if s != nil {
		i = s.next(nd, 0, nd.n)
	}
	nd.put(i, u, a)
	t.size++
}

// growRoot adds a level above a full root, so that a descent never splits the root itself; atEnd
// splits it as for an insertion at its end (splitPoint).
func (t *btreeList) growRoot(atEnd bool) {
	if t.root == nil {
		t.root = newBnode(true)
	}
	if t.root.n < bmax {
		return
	}
	r := newBnode(false)
	r.n, r.quiet = 1, t.root.quiet
	r.kids[0] = t.root
	a, n := t.root.summary()
	r.set(0, a)
	r.cnt[0] = n
	r.markKid(0)
	t.root.parent, t.root.slot = r, 0
	t.root = r
	h := bmax / 2
	if atEnd {
		h = bmax - 1
	}
	r.splitKid(0, h)
}

// grow counts a unit with keys a into entry j of the inner node nd.
func (nd *bnode) grow(j int, a aggs) {
	nd.cnt[j]++
	nd.mask &^= 1 << j // units enter unmarked
	nd.ts[j] = max(nd.ts[j], a.ts)
	nd.ltsUndef[j] = max(nd.ltsUndef[j], a.ltsUndef)
	nd.ltsAll[j] = max(nd.ltsAll[j], a.ltsAll)
	nd.seq[j] = max(nd.seq[j], a.seq)
}

// put places u, with keys a, at entry i of the leaf nd.
func (nd *bnode) put(i int, u *unit, a aggs) {
	nd.openAt(i)
	nd.units[i] = u
	nd.set(i, a)
	u.leaf, u.slot = nd, uint8(i)
}

// Remove takes u out of its leaf and fixes the counts up to the root, and the maxima as far as
// they change: a node is rescanned only when the entry that left it held one of its maxima.
func (t *btreeList) Remove(u *unit) {
	nd := u.leaf
	i := unitSlot(u)
	// gone is the entry that left nd: nd's maxima can only drop where gone held one.
	gone := nd.get(i)
	var q int32 // 1: u was quiet
	if nd.mask>>i&1 != 0 {
		q = 1
	}
	nd.closeAt(i)
	nd.quiet -= q
	u.leaf = nil
	t.size--
	keys := true
	for nd.parent != nil {
		p := nd.parent
		j := nd.slot
		p.cnt[j]--
		p.quiet -= q
		if nd.quiet != 0 { // else the bit is clear and stays so
			p.markKid(j)
		}
		switch {
		case nd.n == 0:
			gone = p.get(j)
			p.closeAt(j)
			nd.parent = nil
		case keys:
			m := p.get(j)
			if !mayDrop(gone, m) {
				keys = false
				break
			}
			a := nd.keys()
			keys = a != m
			p.set(j, a)
			gone = m
		}
		nd = p
	}
	if t.root.n == 0 {
		t.root = nil
		return
	}
	for !t.root.leaf && t.root.n == 1 {
		t.root = t.root.kids[0]
		t.root.parent, t.root.slot = nil, 0
	}
}

func (t *btreeList) Index(u *unit) int { return indexOf(u.leaf, unitSlot(u)) }

// indexOf is the index of entry i of the leaf nd.
func indexOf(nd *bnode, i int) int {
	for ; nd.parent != nil; nd = nd.parent {
		p := nd.parent
		for j := 0; j < nd.slot; j++ {
			i += p.cnt[j]
		}
	}
	return i
}

// Quiet sets u's bit in its leaf and counts the change into the nodes above, whose bits for the
// path are then rechecked: O(height).
func (t *btreeList) Quiet(u *unit, quiet bool) {
	nd := u.leaf
	if nd == nil {
		return
	}
	i := unitSlot(u)
	if (nd.mask>>i&1 != 0) == quiet {
		return
	}
	nd.mask ^= 1 << i
	d := int32(-1)
	if quiet {
		d = 1
	}
	nd.quiet += d
	for ; nd.parent != nil; nd = nd.parent {
		nd.parent.quiet += d
		nd.parent.markKid(nd.slot)
	}
}

// LoudBefore climbs from the leaf entry of index i-1 to the first node with an unmarked entry
// before the path (a loud unit, or a kid not all quiet), then descends through the last such
// entries: two walks over the height, each a bit search in one word per node.
func (t *btreeList) LoudBefore(i int) int {
	if i <= 0 {
		return -1
	}
	nd, j := t.leafAt(i - 1)
	j++ // entries before j are candidates
	for {
		if m := ^nd.mask & below(j); m != 0 {
			j = bits.Len64(m) - 1
			break
		}
		if nd.parent == nil {
			return -1
		}
		j, nd = nd.slot, nd.parent
	}
	for !nd.leaf {
		nd = nd.kids[j]
		j = bits.Len64(^nd.mask&below(nd.n)) - 1
	}
	return indexOf(nd, j)
}

// Refresh rewrites u's keys in its leaf and the maxima above it, stopping at the first level where
// they come out unchanged: the levels above depend on u only through them. A revision that keeps
// its unit's keys, the common case, touches nothing, and a node is rescanned only when one of its
// maxima may have dropped.
func (t *btreeList) Refresh(u *unit) {
	nd := u.leaf
	if nd == nil {
		return
	}
	i := unitSlot(u)
	was, now := nd.get(i), unitAggs(u)
	if was == now {
		return
	}
	nd.set(i, now)
	for nd.parent != nil {
		p := nd.parent
		j := nd.slot
		m := p.get(j)
		next, ok := lift(m, was, now)
		if !ok {
			next = nd.keys()
		}
		if next == m {
			return
		}
		p.set(j, next)
		was, now, nd = m, next, p
	}
}

// mayDrop reports whether a set whose maxima are m may have lower maxima once a member with keys
// gone has left: only where gone held a maximum (an -Inf maximum cannot drop).
func mayDrop(gone, m aggs) bool {
	return (gone.ts == m.ts && m.ts != negInf) || (gone.ltsUndef == m.ltsUndef && m.ltsUndef != negInf) ||
		(gone.ltsAll == m.ltsAll && m.ltsAll != negInf) || (gone.seq == m.seq && m.seq != negInf)
}

// lift is the new maximum of a set whose maximum was m, after one member changed from was to
// now; ok is false when a maximum may have dropped, which only a scan can tell.
func lift(m, was, now aggs) (aggs, bool) {
	ok := true
	f := func(m, was, now float64) float64 {
		switch {
		case now >= m:
			return now
		case was < m:
			return m
		}
		ok = false
		return m
	}
	out := aggs{f(m.ts, was.ts, now.ts), f(m.ltsUndef, was.ltsUndef, now.ltsUndef),
		f(m.ltsAll, was.ltsAll, now.ltsAll), f(m.seq, was.seq, now.seq)}
	return out, ok
}

// Reposition leaves u where it is when it would be reinserted at the same index, which is the
// common case for a revised session or activity: no unit before u compares greater than u and
// the unit after it does (compare(u, u) is never > 0). staysPut reads neither u's entry nor the
// maxima above it, so it runs before they are refreshed; a unit that moves is removed with the
// keys the tree holds for it, which spares rescanning the nodes it leaves when it held none of
// their maxima, and inserted where InsertOrdered puts it among the others.
func (t *btreeList) Reposition(u *unit, changed bool) {
	if t.staysPut(u) {
		if changed {
			t.Refresh(u)
		}
		return
	}
	t.Remove(u)
	t.InsertOrdered(u)
}

// staysPut reports, from u's own root-to-leaf path, that InsertOrdered(u) after Remove(u) would
// put u back at its index: no unit before u compares greater than u (the entries before u's slot
// at every level, through their maxima) and the unit after u does, or u is the last. It reads u's current keys from u
// itself, never from the tree. false means only that the path cannot tell (u is last in its
// leaf but not in the list) or that u moves.
func (t *btreeList) staysPut(u *unit) bool {
	nd := u.leaf
	i := unitSlot(u)
	lastInLeaf := i == nd.n-1
	s, any := greaterSearch(u)
	// The next unit's keys are in the leaf: it compares greater exactly when it passes the search.
	if !lastInLeaf && (!any || s.next(nd, i+1, i+2) != i+1) {
		return false
	}
	if any && s.next(nd, 0, i) < i {
		return false
	}
	atEnd := lastInLeaf
	for nd.parent != nil {
		p := nd.parent
		j := nd.slot
		if any && s.next(p, 0, j) < j {
			return false
		}
		atEnd = atEnd && j == p.n-1
		nd = p
	}
	return !lastInLeaf || atEnd
}

// A search asks for the first entry whose keys pass one test; the tests are exact for a subtree
// (its maxima pass if and only if one of its units does), so a search from index 0 never
// backtracks.
type search struct {
	mode     uint8
	v, lts   float64
	plainLts bool
}

const (
	searchTs       = iota // q's ts is a number: ts above it, or the localTimestamp fallback
	searchLtsUndef        // q's ts is NaN: the localTimestamp fallback against units without ts
	searchLtsAll          // q's ts is undefined: the localTimestamp fallback against all
	searchSeq             // seq above v
)

// next is the first entry of nd in [j, end) that passes s, or end. One tight loop per mode:
// a search scans up to bmax entries per level.
func (s *search) next(nd *bnode, j, end int) int {
	v, lts := s.v, s.lts
	switch s.mode {
	case searchTs:
		ts := nd.ts[:end]
		if s.plainLts {
			lu := nd.ltsUndef[:end]
			for ; j < len(ts); j++ {
				if ts[j] > v || lu[j] > lts {
					return j
				}
			}
			return end
		}
		for ; j < len(ts); j++ {
			if ts[j] > v {
				return j
			}
		}
	case searchLtsUndef:
		lu := nd.ltsUndef[:end]
		for ; j < len(lu); j++ {
			if lu[j] > lts {
				return j
			}
		}
	case searchLtsAll:
		la := nd.ltsAll[:end]
		for ; j < len(la); j++ {
			if la[j] > lts {
				return j
			}
		}
	default:
		sq := nd.seq[:end]
		for ; j < len(sq); j++ {
			if sq[j] > v {
				return j
			}
		}
	}
	return end
}

// first is the index of the first unit at or after from that passes s, or Len().
func (t *btreeList) first(s *search, from int) int {
	if t.root == nil {
		return 0
	}
	if r := firstIn(t.root, 0, s, from); r >= 0 {
		return r
	}
	return t.size
}

// firstIn searches the subtree nd, whose first unit has index base.
func firstIn(nd *bnode, base int, s *search, from int) int {
	j := 0
	if nd.leaf {
		if from > base {
			j = from - base
		}
		if j = s.next(nd, j, nd.n); j < nd.n {
			return base + j
		}
		return -1
	}
	for j < nd.n && base+nd.cnt[j] <= from {
		base += nd.cnt[j]
		j++
	}
	for {
		k := s.next(nd, j, nd.n)
		for ; j < k; j++ {
			base += nd.cnt[j]
		}
		if j == nd.n {
			return -1
		}
		if r := firstIn(nd.kids[j], base, s, from); r >= 0 {
			return r
		}
		base += nd.cnt[j]
		j++
	}
}

// greaterSearch is the search for units X with greater(X, q); any is false when no unit can
// compare greater than q.
func greaterSearch(q *unit) (s search, any bool) {
	qPlainLts := q.kind == unitActivity && q.lts().isNumber()
	s = search{v: q.tsV, lts: q.ltsV, plainLts: qPlainLts}
	switch {
	case q.ts().isNumber():
		s.mode = searchTs
	case !qPlainLts:
		return s, false
	case q.tsDef: // NaN: only the localTimestamp fallback against units without ts can win
		s.mode = searchLtsUndef
	default:
		s.mode = searchLtsAll
	}
	return s, true
}

func (t *btreeList) FirstSeqAbove(v float64, from int) int {
	return t.first(&search{mode: searchSeq, v: v}, from)
}

func (t *btreeList) At(i int) *unit {
	nd, j := t.leafAt(i)
	return nd.units[j]
}

// leafAt is the leaf holding index i (0 ≤ i < Len()) and the entry of i in it.
func (t *btreeList) leafAt(i int) (*bnode, int) {
	nd := t.root
	for !nd.leaf {
		j := 0
		for i >= nd.cnt[j] {
			i -= nd.cnt[j]
			j++
		}
		nd = nd.kids[j]
	}
	return nd, i
}

func (t *btreeList) Each(f func(*unit) bool) {
	if t.root != nil {
		eachIn(t.root, f)
	}
}

func eachIn(nd *bnode, f func(*unit) bool) bool {
	for j := 0; j < nd.n; j++ {
		if nd.leaf {
			if !f(nd.units[j]) {
				return false
			}
		} else if !eachIn(nd.kids[j], f) {
			return false
		}
	}
	return true
}
