package sortkeys

import (
	"encoding/json"
	"slices"

	"github.com/directline-go/directline/activity"
)

// keyWalk is the rendering layer's keyer (ActivityKeyerComposer.tsx; conformance README "From
// order to screen" step 2). Records of the previous walk win over those of the current walk.
//
// Walks run after every event, so they avoid maps: ids, clientActivityIDs and session ids are
// interned to small integers, and each record table is a slice of slots stamped with the walk
// that wrote them, so starting a walk clears nothing.
type keyWalk struct {
	syms map[string]int32
	// prev and cur hold the records under clientActivityID (cid), activity or session id (id)
	// and revision (rev), indexed by symbol or revision number.
	prev, cur records
	gen       uint32 // stamp of the current walk; the previous walk's is gen-1
	nextKey   int
	keys      []int // keys of the last walk, per UI list entry
	// walked is the UI list the last walk ran over: Web Chat walks only when the list changes.
	walked []*record
	// groupOf is bubbles' table from key to group, all zero between calls: sized by every key
	// ever issued, it is kept rather than made again for each call.
	groupOf []int32
}

type slot struct {
	gen uint32
	key int32
}

type records struct{ cid, id, rev []slot }

func newKeyWalk() *keyWalk { return &keyWalk{syms: map[string]int32{}, gen: 2} }

func (w *keyWalk) sym(s string) int32 {
	if s == "" {
		return 0
	}
	if v, ok := w.syms[s]; ok {
		return v
	}
	v := int32(len(w.syms) + 1)
	w.syms[s] = v
	return v
}

func get(tab []slot, i int32, gen uint32) (int, bool) {
	if i <= 0 || int(i) >= len(tab) || tab[i].gen != gen {
		return 0, false
	}
	return int(tab[i].key), true
}

func put(tab *[]slot, i int32, gen uint32, key int) {
	if i <= 0 {
		return
	}
	for int(i) >= len(*tab) {
		*tab = append(*tab, slot{})
	}
	(*tab)[i] = slot{gen: gen, key: int32(key)}
}

// extend returns tab with at least n slots.
func extend(tab []slot, n int) []slot {
	if len(tab) >= n {
		return tab
	}
	return append(tab, make([]slot, n-len(tab))...)
}

// find looks a symbol up in the previous walk's table, then in the current one.
func (w *keyWalk) find(prev, cur []slot, i int32) (int, bool) {
	if k, ok := get(prev, i, w.gen-1); ok {
		return k, true
	}
	return get(cur, i, w.gen)
}

// run walks the UI list, assigning keys, and replaces the previous walk's records. A list with
// the same revisions in the same places as the last walk's is not walked again: Web Chat walks
// after changes only, and a second walk could change keys (conformance README "From order to
// screen", step 2).
func (w *keyWalk) run(ui []*record) {
	if slices.Equal(ui, w.walked) {
		return
	}
	w.walked = append(w.walked[:0], ui...)
	if len(w.syms) == 0 {
		// Most revisions bring one new symbol (an id), sends a second (a clientActivityID).
		// Sized for them, the table of a long log is not rebuilt at each doubling.
		w.syms = make(map[string]int32, len(ui)+len(ui)/4)
	}
	// Symbols first, so that the record tables are sized once rather than grown slot by slot.
	var maxRev int32
	for _, r := range ui {
		if !r.symDone {
			sid, _ := r.ui()
			r.idSym, r.cidSym, r.sidSym = w.sym(r.id()), w.sym(r.cid()), w.sym(sid)
			r.symDone = true
		}
		maxRev = max(maxRev, r.rev)
	}
	w.cur.id = extend(w.cur.id, len(w.syms)+1)
	w.cur.cid = extend(w.cur.cid, len(w.syms)+1)
	w.cur.rev = extend(w.cur.rev, int(maxRev)+1)
	w.keys = slices.Grow(w.keys[:0], len(ui))
	for _, r := range ui {
		key, ok := w.find(w.prev.cid, w.cur.cid, r.cidSym)
		if !ok {
			key, ok = w.find(w.prev.id, w.cur.id, r.sidSym)
		}
		if !ok {
			key, ok = w.find(w.prev.id, w.cur.id, r.idSym)
		}
		if !ok {
			key, ok = w.find(w.prev.rev, w.cur.rev, r.rev)
		}
		if !ok {
			w.nextKey++
			key = w.nextKey
		}
		put(&w.cur.id, r.idSym, w.gen, key)
		put(&w.cur.id, r.sidSym, w.gen, key)
		put(&w.cur.cid, r.cidSym, w.gen, key)
		put(&w.cur.rev, r.rev, w.gen, key)
		w.keys = append(w.keys, key)
	}
	w.prev, w.cur = w.cur, w.prev
	w.gen++
}

