package sortkeys

import (
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"unsafe"

	"github.com/directline-go/directline/activity"
)

// Gen-c: Web Chat main after the November 2025 rewrite (WEBCHAT-ORDERING §1, §4; reducer
// packages/core/src/reducers/activities/sort/upsert.ts and deleteActivityByLocalId.ts).

type sessionEntry struct {
	lid int32
	// n numbers the session's entries in arrival order: see entryKey.
	n   uint32
	ts  jsNum
	seq float64
}

// entryKey is where an entry sits in its session: the reducer's sorted insert puts an entry after
// those whose streamSequence is not above its own, so streamSequence (never NaN) and then arrival
// order the entries as the chunks do, and tell them apart. A key stays when entries around it come
// and go, where an index moves.
type entryKey struct {
	seq float64
	n   uint32
}

// endKey is after every entry.
var endKey = entryKey{math.Inf(1), math.MaxUint32}

func (e *sessionEntry) key() entryKey { return entryKey{e.seq, e.n} }

func (a entryKey) less(b entryKey) bool { return a.seq < b.seq || (a.seq == b.seq && a.n < b.n) }

// lidEntries are the keys of a local id's entries in a session: the first in session order and
// the others.
type lidEntries struct {
	first entryKey
	more  []entryKey
}

// sessionScan is the number of entries up to which a session is scanned for a local id's; a
// longer one keeps byLid from the first time it is searched.
const sessionScan = 32

type session struct {
	// sid is the session's id, the copy sessionIDs keeps (a few bytes, where the activity it came
	// from is a few hundred); idx its index in genC.sessionList.
	sid string
	idx int
	// chunks hold the session's entries of live local ids in streamSequence order (equal ones in
	// arrival order), at most entryChunk to a chunk, none empty unless it is the only one: a
	// revision that does not come last moves the entries after it in its chunk, not in the whole
	// session. dead holds the others (see bury). n counts the entries, dead ones included.
	chunks    [][]sessionEntry
	n         int
	finalized bool
	arrivals  uint32 // in finalized's padding
	ts        jsNum
	// groups are the indices in genC.groupList of the groupings that hold the session as a
	// part, so that a delete finds them without reading every grouping.
	groups []int32
	// u is the session's main-list unit once it has one: own, the unit kept inside the session
	// with its first entries (room, in the first chunk, chunk0), so that a revision finds them in
	// the lines it reads anyway.
	u      *unit
	own    unit
	room   [sessionRoom]sessionEntry
	chunk0 [1][]sessionEntry
	// byLid, once made, holds the keys of every local id's entries: a delete finds the entry it
	// removes, and where a local id first appears, by bisection instead of a scan. It and dead
	// come last, away from the lines a revision reads.
	byLid map[int32]lidEntries
	dead  *graves
}

// part is one entry of a HowTo grouping's part list: a plain activity or a livestream session.
type part struct {
	kind unitKind
	// hasPos says the part has a position, pos: kept in the part rather than behind a pointer,
	// so that placing a new part reads the part list and nothing else.
	hasPos bool
	lid    int
	sid    string
	ts     jsNum
	pos    float64
}

type grouping struct {
	// id is the grouping's id, the copy groupIDs keeps; idx its index in genC.groupList.
	id  string
	idx int32
	// loud counts the parts that show something: plain ones (a deleted activity's part leaves)
	// and sessions with live entries. At 0 the grouping's unit is quiet in the main list. It
	// and idx share eight bytes: a million-event replay makes tens of thousands of groupings.
	loud  int32
	parts partList
	ts    jsNum
	// u is the grouping's main-list unit once it has one: own, kept inside the grouping.
	u   *unit
	own unit
}

type genC struct {
	list unitList
	// stored, when not nil, is told of every activity entering or leaving state.activities.
	stored func(r *record, add bool)
	// locals holds, by local id (dense, from 1; see loc), the activityMap entry and where the
	// local id sits.
	locals numbered[local]
	idMap  idTable // activityIdToLocalIdMap
	cidMap idTable // clientActivityIdToLocalIdMap
	// sessionIDs and groupIDs map the ids of the sessions and groupings to their index in
	// sessionList and groupList (from 1; nil once deleted): id tables like idMap, whose probes
	// read one slot, where a Go map reads a group's control word and then its slot.
	sessionIDs  idTable
	sessionList []*session
	groupIDs    idTable
	groupList   []*grouping
	// gidAt keeps the id of each grouping by index, deleted ones too: what a record's unitIdx
	// names.
	gidAt []string
	// ghosts keeps deleted revisions in the UI list: anchored after the local id that preceded
	// them (anchor -1: the top).
	ghosts map[int][]*record
	// topGhostEnd is local.ghostEnd for the top (anchor -1).
	topGhostEnd int32
	// links holds the links of every local id (index 0 ends a chain).
	links numbered[link]
	// manyLinks holds every link of the local ids linked to more than linkScan sessions and
	// groupings (one id re-delivered into a new grouping each time), so that isLinked does not
	// walk their long chains.
	manyLinks map[linkKey]struct{}
	// manyGroups holds every grouping of the sessions that are parts of more than linkScan
	// groupings (a session re-delivered into a new grouping each time), so that a revision does
	// not scan session.groups.
	manyGroups   map[sessionGrouping]struct{}
	partMemo     map[uint64]partResult
	memoSeed     maphash.Seed
	units        arena[unit]
	sessionArena arena[session]
	partNodes    partNodes
	// loudBefore is the index of the last main-list unit before index i that shows something, or
	// -1: the list's LoudBefore over the units marked quiet (sessionTurned, and a grouping whose
	// loud count falls to 0). The reference replay steps back unit by unit instead. Last: a
	// replay reads it for deletes next to quiet units only.
	loudBefore func(i int) int
}

