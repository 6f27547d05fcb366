package sortkeys

import (
	"encoding/json"

	"github.com/directline-go/directline/activity"
)

// keyWalk is the rendering layer's keyer (ActivityKeyerComposer.tsx; conformance README "From
// order to screen" step 2). Records of the previous walk win over those of the current walk.
type keyWalk struct {
	prevCid, prevID map[string]int
	prevRev         map[int]int
	nextKey         int
	keys            []int // keys of the last walk, per UI list entry
}

func newKeyWalk() *keyWalk {
	return &keyWalk{prevCid: map[string]int{}, prevID: map[string]int{}, prevRev: map[int]int{}}
}

func lookup(prev, cur map[string]int, k string) (int, bool) {
	if v, ok := prev[k]; ok {
		return v, true
	}
	v, ok := cur[k]
	return v, ok
}

// run walks the UI list, assigning keys, and replaces the records.
func (w *keyWalk) run(ui []*record) {
	cid, id, rev := map[string]int{}, map[string]int{}, map[int]int{}
	w.keys = w.keys[:0]
	for _, r := range ui {
		sid, _ := r.ui()
		key, ok := 0, false
		if r.cid != "" {
			key, ok = lookup(w.prevCid, cid, r.cid)
		}
		if !ok && sid != "" {
			key, ok = lookup(w.prevID, id, sid)
		}
		if !ok && r.id != "" {
			key, ok = lookup(w.prevID, id, r.id)
		}
		if !ok {
			if key, ok = w.prevRev[r.rev]; !ok {
				key, ok = rev[r.rev]
			}
		}
		if !ok {
			w.nextKey++
			key = w.nextKey
		}
		if r.id != "" {
			id[r.id] = key
		}
		if sid != "" {
			id[sid] = key
		}
		if r.cid != "" {
			cid[r.cid] = key
		}
		rev[r.rev] = key
		w.keys = append(w.keys, key)
	}
	w.prevCid, w.prevID, w.prevRev = cid, id, rev
}

// bubbles applies steps 3 and 4 to the last walk: each key's bubble sits at its first entry and
// shows its last one; hidden revisions drop the bubble.
func (w *keyWalk) bubbles(ui []*record) []Bubble {
	last := map[int]int{}
	for i, k := range w.keys {
		last[k] = i
	}
	seen := map[int]bool{}
	out := []Bubble{}
	for i, k := range w.keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		shown := ui[last[k]]
		if _, ok := shown.ui(); ok {
			out = append(out, Bubble{Name: shown.name(), Key: k, First: i})
		}
	}
	return out
}

// visible is the default activity middleware's choice (createCoreMiddleware.tsx): messages and
// typing activities with content are bubbles; conversationUpdate, event, invoke, contentless
// livestream revisions, empty typing and empty, postBack or messageBack-without-displayText
// messages are not. Other types have no renderer and are not counted as bubbles.
func visible(r *record) bool {
	a := r.act
	switch a.Type {
	case activity.TypeTyping:
		if ls, ok := a.Livestream(); ok && ls.Kind == activity.LivestreamContentless {
			return false
		}
		return hasContent(a)
	case activity.TypeMessage:
		if _, ok := a.ChannelData["postBack"]; ok && truthy(a.ChannelData["postBack"]) {
			return false
		}
		if raw, ok := a.ChannelData["messageBack"]; ok && truthy(raw) {
			var mb map[string]json.RawMessage
			if json.Unmarshal(raw, &mb) != nil || !truthy(mb["displayText"]) {
				return false
			}
		}
		return hasContent(a)
	}
	return false
}

func hasContent(a *activity.Activity) bool {
	if a.Text != "" || len(a.Attachments) > 0 {
		return true
	}
	me, err := a.MessageEntity()
	return err == nil && me != nil && me.Abstract != ""
}

// truthy is JavaScript truthiness of a JSON value (absent is falsy).
func truthy(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch string(raw) {
	case "null", "false", "0", `""`, "-0":
		return false
	}
	if f, ok := jsonNumber(raw); ok {
		return f != 0
	}
	return true
}
