package sortkeys

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
)

// Gen-a and gen-b: the single-list algorithm of createActivitiesReducer.ts, in
// botframework-webchat-core 4.18.2 (gen-a) and 4.18.1-main.20251101.54e519d (gen-b)
// (WEBCHAT-ORDERING §6.1, §6.2). Every stored activity carries a numeric sequence id that Web Chat
// fills in when missing; a new activity goes before the first stored one whose (sequence id || 0)
// is strictly greater; fulfilment replaces the pending activity in place.

// abInfo is what the gen-a/gen-b reducer reads from a stored activity.
type abInfo struct {
	// seq is webchat:sequence-id after Web Chat filled it in.
	seq float64
	// streamKey groups gen-a livestream neighbours (typing activities with strictly equal
	// channelData.streamId); "" when the activity is not a typing activity or its streamId can
	// never be strictly equal to another (object, array).
	streamKey string
	// streamSeq is ToNumber(channelData.streamSequence) (gen-a).
	streamSeq float64
	// ls is the gen-b livestream metadata.
	ls   bLivestream
	isLS bool
	// partOf and pos are webchat:entity-part-of and webchat:entity-position (gen-b).
	partOf    string
	hasPartOf bool
	pos       float64
	hasPos    bool
	// throws: the gen-b reducer throws on this activity (see genBMessageEntity), so the action
	// changes nothing.
	throws bool
}

type genAB struct {
	genB bool
	list unitList
	// The indexes hold each key's units in the order they were filed. Keys with more than one
	// unit are rare except for livestreams, so a slice costs less than a set.
	byCid    map[string][]*unit
	byID     map[string][]*unit
	byStream map[string][]*unit // gen-a: by streamKey; gen-b: by session id
	finals   map[string]int     // gen-b: stored final activities per session
	// heads caches the first member (in list order) of each byStream group. The list never
	// reorders the units it holds, so the head only changes when a member arrives before it or
	// the head itself leaves.
	heads map[string]*unit
	// orders holds in list order the members of the groups of more than minRun whose head
	// left with no cached run naming the next, so that the next is found without reading every
	// member's index. Once made, a group's order follows it until the group empties.
	orders map[string]*memberOrder
	// runs caches, per byStream group, the members that follow its head without a gap: the
	// stretch findBeforeAfter walks. A livestream's revisions usually extend it at its end.
	runs    map[string]*streamRun
	scratch streamRun
	// minRun is the shortest run worth caching: most streams' runs stay short, and walking those
	// again costs less than keeping one for each.
	minRun int
	// parts holds, per gen-b part grouping, its units with a part-of and a numeric position in
	// list order, for insertionIndex to search instead of scanning the list. An update of one
	// part among many takes it out and puts it back in O(log n).
	parts map[string]*memberOrder
	// stored, when not nil, is told of every activity entering or leaving the list.
	stored  func(r *record, add bool)
	nextLid int32
	units   arena[unit]
	// beforeAfter and insertAt are the indexed searches; the tests swap in literal scans.
	beforeAfter func(key string, group []*unit, seq float64, matches, isBefore func(*unit) bool) (before, after *unit)
	insertAt    func(r *record) int
}

func newGenAB(list unitList, genB bool) *genAB {
	g := &genAB{genB: genB, list: list, byCid: map[string][]*unit{}, byID: map[string][]*unit{},
		byStream: map[string][]*unit{}, finals: map[string]int{}, heads: map[string]*unit{},
		orders: map[string]*memberOrder{}, runs: map[string]*streamRun{}, parts: map[string]*memberOrder{}, minRun: 16}
	g.beforeAfter = g.findBeforeAfter
	g.insertAt = g.insertionIndex
	return g
}

func addTo(m map[string][]*unit, k string, u *unit) { m[k] = append(m[k], u) }

// removeFrom looks for u from the end of k's units: the latest filed leave first most often (a
// revision replaced, a send fulfilled).
func removeFrom(m map[string][]*unit, k string, u *unit) {
	s := m[k]
	i := len(s) - 1
	for i >= 0 && s[i] != u {
		i--
	}
	switch {
	case i < 0:
	case len(s) == 1:
		delete(m, k)
	default:
		m[k] = slices.Delete(s, i, i+1)
	}
}