func newGenC(list unitList) *genC {
	return &genC{list: list, loudBefore: list.LoudBefore,
		locals: newNumbered[local](), idMap: newIDTable(), cidMap: newIDTable(),
		sessionIDs: newIDTable(), sessionList: make([]*session, 1), groupIDs: newIDTable(), groupList: make([]*grouping, 1),
		gidAt:    make([]string, 1),
		ghosts:   map[int][]*record{},
		partMemo: map[uint64]partResult{}, memoSeed: maphash.MakeSeed(), links: newNumbered[link]()}
}

// local is what gen-c keeps per local id.
type local struct {
	// rec is the current revision (activityMap), nil once deleted.
	rec *record
	// plain is the main-list unit of the activity on its own, if it ever was one.
	plain *unit
	// links is the last of the sessions and groupings the local id was upserted into (an index
	// into genC.links; 0: none). Most local ids never join one.
	links int32
	// ghostEnd, while the local id is live, is the ghost uiList emits last in the run of ghosts
	// that follows the local id's first appearance (0: none): the end of the chain of last
	// ghosts that uiBefore would otherwise walk, one step per ghost.
	ghostEnd int32
}

// link is one session or grouping a local id was upserted into, for delete: its index in
// sessionList or groupList. An index is never reused, and a session or grouping is deleted only
// once every local id linked to it is, so the index names what its id would. next chains the
// local id's links from the last made to the first (0: the end), so that a link is added without
// walking the others. The links of every local id share chunks that hold no pointer: no
// allocation per local id, nothing for the garbage collector to scan.
type link struct {
	// ref is the index, shifted left by one, with the low bit set for a grouping.
	ref  uint32
	next int32
}

func newLink(idx int, group bool, next int32) link {
	l := link{ref: uint32(idx) << 1, next: next}
	if group {
		l.ref |= 1
	}
	return l
}

func (l *link) idx() int32  { return int32(l.ref >> 1) }
func (l *link) group() bool { return l.ref&1 != 0 }

// linkAt is the link of index i.
func (g *genC) linkAt(i int32) *link { return g.links.at(i) }

// linkScan is the number of a local id's links that isLinked walks; beyond it, manyLinks holds
// them all.
const linkScan = 8

// linkKey is a link in manyLinks: local id lid joined the session (or grouping) of index idx.
type linkKey struct {
	lid, idx int32
	group    bool
}

// sessionGrouping is an entry of manyGroups: the session of index sess is a part of the
// grouping of index group.
type sessionGrouping struct{ sess, group int32 }

// inGrouping says whether session s is a part of the grouping of index gi.
func (g *genC) inGrouping(s *session, gi int32) bool {
	if len(s.groups) <= linkScan {
		return slices.Contains(s.groups, gi)
	}
	_, ok := g.manyGroups[sessionGrouping{int32(s.idx), gi}]
	return ok
}

// addGrouping notes that session s became a part of the grouping of index gi.
func (g *genC) addGrouping(s *session, gi int32) {
	s.groups = append(s.groups, gi)
	switch n := len(s.groups); {
	case n == linkScan+1: // the slice just outgrew the scan: manyGroups takes all of it
		if g.manyGroups == nil {
			g.manyGroups = map[sessionGrouping]struct{}{}
		}
		for _, x := range s.groups {
			g.manyGroups[sessionGrouping{int32(s.idx), x}] = struct{}{}
		}
	case n > linkScan+1:
		g.manyGroups[sessionGrouping{int32(s.idx), gi}] = struct{}{}
	}
}

// addLink notes that local id lid, whose entry is lc, joined the session (or grouping) of index
// idx, once.
func (g *genC) addLink(lid int32, lc *local, idx int, group bool) {
	if g.isLinked(lid, lc, idx, group) {
		return
	}
	i := g.links.add()
	*g.linkAt(i) = newLink(idx, group, lc.links)
	lc.links = i
	n := 0
	for i := lc.links; i != 0 && n <= linkScan+1; i = g.linkAt(i).next {
		n++
	}
	switch {
	case n == linkScan+1: // the chain just outgrew the walk: manyLinks takes all of it
		if g.manyLinks == nil {
			g.manyLinks = map[linkKey]struct{}{}
		}
		for i := lc.links; i != 0; i = g.linkAt(i).next {
			g.manyLinks[linkKey{lid, g.linkAt(i).idx(), g.linkAt(i).group()}] = struct{}{}
		}
	case n > linkScan+1:
		g.manyLinks[linkKey{lid, int32(idx), group}] = struct{}{}
	}
}

