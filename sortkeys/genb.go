package sortkeys

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
)

// bLivestream is getActivityLivestreamingMetadata as published in
// botframework-webchat-core 4.18.1-main.20251101.54e519d.
type bLivestream struct {
	sessionID string
	seq       float64
	final     bool
}

// genBLivestream follows that release's valibot union: interim, informative, final message,
// final typing; each tried with the metadata in channelData first, then in the first entity that
// is a valid streaminfo for that shape.
func genBLivestream(r *record) (bLivestream, bool) {
	if !r.livestreamShape() {
		return bLivestream{}, false
	}
	typ := r.typ()
	shapes := []struct {
		actType, streamType string
		final, emptyText    bool
	}{
		{activity.TypeTyping, "streaming", false, false},
		{activity.TypeTyping, "informative", false, false},
		{activity.TypeMessage, "final", true, false},
		{activity.TypeTyping, "final", true, true},
	}
	for _, sh := range shapes {
		if typ != sh.actType || (sh.emptyText && r.dec.act.Text != "") {
			continue
		}
		check := func(md activity.StreamMembers) (bLivestream, bool) {
			if st, ok := jsonscan.StringValue(md.StreamType); !ok || st != sh.streamType {
				return bLivestream{}, false
			}
			sid := ""
			if md.StreamID != nil {
				s, ok := jsonscan.StringValue(md.StreamID)
				if !ok || (sh.final && s == "") {
					return bLivestream{}, false
				}
				sid = s
			} else if sh.final {
				return bLivestream{}, false
			}
			out := bLivestream{sessionID: sid, final: sh.final, seq: math.Inf(1)}
			if !sh.final {
				seq, ok := jsonNumber(md.StreamSequence)
				if !ok || seq < 1 || seq != math.Trunc(seq) {
					return bLivestream{}, false
				}
				out.seq = seq
			}
			if out.sessionID == "" {
				out.sessionID = r.dec.act.ID
			}
			return out, true
		}
		if ls, ok := check(r.dec.cd.stream); ok {
			return ls, true
		}
		for _, raw := range r.dec.act.Entities {
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) != nil {
				continue
			}
			if t, _ := jsonscan.StringValue(m["type"]); t != "streaminfo" {
				continue
			}
			if ls, ok := check(activity.StreamMembersOf(m)); ok {
				return ls, true
			}
		}
	}
	return bLivestream{}, false
}

// genBMessageEntity reads the schema.org Message entity as that release's getOrgSchemaMessage
// does: the first entity whose type starts with "https://schema.org/" and whose @id is "";
// position when it is a number, isPartOf["@id"] when isPartOf is a valid Thing (string @type) with
// a string @id, whatever its @type. Invalid properties read as absent (valibot fallback), but a
// schema.org entity met on the way with a bad @type, @context or @id makes parseThing throw, and
// with it the reducer: throws reports that.
func genBMessageEntity(a *activity.Activity) (pos float64, partOf string, hasPos, hasPartOf, throws bool) {
	for _, raw := range a.Entities {
		t := jsonscan.TrimSpace(raw)
		if isJSONNull(t) {
			return 0, "", false, false, true // null.type
		}
		if len(t) == 0 || t[0] != '{' {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(t, &m) != nil {
			continue
		}
		typRaw, present := m["type"]
		typ, isString := jsonscan.StringValue(typRaw)
		if present && !isString && !isJSONNull(typRaw) {
			return 0, "", false, false, true // type.startsWith is not a function
		}
		if !strings.HasPrefix(typ, "https://schema.org/") {
			continue
		}
		if !validThing(m) {
			return 0, "", false, false, true
		}
		if id, ok := jsonscan.StringValue(m["@id"]); !ok || id != "" {
			continue
		}
		if f, ok := jsonNumber(activity.FirstValue(m["position"])); ok {
			pos, hasPos = f, true
		}
		var po map[string]json.RawMessage
		if json.Unmarshal(activity.FirstValue(m["isPartOf"]), &po) == nil && validThing(po) {
			if s, ok := jsonscan.StringValue(po["@id"]); ok {
				partOf, hasPartOf = s, true
			}
		}
		return pos, partOf, hasPos, hasPartOf, false
	}
	return 0, "", false, false, false
}

// validThing checks the members a schema.org Thing requires: a string @type, an optional
// "https://schema.org" @context and an optional string @id.
func validThing(m map[string]json.RawMessage) bool {
	if _, ok := jsonscan.StringValue(m["@type"]); !ok {
		return false
	}
	if raw, ok := m["@context"]; ok {
		if s, ok := jsonscan.StringValue(raw); !ok || s != "https://schema.org" {
			return false
		}
	}
	if raw, ok := m["@id"]; ok {
		if _, ok := jsonscan.StringValue(raw); !ok {
			return false
		}
	}
	return true
}