// leaveStream takes u out of byStream group k, moving the group's last member into its place:
// the group's order does not matter (findBeforeAfter reads its first member in list order), and
// a group of many members (one long livestream, or in gen-a every typing activity without a
// streamId) is not scanned for the one that leaves.
func (g *genAB) leaveStream(k string, u *unit) {
	s := g.byStream[k]
	if len(s) == 1 {
		delete(g.byStream, k)
		return
	}
	last := s[len(s)-1]
	s[u.lid], last.lid = last, u.lid
	g.byStream[k] = s[:len(s)-1]
}

func (g *genAB) index(u *unit, add bool) {
	r := u.rec
	if g.stored != nil {
		g.stored(r, add)
	}
	op := removeFrom
	if add {
		op = addTo
	}
	// The reducers match ids and clientActivityIDs with ===, numbers included.
	if k := r.cidKey(); k != "" {
		op(g.byCid, k, u)
	}
	if k := r.idKey(); k != "" {
		op(g.byID, k, u)
	}
	stream := func(k string) {
		if add {
			u.lid = int32(len(g.byStream[k]))
			g.byStream[k] = append(g.byStream[k], u)
		} else {
			g.leaveStream(k, u)
		}
		if ord := g.orders[k]; ord != nil {
			switch {
			case add:
				ord.insert(g.list, u)
			case len(g.byStream[k]) == 0:
				delete(g.orders, k)
			default:
				ord.remove(g.list, u)
			}
		}
		h := g.heads[k]
		switch {
		case !add && h == u:
			delete(g.heads, k)
			if run := g.runs[k]; run != nil && len(run.units) > 1 && run.units[0] == u {
				g.heads[k] = run.units[1] // the member right after the head
			}
		case add && h != nil && g.list.Index(u) < g.list.Index(h):
			g.heads[k] = u
		}
		g.updateRun(k, u, add)
	}
	if g.genB {
		if r.ab.isLS {
			stream(r.ab.ls.sessionID)
			if r.ab.ls.final {
				if add {
					g.finals[r.ab.ls.sessionID]++
				} else if g.finals[r.ab.ls.sessionID]--; g.finals[r.ab.ls.sessionID] == 0 {
					delete(g.finals, r.ab.ls.sessionID)
				}
			}
		}
		if r.ab.hasPartOf && r.ab.hasPos {
			g.updateParts(r.ab.partOf, u, add)
		}
	} else if r.ab.streamKey != "" {
		stream(r.ab.streamKey)
	}
}