// isLinked says whether local id lid, whose entry is lc, joined the session (or grouping) of
// index idx.
func (g *genC) isLinked(lid int32, lc *local, idx int, group bool) bool {
	n := 0
	for i := lc.links; i != 0; i = g.linkAt(i).next {
		if n == linkScan {
			_, ok := g.manyLinks[linkKey{lid, int32(idx), group}]
			return ok
		}
		if l := g.linkAt(i); l.group() == group && int(l.idx()) == idx {
			return true
		}
		n++
	}
	return false
}

// linked lists the indices of lid's sessions or groupings, in the order they were linked.
func (g *genC) linked(lid int, group bool) []int {
	var out []int
	for i := g.loc(lid).links; i != 0; i = g.linkAt(i).next {
		if l := g.linkAt(i); l.group() == group {
			out = append(out, int(l.idx()))
		}
	}
	slices.Reverse(out)
	return out
}

// unlink forgets lid's links (a delete).
func (g *genC) unlink(lid int) {
	lc := g.loc(lid)
	n := 0
	for i := lc.links; i != 0 && n <= linkScan; i = g.linkAt(i).next {
		n++
	}
	if n > linkScan {
		for i := lc.links; i != 0; i = g.linkAt(i).next {
			delete(g.manyLinks, linkKey{int32(lid), g.linkAt(i).idx(), g.linkAt(i).group()})
		}
	}
	lc.links = 0
}

// loc is the entry of local id lid.
func (g *genC) loc(lid int) *local { return g.locals.at(int32(lid)) }

// newLid returns a new local id for a record: there are at most as many as revisions, which
// Replay.apply keeps within int32.
func (g *genC) newLid() int32 { return g.locals.add() }

// act is activityMap.get(lid).
func (g *genC) act(lid int) *record { return g.loc(lid).rec }

// prefetch starts loading the id-table slots that delivering r will probe for its id and
// clientActivityID, as soon as decoding has read them: in a long replay each is likely a cache
// miss, and started then they arrive while the rest of the activity is read, and together
// instead of one after the other. (The session's slot is started once the livestream reader has
// run, in state.decode.)
func (g *genC) prefetch(r *record) {
	if id := r.id(); id != "" {
		g.idMap.prefetch(id)
	}
	if cid := r.cid(); cid != "" {
		g.cidMap.prefetch(cid)
	}
}

// incoming is DIRECT_LINE/INCOMING_ACTIVITY (createGroupedActivitiesReducer.ts).
func (g *genC) incoming(r *record) {
	if r.role() == activity.RoleUser {
		lid, ok := -1, false
		if r.cid() != "" {
			lid, ok = g.cidMap.get(r.cid())
		} else if r.id() != "" {
			lid, ok = g.idMap.get(r.id())
		}
		if ok {
			if prev := g.act(lid); prev != nil {
				r.lid = int32(lid)
				r.pending = prev.pending
				g.upsert(r)
				return
			}
		}
		r.lid = g.newLid()
		g.upsert(r)
		return
	}
	if lid, ok := g.idMap.get(r.id()); ok && r.id() != "" && g.act(lid) != nil {
		r.lid = int32(lid)
	} else {
		// An id-less activity gets a random id in Web Chat, hence its own unit.
		r.lid = g.newLid()
	}
	g.upsert(r)
}

func (g *genC) post(r *record) {
	r.lid = g.newLid()
	r.pending = true
	g.upsert(r)
}

// fulfilled is POST_ACTIVITY_FULFILLED: the echo takes over the pending activity's local id and is
// re-sorted by its own keys. Without a pending activity Web Chat's reducer throws; nothing changes.
func (g *genC) fulfilled(cid string, echo *record) {
	lid, ok := g.cidMap.get(cid)
	if !ok || g.act(lid) == nil {
		return
	}
	echo.lid = int32(lid)
	echo.pending = false
	g.upsert(echo)
}

