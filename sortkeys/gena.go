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
	byPart   map[string][]*unit // gen-b: units with a part-of and a numeric position
	// heads caches the first member (in list order) of each byStream group. The list never
	// reorders the units it holds, so the head only changes when a member arrives before it or
	// the head itself leaves.
	heads map[string]*unit
	// stored, when not nil, is told of every activity entering or leaving the list.
	stored  func(r *record, add bool)
	nextLid int32
	units   arena[unit]
	// beforeAfter and insertAt are the indexed searches; the tests swap in literal scans.
	beforeAfter func(key string, group []*unit, matches, isBefore func(*unit) bool) (before, after *unit)
	insertAt    func(r *record) int
}

func newGenAB(list unitList, genB bool) *genAB {
	g := &genAB{genB: genB, list: list, byCid: map[string][]*unit{}, byID: map[string][]*unit{},
		byStream: map[string][]*unit{}, finals: map[string]int{}, byPart: map[string][]*unit{},
		heads: map[string]*unit{}}
	g.beforeAfter = g.findBeforeAfter
	g.insertAt = g.insertionIndex
	return g
}

func addTo(m map[string][]*unit, k string, u *unit) { m[k] = append(m[k], u) }

func removeFrom(m map[string][]*unit, k string, u *unit) {
	s := m[k]
	switch i := slices.Index(s, u); {
	case i < 0:
	case len(s) == 1:
		delete(m, k)
	default:
		m[k] = slices.Delete(s, i, i+1)
	}
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
		op(g.byStream, k, u)
		h := g.heads[k]
		switch {
		case !add && h == u:
			delete(g.heads, k)
		case add && h != nil && g.list.Index(u) < g.list.Index(h):
			g.heads[k] = u
		}
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
			op(g.byPart, r.ab.partOf, u)
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
	cd := r.cd
	if r.typ() == activity.TypeTyping {
		r.ab.streamKey = strictKey(cd.streamID)
		r.ab.streamSeq = toNumber(cd.streamSequence)
	}
	if g.genB {
		r.ab.ls, r.ab.isLS = genBLivestream(r)
		if f, ok := jsonNumber(cd.entityPosition); ok {
			r.ab.pos, r.ab.hasPos = f, true
		}
		if s, ok := jsonscan.StringValue(cd.entityPartOf); ok {
			r.ab.partOf, r.ab.hasPartOf = s, true
		}
		pos, partOf, hasPos, hasPartOf, throws := genBMessageEntity(r.act)
		r.ab.throws = throws
		if hasPos || hasPartOf {
			if hasPos {
				r.ab.pos, r.ab.hasPos = pos, true
			}
			if hasPartOf {
				r.ab.partOf, r.ab.hasPartOf = partOf, true
				r.unitPrefix, r.unitKey = unitPart, partOf
			}
		}
	}
}

// patch fills in webchat:sequence-id as patchActivity does.
func (g *genAB) patch(r *record) {
	if seq, ok := jsonNumber(r.cd.seqID); ok {
		r.seq = seq
		return
	}
	var group []*unit
	var key string
	var matches, isBefore func(*unit) bool
	if g.genB {
		if r.ab.isLS {
			key = r.ab.ls.sessionID
			group = g.byStream[key]
			matches = func(x *unit) bool { return x.rec.ab.isLS && x.rec.ab.ls.sessionID == r.ab.ls.sessionID }
			isBefore = func(x *unit) bool { return x.rec.ab.ls.seq < r.ab.ls.seq }
		}
	} else if r.textKind == textString && r.typ() == activity.TypeTyping {
		if s, ok := jsonNumber(r.cd.streamSequence); ok && r.ab.streamKey != "" {
			key = r.ab.streamKey
			group = g.byStream[key]
			matches = func(x *unit) bool {
				return x.rec.typ() == activity.TypeTyping && x.rec.ab.streamKey == r.ab.streamKey
			}
			isBefore = func(x *unit) bool { return x.rec.ab.streamSeq < s }
		}
	}
	if matches == nil {
		matches = func(*unit) bool { return false }
	}
	if before, after := g.beforeAfter(key, group, matches, isBefore); before != nil || after != nil {
		switch {
		case before != nil && after != nil && g.genB:
			r.seq = (before.rec.seq + after.rec.seq) / 2
		case before != nil:
			r.seq = before.rec.seq + 0.001
		default:
			r.seq = after.rec.seq - 0.001
		}
		return
	}
	if r.hasTimestamp {
		r.seq = r.tsDate
		return
	}
	last := 0.0
	if n := g.list.Len(); n > 0 {
		last = seqKey(g.list.At(n - 1).rec.seq)
	}
	r.seq = last + 0.001
}

// findBeforeAfter mirrors reducers/private/findBeforeAfter.ts over the whole list, where the
// members of group are "before" or "after" and every other activity is "unknown": it stops at the
// first "after", or at the first non-"before" following a "before", and returns the activity
// preceding that point and the one at it. matches tells a member of group from any other unit.
func (g *genAB) findBeforeAfter(key string, group []*unit, matches, isBefore func(*unit) bool) (before, after *unit) {
	if len(group) == 0 {
		return nil, nil
	}
	first := g.heads[key]
	if first == nil {
		j := -1
		for _, u := range group {
			if i := g.list.Index(u); j < 0 || i < j {
				j, first = i, u
			}
		}
		g.heads[key] = first
	}
	j := g.list.Index(first)
	if !isBefore(first) {
		if j > 0 {
			return g.list.At(j - 1), first
		}
		return nil, first
	}
	n := g.list.Len()
	k := j + 1
	for ; k < n; k++ {
		x := g.list.At(k)
		if !matches(x) || !isBefore(x) {
			return g.list.At(k - 1), x
		}
	}
	return g.list.At(n - 1), nil
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
	u.kind, u.rec, u.seq = unitActivity, r, seqKey(r.seq)
	g.list.Insert(u, g.insertAt(r))
	g.index(u, true)
}

func (g *genAB) insertionIndex(r *record) int {
	key := seqKey(r.seq)
	if !g.genB || !r.ab.hasPartOf || !r.ab.hasPos {
		return g.list.FirstSeqAbove(key, 0)
	}
	peers := g.byPart[r.ab.partOf]
	best := g.list.Len()
	for _, x := range peers {
		if x.rec.ab.pos > r.ab.pos {
			if i := g.list.Index(x); i < best {
				best = i
			}
		}
	}
	for from := 0; from < best; {
		i := g.list.FirstSeqAbove(key, from)
		if i >= best {
			break
		}
		if !slices.Contains(peers, g.list.At(i)) {
			best = i
			break
		}
		from = i + 1
	}
	return best
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
		u.seq = seqKey(echo.seq)
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