// seqKey is (sequenceId || 0).
func seqKey(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

func (g *genAB) prepare(r *record) {
	g.nextLid++
	r.lid = g.nextLid
	r.ab = &abInfo{}
	cd := &r.dec.cd
	if r.typ() == activity.TypeTyping {
		r.ab.streamKey = strictKey(cd.stream.StreamID)
		r.ab.streamSeq = toNumber(cd.stream.StreamSequence)
	}
	if g.genB {
		r.ab.ls, r.ab.isLS = genBLivestream(r)
		if f, ok := jsonNumber(cd.entityPosition); ok {
			r.ab.pos, r.ab.hasPos = f, true
		}
		if s, ok := jsonscan.StringValue(cd.entityPartOf); ok {
			r.ab.partOf, r.ab.hasPartOf = s, true
		}
		pos, partOf, hasPos, hasPartOf, throws := genBMessageEntity(&r.dec.act)
		r.ab.throws = throws
		if hasPos || hasPartOf {
			if hasPos {
				r.ab.pos, r.ab.hasPos = pos, true
			}
			if hasPartOf {
				r.ab.partOf, r.ab.hasPartOf = partOf, true
				r.unitPrefix = unitPart
			}
		}
	}
}

// unitID is gen-b's part grouping (webchat:entity-part-of or the Message entity's isPartOf).
func (g *genAB) unitID(r *record) string {
	if r.unitPrefix == unitPart {
		return r.ab.partOf
	}
	return ""
}

// patch fills in webchat:sequence-id as patchActivity does.
func (g *genAB) patch(r *record) {
	if seq, ok := jsonNumber(r.dec.cd.seqID); ok {
		r.ab.seq = seq
		return
	}
	var group []*unit
	var key string
	var seq float64
	if g.genB {
		if r.ab.isLS {
			key, seq = r.ab.ls.sessionID, r.ab.ls.seq
			group = g.byStream[key]
		}
	} else if r.textIsString() && r.typ() == activity.TypeTyping {
		if s, ok := jsonNumber(r.dec.cd.stream.StreamSequence); ok && r.ab.streamKey != "" {
			key, seq = r.ab.streamKey, s
			group = g.byStream[key]
		}
	}
	// With no member stored, findBeforeAfter meets only "unknown" activities and finds nothing.
	if len(group) > 0 {
		matches := func(x *unit) bool { return g.member(x, key) }
		isBefore := func(x *unit) bool { return g.streamSeq(x) < seq }
		if before, after := g.beforeAfter(key, group, seq, matches, isBefore); before != nil || after != nil {
			switch {
			case before != nil && after != nil && g.genB:
				r.ab.seq = (before.rec.ab.seq + after.rec.ab.seq) / 2
			case before != nil:
				r.ab.seq = before.rec.ab.seq + 0.001
			default:
				r.ab.seq = after.rec.ab.seq - 0.001
			}
			return
		}
	}
	if r.hasTimestamp {
		r.ab.seq = r.tsDate
		return
	}
	last := 0.0
	if n := g.list.Len(); n > 0 {
		last = seqKey(g.list.At(n - 1).rec.ab.seq)
	}
	r.ab.seq = last + 0.001
}

// member says x belongs to the byStream group key: in gen-a a typing activity with that
// streamKey, in gen-b a livestream activity of that session.
func (g *genAB) member(x *unit, key string) bool {
	if g.genB {
		return x.rec.ab.isLS && x.rec.ab.ls.sessionID == key
	}
	return x.rec.typ() == activity.TypeTyping && x.rec.ab.streamKey == key
}

// streamSeq is what findBeforeAfter compares a member by: channelData's streamSequence (gen-a) or
// the livestream's sequence (gen-b).
func (g *genAB) streamSeq(x *unit) float64 {
	if g.genB {
		return x.rec.ab.ls.seq
	}
	return x.rec.ab.streamSeq
}

// findBeforeAfter mirrors reducers/private/findBeforeAfter.ts over the whole list, where the
// members of group are "before" (streamSeq below seq) or "after" and every other activity is
// "unknown": it stops at the first "after", or at the first non-"before" following a "before",
// and returns the activity preceding that point and the one at it. That point is either the
// group's head or within or right after the head's run, which streamRun searches by bisection.
func (g *genAB) findBeforeAfter(key string, group []*unit, seq float64, matches, _ func(*unit) bool) (before, after *unit) {
	first := g.heads[key]
	if first == nil {
		ord := g.orders[key]
		if ord == nil && len(group) > g.minRun {
			ord = &memberOrder{}
			for _, u := range group {
				ord.insert(g.list, u)
			}
			g.orders[key] = ord
		}
		if ord != nil {
			first = ord.first()
		} else {
			j := -1
			for _, u := range group {
				if i := g.list.Index(u); j < 0 || i < j {
					j, first = i, u
				}
			}
		}
		g.heads[key] = first
	}
	j := g.list.Index(first)
	if !(g.streamSeq(first) < seq) {
		if j > 0 {
			return g.list.At(j - 1), first
		}
		return nil, first
	}
	run := g.run(key, first, j, matches)
	// The first member that is not before: the first whose prefix maximum reaches seq.
	i, _ := slices.BinarySearchFunc(run.max, seq, func(m, s float64) int {
		if m < s {
			return -1
		}
		return 1
	})
	if i < len(run.units) {
		return run.units[i-1], run.units[i]
	}
	if k := j + len(run.units); k < g.list.Len() {
		return run.units[i-1], g.list.At(k)
	}
	return run.units[i-1], nil
}

// A streamRun is a group's head and the members that follow it in the list with no other unit
// between them, with max[i] the largest streamSeq among units[:i+1] (NaN, which is never below
// anything, counted as +Inf), so that the first member not below a sequence is a bisection away.
type streamRun struct {
	units []*unit
	max   []float64
}

func (run *streamRun) push(seq float64) {
	if math.IsNaN(seq) {
		seq = math.Inf(1)
	}
	if n := len(run.max); n > 0 && run.max[n-1] > seq {
		seq = run.max[n-1]
	}
	run.max = append(run.max, seq)
}

// run returns the head's run for group key, whose head first is at index j: the cached one when
// it still holds (same head, no unit inserted inside it, no member right after it), else one
// built by walking the list.
func (g *genAB) run(key string, first *unit, j int, matches func(*unit) bool) *streamRun {
	if run := g.runs[key]; run != nil && run.units[0] == first && g.intact(run, j, matches) {
		return run
	}
	run := &g.scratch
	run.units, run.max = run.units[:0], run.max[:0]
	for k, n := j, g.list.Len(); k < n; k++ {
		x := g.list.At(k)
		if k > j && !matches(x) {
			break
		}
		run.units = append(run.units, x)
		run.push(g.streamSeq(x))
	}
	if len(run.units) < g.minRun {
		delete(g.runs, key)
		return run
	}
	kept := &streamRun{units: slices.Clone(run.units), max: slices.Clone(run.max)}
	g.runs[key] = kept
	return kept
}

// intact says run, whose first unit is at index j, still spans consecutive indexes and is not
// followed by a member of its group. Members that left the group dropped or trimmed it already
// (updateRun).
func (g *genAB) intact(run *streamRun, j int, matches func(*unit) bool) bool {
	end := j + len(run.units)
	if g.list.Index(run.units[len(run.units)-1]) != end-1 {
		return false
	}
	return end == g.list.Len() || !matches(g.list.At(end))
}

// updateRun keeps group key's cached run in step with u joining (add) or leaving it: u extends
// the run when it lands right after it, leaves it from its end, and otherwise the run is dropped
// for findBeforeAfter to rebuild. Whether a member now follows the run is left to intact.
func (g *genAB) updateRun(key string, u *unit, add bool) {
	run := g.runs[key]
	if run == nil {
		return
	}
	n := len(run.units)
	last := run.units[n-1]
	switch {
	case !add && u == last && n > 1:
		run.units, run.max = run.units[:n-1], run.max[:n-1]
		return
	case add && g.heads[key] == run.units[0]:
		j, k := g.list.Index(run.units[0]), g.list.Index(u)
		if k == j+n && g.list.Index(last) == k-1 {
			run.units = append(run.units, u)
			run.push(g.streamSeq(u))
			return
		}
	}
	delete(g.runs, key)
}

func (g *genAB) upsert(r *record) {
	if g.genB && (r.ab.throws || (r.ab.isLS && g.finals[r.ab.ls.sessionID] > 0)) {
		return // the reducer throws, or the session has concluded
	}
	g.patch(r)
	var drop []*unit
	if k := r.cidKey(); k != "" {
		drop = append(drop, g.byCid[k]...)
	}
	if k := r.idKey(); k != "" {
		drop = append(drop, g.byID[k]...)
	}
	for _, u := range drop {
		if u.rec != nil {
			g.index(u, false)
			g.list.Remove(u)
			u.rec = nil
		}
	}
	u := g.units.alloc()
	u.kind, u.rec, u.seq = unitActivity, r, seqKey(r.ab.seq)
	g.list.Insert(u, g.insertAt(r))
	g.index(u, true)
}

// insertionIndex is the reducer's findIndex: the first unit that is a part of r's grouping with
// a higher position, or else not such a part and with a higher (sequenceId || 0).
func (g *genAB) insertionIndex(r *record) int {
	key := seqKey(r.ab.seq)
	if !g.genB || !r.ab.hasPartOf || !r.ab.hasPos {
		return g.list.FirstSeqAbove(key, 0)
	}
	parts := g.parts[r.ab.partOf]
	if parts == nil {
		return g.list.FirstSeqAbove(key, 0)
	}
	best := g.list.Len()
	if u := parts.firstPosAbove(r.ab.pos); u != nil {
		best = g.list.Index(u)
	}
	// Before best, the grouping's parts are passed over whatever their sequence ids.
	for from := 0; from < best; {
		i := g.list.FirstSeqAbove(key, from)
		if i >= best {
			break
		}
		if x := g.list.At(i); !x.rec.ab.hasPartOf || !x.rec.ab.hasPos || x.rec.ab.partOf != r.ab.partOf {
			return i
		}
		from = parts.stretchEnd(g.list, i)
	}
	return best
}

// updateParts adds u to grouping key's parts or takes it out, dropping the order of a grouping
// left with none.
func (g *genAB) updateParts(key string, u *unit, add bool) {
	p := g.parts[key]
	if add {
		if p == nil {
			p = &memberOrder{}
			g.parts[key] = p
		}
		p.insert(g.list, u)
		return
	}
	if p.len() == 1 {
		delete(g.parts, key)
		return
	}
	p.remove(g.list, u)
}

func (g *genAB) incoming(r *record) {
	g.prepare(r)
	if r.role() == activity.RoleUser {
		for _, m := range [][]*unit{g.byCid[r.cidKey()], g.byID[r.idKey()]} {
			for _, u := range m {
				r.pending = u.rec.pending
			}
		}
	}
	g.upsert(r)
}

func (g *genAB) post(r *record) {
	g.prepare(r)
	r.pending = true
	g.upsert(r)
}

// fulfilled replaces every activity with that clientActivityID by the patched echo, in place.
func (g *genAB) fulfilled(cid string, echo *record) {
	g.prepare(echo)
	if echo.ab.throws {
		return
	}
	g.patch(echo)
	echo.release()
	echo.pending = false
	for _, u := range slices.Clone(g.byCid[cid]) {
		g.index(u, false)
		c := *echo
		u.rec = &c
		u.seq = seqKey(echo.ab.seq)
		g.index(u, true)
		g.list.Refresh(u)
	}
}

// delete is DELETE_ACTIVITY: updateIn(state, [({ id }) => id === activityID]) of
// simple-update-in, which finds the indexes of every match first and then deletes at each of
// them in turn from the shortening array. The m-th deletion (from 0) so takes the activity m
// places after the m-th match, when the array still reaches that far: with one match, that
// match; with more, from the second on, whatever follows it.
func (g *genAB) delete(id string) {
	matches := g.byID[id]
	at := make([]int, len(matches))
	for i, u := range matches {
		at[i] = g.list.Index(u)
	}
	slices.Sort(at)
	n := g.list.Len()
	var gone []*unit
	for m, i := range at {
		if i+m < n {
			gone = append(gone, g.list.At(i+m))
		}
	}
	for _, u := range gone {
		g.index(u, false)
		g.list.Remove(u)
	}
}

func (g *genAB) each(f func(*record) bool) {
	g.list.Each(func(u *unit) bool { return f(u.rec) })
}

// strictKey maps a JSON value to a string that is equal for two values exactly when JavaScript's
// === holds between them; "" for objects and arrays, which are never strictly equal to another
// activity's value. An absent member (undefined) has its own key.
func strictKey(raw json.RawMessage) string {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 {
		return "u"
	}
	switch t[0] {
	case '{', '[':
		return ""
	case '"':
		s, _ := jsonscan.StringValue(t)
		return "s" + s
	case 't', 'f', 'n':
		return "l" + string(t)
	}
	f, _ := jsonNumber(t)
	return "n" + strconv.FormatFloat(f, 'g', -1, 64)
}