func (g *genC) upsert(r *record) {
	// kind and ts are what the revision's main-list unit will be and hold.
	kind, ts := unitActivity, r.ts()
	// key is the session's id for a session entry (a part's sid).
	key := ""
	isLS := r.ls != nil
	var ls streamInfo
	if isLS {
		ls = *r.ls
	}
	var s *session
	if isLS {
		if s = g.session(ls.sessionID); s != nil && s.finalized {
			return // sealed: later activities for a concluded session are dropped
		}
		if s != nil && s.u != nil {
			prefetchLeaf(s.u) // repositioned at the end
		}
	}
	lc := g.loc(int(r.lid))
	if lc.plain != nil {
		prefetchLeaf(lc.plain) // a revision: repositioned or refreshed at the end
	}
	if g.stored != nil {
		if lc.rec != nil {
			g.stored(lc.rec, false)
		}
		g.stored(r, true)
	}
	lc.rec = r
	if r.id() != "" {
		g.idMap.set(r.id(), int(r.lid))
	}
	if r.cid() != "" {
		g.cidMap.set(r.cid(), int(r.lid))
	}
	r.unitPrefix, r.unitIdx = unitNone, 0
	var gr *grouping
	if isLS {
		first := s == nil
		if first {
			s = g.newSession()
			s.idx = len(g.sessionList)
			g.sessionList = append(g.sessionList, s)
			s.sid = g.sessionIDs.set(ls.sessionID, s.idx)
		}
		sid := s.sid
		wasQuiet := !first && !s.live()
		s.insert(sessionEntry{lid: r.lid, ts: r.ts(), seq: ls.seq})
		if wasQuiet {
			g.sessionTurned(s, false)
		}
		s.finalized = ls.final
		if s.finalized || first {
			s.ts = r.ts()
		}
		g.addLink(r.lid, lc, s.idx, false)
		kind, ts, key = unitSession, s.ts, sid
		r.unitPrefix = unitLivestream
	}
	if gid, pos, ok := g.partGrouping(r); ok {
		gr = g.grouping(gid)
		if gr == nil {
			gr = &grouping{idx: int32(len(g.groupList))}
			g.groupList = append(g.groupList, gr)
			gr.id = g.groupIDs.set(gid, int(gr.idx))
			g.gidAt = append(g.gidAt, gr.id)
		} else if gr.u != nil {
			prefetchLeaf(gr.u) // repositioned at the end
		}
		gid = gr.id
		np := part{kind: kind, lid: int(r.lid), sid: key, ts: ts}
		if pos != nil {
			np.hasPos, np.pos = true, *pos
		}
		// Only a session or local id linked to the grouping can be among its parts: a new
		// part needs no lookup.
		var existing *partNode
		if (isLS && g.inGrouping(s, gr.idx)) || (!isLS && g.isLinked(r.lid, lc, int(gr.idx), true)) {
			existing = gr.parts.find(np.key())
		}
		switch {
		case existing == nil:
			at := gr.parts.len()
			if pos != nil {
				at = gr.parts.firstPosAbove(*pos)
			}
			gr.parts.insert(at, g.partNodes.alloc(np))
			gr.ts = foldTimestamp(gr.ts, np.ts) // one more part: the maximum only grows
			// A new part shows its revision; an existing one already counted, a session part
			// when its session turned loud above.
			gr.loud++
			if gr.loud == 1 && gr.u != nil {
				g.list.Quiet(gr.u, false)
			}
		case pos == nil:
			existing.p = np
			gr.parts.changed(existing)
			gr.ts = gr.parts.ts()
		default:
			// Removed and inserted again where its position puts it: the node goes back as np.
			gr.parts.remove(existing)
			existing.p = np
			existing.pull()
			gr.parts.insert(gr.parts.firstPosAbove(*pos), existing)
			gr.ts = gr.parts.ts()
		}
		if !isLS {
			g.addLink(r.lid, lc, int(gr.idx), true)
		} else if existing == nil {
			g.addGrouping(s, gr.idx)
		}
		kind, ts = unitGrouping, gr.ts
		r.unitPrefix, r.unitIdx = unitHowTo, gr.idx
	}

	// An existing unit is in the main list; a new one is not yet.
	var u *unit
	fresh := false
	switch kind {
	case unitActivity:
		u = lc.plain
		if u == nil {
			u, fresh = g.newUnit(), true
			u.kind, u.lid = unitActivity, r.lid
			lc.plain = u
		}
		u.rec = r
	case unitSession:
		u = s.u
		if u == nil {
			u, fresh = &s.own, true
			u.kind, u.sess, u.seq = unitSession, s, negInf
			s.u = u
		}
	default:
		u = gr.u
		if u == nil {
			u, fresh = &gr.own, true
			u.kind, u.grp, u.seq = unitGrouping, gr, negInf
			gr.u = u
		}
	}
	wasTs, wasLts := u.ts(), u.lts()
	u.setTS(ts)
	if kind == unitActivity {
		u.setLTS(r.lts())
	}
	if kind != unitActivity {
		// A plain unit left behind for this local id (an activity that later joined a session or
		// a grouping) compares by the current revision's localTimestamp.
		if pu := lc.plain; pu != nil {
			pu.rec = r
			pu.setLTS(r.lts())
			g.list.Refresh(pu)
		}
	}
	if !fresh {
		g.list.Reposition(u, !sameNum(wasTs, u.ts()) || !sameNum(wasLts, u.lts()))
		return
	}
	g.list.InsertOrdered(u)
}

// session is the session of id sid (nil: none).
func (g *genC) session(sid string) *session {
	if i, ok := g.sessionIDs.get(sid); ok {
		return g.sessionList[i]
	}
	return nil
}

// grouping is the grouping of id gid (nil: none).
func (g *genC) grouping(gid string) *grouping {
	if i, ok := g.groupIDs.get(gid); ok {
		return g.groupList[i]
	}
	return nil
}

// sameNum reports whether a and b are the same value, bit for bit (NaN included).
func sameNum(a, b jsNum) bool {
	return a.def == b.def && math.Float64bits(a.v) == math.Float64bits(b.v)
}

// newSession allocates a session whose entries start in its room, in its one chunk: a session
// gets a few revisions, and growing its entries from nil took three or four allocations.
func (g *genC) newSession() *session {
	s := g.sessionArena.alloc()
	s.chunk0[0] = s.room[:0]
	s.chunks = s.chunk0[:]
	return s
}