// bubbles applies steps 3 and 4 to the last walk: each key's bubble sits at its first entry and
// shows its last one; hidden revisions drop the bubble. A long log has hundreds of thousands of
// bubbles, so their IDs are windows of one array that holds the ids grouped by key.
func (w *keyWalk) bubbles(ui []*record) []Bubble {
	// A group is one key's entries: the first and last, how many have an id, and where the next
	// of those goes in ids.
	type group struct{ first, last, n, at int }
	// slot[k] is 1 + the index in groups of key k (the walks number keys from 1 up to nextKey).
	if len(w.groupOf) <= w.nextKey {
		w.groupOf = make([]int32, w.nextKey+1+w.nextKey/2)
	}
	slot := w.groupOf
	defer func() {
		for _, k := range w.keys {
			slot[k] = 0
		}
	}()
	groups := make([]group, 0, len(w.keys))
	for i, k := range w.keys {
		g := slot[k] - 1
		if g < 0 {
			g = int32(len(groups))
			slot[k] = g + 1
			groups = append(groups, group{first: i})
		}
		groups[g].last = i
		if ui[i].id() != "" {
			groups[g].n++
		}
	}
	total := 0
	for g := range groups {
		groups[g].at = total
		total += groups[g].n
	}
	ids := make([]string, total)
	for i, k := range w.keys {
		if id := ui[i].id(); id != "" {
			g := &groups[slot[k]-1]
			ids[g.at] = id
			g.at++
		}
	}
	out := make([]Bubble, 0, len(groups))
	for _, g := range groups {
		shown := ui[g.last]
		if _, ok := shown.ui(); ok {
			out = append(out, Bubble{Name: shown.name(), Key: w.keys[g.first], First: g.first, IDs: ids[g.at-g.n : g.at : g.at],
				Activity: shown.raw(), Role: shown.role()})
		}
	}
	return out
}

// visible is the default activity middleware's choice (createCoreMiddleware.tsx): messages and
// typing activities with content are bubbles; conversationUpdate, event, invoke, contentless
// livestream revisions, empty typing and empty, postBack or messageBack-without-displayText
// messages are not. Other types have no renderer and are not counted as bubbles.
func visible(r *record) bool {
	switch r.typ() {
	case activity.TypeTyping:
		if r.ls != nil && r.ls.contentless {
			return false
		}
		return hasContent(r)
	case activity.TypeMessage:
		if r.postBack || r.messageBackHidden {
			return false
		}
		return hasContent(r)
	}
	return false
}

func hasContent(r *record) bool {
	if r.hasText() || r.hasAttachments {
		return true
	}
	if !r.mayAbstract {
		return false
	}
	me, err := r.entityView().MessageEntity()
	return err == nil && me != nil && me.Abstract != ""
}

// truthy is JavaScript truthiness of a JSON value (absent is falsy).
func truthy(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch string(raw) {
	case "null", "false", `""`:
		return false
	}
	if f, ok := jsonNumber(raw); ok {
		return f != 0
	}
	return true
}