const (
	sessionRoom = 4
	// entryChunk bounds a chunk of session entries: a few kilobytes moved per revision out of
	// order, and a chunk split per entryChunk/2 of them.
	entryChunk = 128
)

// insert adds e after the entries whose streamSequence is not above e's (the reducer's sorted
// insert). Sequences are integers or +Inf, never NaN, so the chunks' last entries are in order
// and a search over them finds the chunk the search over all entries would.
func (s *session) insert(e sessionEntry) {
	e.n = s.arrivals
	s.arrivals++
	if s.byLid != nil {
		s.note(e.lid, e.key())
	}
	ci := len(s.chunks) - 1
	c := s.chunks[ci]
	if len(c) > 0 && c[len(c)-1].seq > e.seq {
		ci = sort.Search(ci, func(i int) bool { ch := s.chunks[i]; return ch[len(ch)-1].seq > e.seq })
		c = s.chunks[ci]
	}
	i := sort.Search(len(c), func(i int) bool { return c[i].seq > e.seq })
	s.n++
	if len(c) == entryChunk {
		if i == len(c) { // after every entry: a new last chunk, the others staying full
			s.chunks = append(s.chunks, []sessionEntry{e})
			return
		}
		half := entryChunk / 2
		right := make([]sessionEntry, entryChunk-half, entryChunk)
		copy(right, c[half:])
		s.chunks = slices.Insert(s.chunks, ci+1, right)
		s.chunks[ci] = c[:half]
		if i > half {
			ci, c, i = ci+1, right, i-half
		} else {
			c = c[:half]
		}
	}
	s.chunks[ci] = slices.Insert(c, i, e)
}

// note adds an entry of local id lid and key k to byLid.
func (s *session) note(lid int32, k entryKey) {
	le, ok := s.byLid[lid]
	if !ok {
		s.byLid[lid] = lidEntries{first: k}
		return
	}
	if k.less(le.first) {
		le.first, k = k, le.first
	}
	le.more = append(le.more, k)
	s.byLid[lid] = le
}

// firstKey is the key of the first entry of local id lid (false: there is none).
func (s *session) firstKey(lid int32) (entryKey, bool) {
	if s.byLid == nil && s.n > sessionScan {
		s.byLid = make(map[int32]lidEntries, s.n)
		for _, c := range s.chunks {
			for i := range c {
				s.note(c[i].lid, c[i].key())
			}
		}
	}
	if s.byLid != nil {
		le, ok := s.byLid[lid]
		return le.first, ok
	}
	for _, c := range s.chunks {
		for i := range c {
			if c[i].lid == lid {
				return c[i].key(), true
			}
		}
	}
	return entryKey{}, false
}

// locate is where the first entry whose key is not below k is, or would go: its chunk, and its
// index there.
func (s *session) locate(k entryKey) (ci, i int) {
	last := len(s.chunks) - 1
	ci = sort.Search(last, func(i int) bool { ch := s.chunks[i]; return !ch[len(ch)-1].key().less(k) })
	c := s.chunks[ci]
	return ci, sort.Search(len(c), func(i int) bool { return !c[i].key().less(k) })
}

// graves are the first and the last of the entries that a session keeps of deleted local ids:
// all that the reducer reads of them, besides their number (in session.n).
type graves struct{ first, last sessionEntry }

// bury takes the entries of local id lid, which is being deleted, out of the chunks (false: there
// are none). The first leaves the session, as in the reducer; the others stay there, but only in
// dead: no walk over the chunks then steps over entries with nothing to show (one revision
// delivered many times, then deleted).
func (s *session) bury(lid int32) bool {
	k, ok := s.firstKey(lid)
	if !ok {
		return false
	}
	var more []entryKey
	if s.byLid != nil {
		more = s.byLid[lid].more
		delete(s.byLid, lid)
	} else {
		for _, c := range s.chunks {
			for i := range c {
				if c[i].lid == lid && c[i].key() != k {
					more = append(more, c[i].key())
				}
			}
		}
	}
	s.take(k)
	s.n--
	for _, m := range more {
		e := s.take(m)
		d := s.dead
		if d == nil {
			s.dead = &graves{first: e, last: e}
			continue
		}
		if e.key().less(d.first.key()) {
			d.first = e
		}
		if d.last.key().less(e.key()) {
			d.last = e
		}
	}
	return true
}

// take takes the entry of key k out of the chunks.
func (s *session) take(k entryKey) sessionEntry {
	ci, i := s.locate(k)
	c := s.chunks[ci]
	e := c[i]
	if len(c) == 1 && len(s.chunks) > 1 {
		s.chunks = slices.Delete(s.chunks, ci, ci+1)
	} else {
		s.chunks[ci] = slices.Delete(c, i, i+1)
	}
	return e
}

// first and last are the first and the last entry, dead ones included (the session has one).
func (s *session) first() sessionEntry {
	c := s.chunks[0]
	if d := s.dead; d != nil && (len(c) == 0 || d.first.key().less(c[0].key())) {
		return d.first
	}
	return c[0]
}

func (s *session) last() sessionEntry {
	c := s.chunks[len(s.chunks)-1]
	if d := s.dead; d != nil && (len(c) == 0 || c[len(c)-1].key().less(d.last.key())) {
		return d.last
	}
	return c[len(c)-1]
}

// newUnit allocates a plain main-list unit. Gen-c never orders by seq: -Inf keeps it below every
// maximum, so that a removal from the B-tree rescans a node only for the keys gen-c has.
func (g *genC) newUnit() *unit {
	u := g.units.alloc()
	u.seq = negInf
	return u
}

// partGrouping is the activity's HowTo part grouping (activity.PartGrouping). The reader depends
// on the entities alone, and the revisions of a part usually repeat them byte for byte, so results
// are remembered per entities JSON. The memo is keyed by the JSON's 64-bit hash (a map of such
// keys grows without hashing the JSON again) and an entry keeps the JSON to check a hit against;
// the JSON shares the bytes of an activity, which the replay keeps anyway. A hash that two JSONs
// share keeps the first one's result, and the other is read each time.
func (g *genC) partGrouping(r *record) (string, *float64, bool) {
	if !r.mayPartOf {
		return "", nil, false
	}
	ents := r.rawEntities()
	key := unsafe.String(unsafe.SliceData(ents), len(ents))
	h := maphash.String(g.memoSeed, key)
	p, ok := g.partMemo[h]
	if ok && p.ents == key {
		return p.gid, p.pos, p.ok
	}
	gid, pos, found := r.dec.act.PartGrouping()
	if !ok {
		g.partMemo[h] = partResult{key, gid, pos, found}
	}
	return gid, pos, found
}

type partResult struct {
	ents string
	gid  string
	pos  *float64
	ok   bool
}

// foldTimestamp is the step of a grouping's logical timestamp (partList.ts): Math.max over the
// parts' defined timestamps (NaN wins, as in Math.max), undefined when none is defined. It is
// the maximum out of some parts' timestamps with one more part's, ts, or with another set's
// maximum: the order and the grouping of the steps do not change the result.
func foldTimestamp(out, ts jsNum) jsNum {
	switch {
	case !ts.def:
		return out
	case !out.def:
		return num(jsMax(math.Inf(-1), ts.v))
	}
	return num(jsMax(out.v, ts.v))
}

// jsMax is Math.max for two numbers: NaN if either is NaN (always the one bit pattern
// math.NaN gives, which sameNum compares), and +0 above -0.
func jsMax(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return max(a, b)
}

// delete is DIRECT_LINE/DELETE_ACTIVITY (deleteActivityByLocalId.ts): the activity leaves every
// map; groupings and sessions recompute their timestamps; empty units leave the main list;
// nothing is re-sorted.
func (g *genC) delete(id string) {
	lid, ok := g.idMap.get(id)
	if !ok || g.act(lid) == nil {
		return
	}
	anchor, root := g.uiBefore(lid)
	gone := *g.act(lid)
	gone.ghost = true
	g.ghosts[anchor] = append(g.ghosts[anchor], &gone)
	// The new ghost is now the last at anchor, which ends root's chain or is root: the chain
	// from root goes on through the ghost and the ghosts that followed lid.
	g.setGhostEnd(root, g.ghostEnd(lid))

	// The id tables keep their keys for lid: every lookup checks that its local id is live (a
	// session or grouping index, that its slot is non-nil), so a stale key reads as absent and
	// a later set takes it over, without rebuilding a whole table per delete.
	if g.stored != nil {
		g.stored(g.act(lid), false)
	}
	g.loc(lid).rec = nil
	for _, gi := range g.linked(lid, true) {
		gr := g.groupList[gi]
		if gr == nil {
			continue
		}
		pn := gr.parts.find(partKey{kind: unitActivity, lid: lid})
		if pn == nil {
			continue
		}
		gr.parts.remove(pn)
		gr.loud--
		if gr.parts.len() > 0 {
			gr.ts = gr.parts.ts()
			if u := gr.u; u != nil {
				u.setTS(gr.ts)
				g.list.Refresh(u)
				if gr.loud == 0 {
					g.list.Quiet(u, true)
				}
			}
		} else {
			g.groupList[gr.idx] = nil
			if gr.u != nil {
				g.list.Remove(gr.u)
			}
		}
	}
	for _, si := range g.linked(lid, false) {
		s := g.sessionList[si]
		if s == nil {
			continue
		}
		sid := s.sid
		wasLive := s.live()
		if !s.bury(int32(lid)) {
			continue
		}
		if wasLive && !s.live() {
			g.sessionTurned(s, true)
		}
		if s.n > 0 {
			last := s.last()
			s.finalized = math.IsInf(last.seq, 1)
			if s.finalized {
				s.ts = last.ts
			} else {
				s.ts = s.first().ts
			}
			for _, gr := range g.groupsWithSession(s) {
				pn := gr.parts.find(partKey{kind: unitSession, sid: sid})
				pn.p.ts = s.ts
				gr.parts.changed(pn)
				gr.ts = gr.parts.ts()
			}
		} else {
			g.sessionList[s.idx] = nil
			if s.u != nil {
				g.list.Remove(s.u)
			}
			for _, gr := range g.groupsWithSession(s) {
				gr.parts.remove(gr.parts.find(partKey{kind: unitSession, sid: sid}))
				gr.ts = gr.parts.ts()
			}
			if len(s.groups) > linkScan { // its index is never looked up again
				for _, gi := range s.groups {
					delete(g.manyGroups, sessionGrouping{int32(s.idx), gi})
				}
			}
		}
	}
	g.unlink(lid)
	if u := g.loc(lid).plain; u != nil {
		g.list.Remove(u)
		g.loc(lid).plain = nil
	}
}

// live says whether session s has an entry of a live local id, which each() shows: the chunks
// hold those only, and are never empty unless there is one.
func (s *session) live() bool { return len(s.chunks[0]) > 0 }

// sessionTurned marks, once session s has just turned quiet (its last live entry gone) or loud
// again (a revision after that), its own unit, and the units of the groupings that hold it
// where it was or becomes the only part to show something.
func (g *genC) sessionTurned(s *session, quiet bool) {
	if s.u != nil {
		g.list.Quiet(s.u, quiet)
	}
	d := int32(1)
	if quiet {
		d = -1
	}
	for _, gr := range g.groupsWithSession(s) {
		gr.loud += d
		if gr.u != nil {
			g.list.Quiet(gr.u, gr.loud == 0)
		}
	}
}

// sessionPart is the index of session sid among gr's parts, or -1.
func (gr *grouping) sessionPart(sid string) int {
	if pn := gr.parts.find(partKey{kind: unitSession, sid: sid}); pn != nil {
		return gr.parts.index(pn)
	}
	return -1
}

// groupsWithSession lists the groupings that hold session s as a part (deletes only).
func (g *genC) groupsWithSession(s *session) []*grouping {
	var out []*grouping
	for _, gi := range s.groups {
		if gr := g.groupList[gi]; gr != nil && gr.sessionPart(s.sid) >= 0 {
			out = append(out, gr)
		}
	}
	return out
}

// uiBefore is the local id of the uiList element just before local id lid's first appearance
// there (-1: none), without building the list: the record each() emits before lid, then, if
// that is the record's first appearance (uiList emits a local id's ghosts once, after its first
// appearance), the last ghost anchored at it, the last ghost anchored at that one, and so on.
// A deleted local id never comes back, so a ghost's local id is no record's and appears once.
// root is where that chain starts (the record's local id, or -1), whose ghostEnd a ghost
// anchored there changes.
func (g *genC) uiBefore(lid int) (anchor, root int) {
	at, ok := g.firstAppearance(lid)
	if !ok {
		return -1, -1
	}
	cur := -1
	if r, rat, ok := g.emittedBefore(at); ok {
		cur = int(r.lid)
		if first, _ := g.firstAppearance(cur); first != rat {
			return cur, cur
		}
	}
	return g.ghostEnd(cur), cur
}

// ghostEnd is the end of the chain of last ghosts from root, a live local id or -1 (root itself
// when it has no ghost).
func (g *genC) ghostEnd(root int) int {
	end := g.topGhostEnd
	if root >= 0 {
		end = g.loc(root).ghostEnd
	}
	if end == 0 {
		return root
	}
	return int(end)
}

func (g *genC) setGhostEnd(root, end int) {
	if root < 0 {
		g.topGhostEnd = int32(end)
	} else {
		g.loc(root).ghostEnd = int32(end)
	}
}

// appearance is where each() emits a record: the index of its unit in the main list, the part
// within a grouping and the key of the entry within a session (zero where there is none).
// Appearances compare in each() order field by field.
type appearance struct {
	unit, part int
	entry      entryKey
}

func (a appearance) less(b appearance) bool {
	if a.unit != b.unit {
		return a.unit < b.unit
	}
	if a.part != b.part {
		return a.part < b.part
	}
	return a.entry.less(b.entry)
}

// firstAppearance is where each() first emits live local id lid. A local id can appear more than
// once: a plain unit left behind when it joined a session or grouping, several revisions in one
// session, several sessions or groupings, a session held by several groupings. Each of those is
// reached through lid's plain unit and links, so the cost is that of lid's own units.
func (g *genC) firstAppearance(lid int) (appearance, bool) {
	var best appearance
	found := false
	note := func(a appearance) {
		if !found || a.less(best) {
			best, found = a, true
		}
	}
	lc := g.loc(lid)
	if lc.plain != nil {
		note(appearance{unit: g.list.Index(lc.plain)})
	}
	for i := lc.links; i != 0; i = g.linkAt(i).next {
		l := g.linkAt(i)
		if l.group() {
			gr := g.groupList[l.idx()]
			if gr == nil || gr.u == nil {
				continue
			}
			if pn := gr.parts.find(partKey{kind: unitActivity, lid: lid}); pn != nil {
				note(appearance{unit: g.list.Index(gr.u), part: gr.parts.index(pn)})
			}
			continue
		}
		s := g.sessionList[l.idx()]
		if s == nil {
			continue
		}
		e, ok := s.firstKey(int32(lid))
		if !ok {
			continue
		}
		if s.u != nil {
			note(appearance{unit: g.list.Index(s.u), entry: e})
		}
		for _, gr := range g.groupsWithSession(s) {
			if gr.u != nil {
				note(appearance{unit: g.list.Index(gr.u), part: gr.sessionPart(s.sid), entry: e})
			}
		}
	}
	return best, found
}

// emittedBefore is the record each() emits just before appearance at, and where.
func (g *genC) emittedBefore(at appearance) (*record, appearance, bool) {
	if r, a, ok := g.lastIn(at.unit, at.part, at.entry); ok {
		return r, a, true
	}
	// Units before at that show nothing (sessions whose entries are all of deleted activities,
	// groupings of such sessions) can run long: the list skips them.
	if ui := g.loudBefore(at.unit); ui >= 0 {
		return g.lastIn(ui, math.MaxInt, endKey)
	}
	return nil, appearance{}, false
}

// lastIn is the last record the unit of index ui emits before its part and entry given
// (math.MaxInt and endKey: the whole unit).
func (g *genC) lastIn(ui, part int, entry entryKey) (*record, appearance, bool) {
	u := g.list.At(ui)
	switch u.kind {
	case unitActivity:
		if part == math.MaxInt {
			if r := g.act(int(u.lid)); r != nil {
				return r, appearance{unit: ui}, true
			}
		}
		return nil, appearance{}, false
	case unitSession:
		if r, e, ok := g.lastEntry(u.sess, entry); ok {
			return r, appearance{unit: ui, entry: e}, true
		}
		return nil, appearance{}, false
	}
	parts := &u.grp.parts
	if parts.len() == 0 {
		return nil, appearance{}, false
	}
	pi := min(part, parts.len()-1)
	for pn := parts.at(pi); pn != nil; pn, pi = pn.prev(), pi-1 {
		p := &pn.p
		if p.kind == unitSession {
			bound := endKey
			if pi == part {
				bound = entry
			}
			if s := g.session(p.sid); s != nil {
				if r, e, ok := g.lastEntry(s, bound); ok {
					return r, appearance{unit: ui, part: pi, entry: e}, true
				}
			}
		} else if pi < part {
			if r := g.act(p.lid); r != nil {
				return r, appearance{unit: ui, part: pi}, true
			}
		}
	}
	return nil, appearance{}, false
}

// lastEntry is the last live entry of s before key bound, and its key: the last in the chunks,
// which hold live entries only.
func (g *genC) lastEntry(s *session, bound entryKey) (*record, entryKey, bool) {
	ci, i := s.locate(bound)
	if i == 0 {
		if ci == 0 {
			return nil, entryKey{}, false
		}
		ci--
		i = len(s.chunks[ci])
	}
	e := &s.chunks[ci][i-1]
	return g.act(int(e.lid)), e.key(), true
}

// unitID is the id of a record's session (its livestream metadata's) or of the grouping its
// unitIdx names.
func (g *genC) unitID(r *record) string {
	switch r.unitPrefix {
	case unitLivestream:
		return r.ls.sessionID
	case unitHowTo:
		return g.gidAt[r.unitIdx]
	}
	return ""
}

// each flattens the main list into state.activities (computeSortedActivities.ts).
func (g *genC) each(f func(*record) bool) {
	emitEntries := func(s *session) bool {
		for _, c := range s.chunks {
			for _, e := range c {
				if r := g.act(int(e.lid)); r != nil && !f(r) {
					return false
				}
			}
		}
		return true
	}
	emitSession := func(sid string) bool {
		if s := g.session(sid); s != nil {
			return emitEntries(s)
		}
		return true
	}
	g.list.Each(func(u *unit) bool {
		switch u.kind {
		case unitActivity:
			if r := g.act(int(u.lid)); r != nil {
				return f(r)
			}
			return true
		case unitSession:
			return emitEntries(u.sess)
		}
		for pn := u.grp.parts.first(); pn != nil; pn = pn.next() {
			if p := &pn.p; p.kind == unitSession {
				if !emitSession(p.sid) {
					return false
				}
			} else if r := g.act(p.lid); r != nil && !f(r) {
				return false
			}
		}
		return true
	})
}

// uiList is the list the rendering layer keys: state.activities plus deleted revisions kept in
// place (conformance README "From order to screen" step 1).
func (g *genC) uiList() []*record {
	// Sized for every local id and a ghost per anchor: about the list's length.
	out := make([]*record, 0, int(g.locals.n)+len(g.ghosts))
	var done map[int]bool
	var emitGhosts func(anchor int)
	emitGhosts = func(anchor int) {
		if len(g.ghosts) == 0 || done[anchor] {
			return
		}
		if done == nil {
			done = map[int]bool{}
		}
		done[anchor] = true
		for _, gr := range g.ghosts[anchor] {
			out = append(out, gr)
			emitGhosts(int(gr.lid))
		}
	}
	emitGhosts(-1)
	g.each(func(r *record) bool {
		out = append(out, r)
		emitGhosts(int(r.lid))
		return true
	})
	return out
}
