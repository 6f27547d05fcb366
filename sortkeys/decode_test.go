package sortkeys

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
)

// decodeView is what the reducers and the renderer read from a decoded activity.
type decodeView struct {
	Typ, ID, ReplyToID, Cid, Role                 string
	IDIsString, HasText, HasAttachments, HasTS    bool
	AttachmentsOther                              bool
	IDKey, CidKey                                 string
	TextKind                                      uint8
	TsDate, Ts, Lts                               string
	PostBack, MessageBackHidden                   bool
	Entities                                      string
	Livestream                                    *lsView
	PartOf                                        string
	Position                                      string
	Grouped, Abstract                             bool
	SeqID, StreamID, StreamSequence, EntityPartOf string
	EntityPosition, ChannelDataRaw                string
	StreamType                                    bool
}

// lsView is a revision's livestream metadata as the replay keeps it (streamInfo); Sequence is
// formatted, as json.Marshal refuses the +Inf of a final revision.
type lsView struct {
	SessionID, Sequence string
	Final, Contentless  bool
}

func lsViewOf(ls *streamInfo) *lsView {
	if ls == nil {
		return nil
	}
	return &lsView{SessionID: ls.sessionID, Sequence: strconv.FormatFloat(ls.seq, 'g', -1, 64), Final: ls.final, Contentless: ls.contentless}
}

// fmtNum tells NaN, undefined and numbers apart in a comparable string.
func fmtNum(def bool, v float64) string {
	if !def {
		return "undefined"
	}
	if math.IsNaN(v) {
		return "NaN"
	}
	return json.Number(fmtFloat(v)).String()
}

func fmtFloat(v float64) string { b, _ := json.Marshal(v); return string(b) }

func fmtJSNum(n jsNum) string { return fmtNum(n.def, n.v) }

// viewOfRecord reads a record as the replay does right after decoding it.
func viewOfRecord(r *record) decodeView {
	v := decodeView{Typ: r.typ(), ID: r.id(), ReplyToID: r.replyToID(), Cid: r.cid(), Role: r.role(),
		IDIsString: r.idIsString, HasText: r.hasText(), HasAttachments: r.hasAttachments, HasTS: r.hasTimestamp,
		AttachmentsOther: r.attachmentsOther, IDKey: r.idKey(), CidKey: r.cidKey(), TextKind: r.textKind, Ts: fmtJSNum(r.ts()), Lts: fmtJSNum(r.lts()),
		PostBack: r.postBack, MessageBackHidden: r.messageBackHidden, Entities: string(r.rawEntities()),
		Livestream: lsViewOf(r.ls), SeqID: string(r.dec.cd.seqID), StreamID: string(r.dec.cd.stream.StreamID),
		StreamSequence: string(r.dec.cd.stream.StreamSequence), EntityPartOf: string(r.dec.cd.entityPartOf),
		EntityPosition: string(r.dec.cd.entityPosition), ChannelDataRaw: string(r.dec.cd.raw), StreamType: r.dec.cd.stream.StreamType != nil}
	if r.hasTimestamp {
		v.TsDate = fmtNum(true, r.tsDate)
	}
	if r.mayPartOf {
		if gid, pos, ok := r.dec.act.PartGrouping(); ok {
			v.Grouped, v.PartOf = true, gid
			if pos != nil {
				v.Position = fmtFloat(*pos)
			}
		}
	}
	if r.mayAbstract {
		me, err := r.entityView().MessageEntity()
		v.Abstract = err == nil && me != nil && me.Abstract != ""
	}
	return v
}

// referenceView decodes raw with encoding/json (members into maps, nulls dropped at the top
// level) and applies the same rules, with the entity readers run on every activity. ok is false
// when the replay must refuse the activity.
func referenceView(raw []byte, userID string) (decodeView, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return decodeView{}, false
	}
	for k, v := range m {
		if string(v) == "null" {
			delete(m, k)
		}
	}
	var v decodeView
	a := &activity.Activity{}
	str := func(raw json.RawMessage) (string, bool) {
		var s string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	v.Typ, _ = str(m["type"])
	v.ID, v.IDIsString = str(m["id"])
	if t, ok := m["text"]; ok {
		v.TextKind = textOther
		if s, ok := str(t); ok {
			v.TextKind, v.HasText, a.Text = textEmpty, s != "", s
			if s != "" {
				v.TextKind = textNonEmpty
			}
		}
	}
	v.ReplyToID, _ = str(m["replyToId"])
	tsRaw, hasTS := m["timestamp"]
	v.HasTS = hasTS
	tsDate := jsDateValue(tsRaw)
	if hasTS {
		v.TsDate = fmtNum(true, tsDate)
	}
	v.Lts = "undefined"
	if l, ok := m["localTimestamp"]; ok {
		v.Lts = fmtNum(true, jsDateValue(l))
	}
	v.Role = "channel"
	var from map[string]json.RawMessage
	if json.Unmarshal(m["from"], &from) == nil && from != nil {
		if role, _ := str(from["role"]); role != "" {
			v.Role = role
		} else {
			v.Role = roleOf(from["id"], userID)
		}
	}
	var cd map[string]json.RawMessage
	if raw, ok := m["channelData"]; ok && json.Unmarshal(raw, &cd) == nil && cd != nil {
		v.ChannelDataRaw = string(raw)
		a.ChannelData = cd
	}
	v.SeqID, v.StreamID, v.StreamSequence = string(cd["webchat:sequence-id"]), string(cd["streamId"]), string(cd["streamSequence"])
	v.EntityPartOf, v.EntityPosition = string(cd["webchat:entity-part-of"]), string(cd["webchat:entity-position"])
	_, v.StreamType = cd["streamType"]
	var cidIsString bool
	v.Cid, cidIsString = str(cd["clientActivityID"])
	// Keys as === compares them: a string is itself, a number or true by value.
	v.IDKey, v.CidKey = v.ID, v.Cid
	if !v.IDIsString {
		v.IDKey = keyOfValue(m["id"])
	}
	if !cidIsString {
		v.CidKey = keyOfValue(cd["clientActivityID"])
	}
	v.Ts = "undefined"
	if seq, ok := jsonNumber(cd["webchat:sequence-id"]); ok {
		v.Ts = fmtNum(true, seq)
	} else if hasTS && tsRaw[0] == '"' {
		v.Ts = fmtNum(true, tsDate)
	}
	v.PostBack = truthy(cd["postBack"])
	if truthy(cd["messageBack"]) {
		var mb map[string]json.RawMessage
		v.MessageBackHidden = json.Unmarshal(cd["messageBack"], &mb) != nil || !truthy(mb["displayText"])
	}
	if ents, ok := m["entities"]; ok {
		if json.Unmarshal(ents, &a.Entities) != nil || ents[0] != '[' {
			return decodeView{}, false
		}
		v.Entities = string(ents)
	}
	var atts []json.RawMessage
	if json.Unmarshal(m["attachments"], &atts) == nil && len(atts) > 0 {
		v.HasAttachments = true
		a.Attachments = oneAttachment
	}
	if raw, ok := m["attachments"]; ok && raw[0] != '[' {
		v.AttachmentsOther = true
	}
	a.Type, a.ID = v.Typ, v.ID
	// The livestream schemas also want a string id, a string text and array attachments.
	if ls, ok := a.Livestream(); ok && v.IDIsString && v.TextKind != textOther && !v.AttachmentsOther {
		v.Livestream = &lsView{SessionID: ls.SessionID, Sequence: strconv.FormatFloat(ls.Sequence, 'g', -1, 64),
			Final: ls.Kind == activity.LivestreamFinal, Contentless: ls.Kind == activity.LivestreamContentless}
	}
	if gid, pos, ok := a.PartGrouping(); ok {
		v.Grouped, v.PartOf = true, gid
		if pos != nil {
			v.Position = fmtFloat(*pos)
		}
	}
	me, err := a.MessageEntity()
	v.Abstract = err == nil && me != nil && me.Abstract != ""
	return v, true
}

// hasDuplicateMembers: the replay reads a repeated member where it meets it and encoding/json
// keeps the last, so logs that repeat a member of the activity, from or channelData are left
// out of the comparison.
func hasDuplicateMembers(raw []byte) bool {
	dup := false
	seen := map[string]bool{}
	_ = jsonscan.Members(raw, func(k, v []byte) {
		dup = dup || seen[string(k)]
		seen[string(k)] = true
		if string(k) == "from" || string(k) == "channelData" {
			inner := map[string]bool{}
			_ = jsonscan.Members(v, func(k, _ []byte) {
				dup = dup || inner[string(k)]
				inner[string(k)] = true
			})
		}
	})
	return dup
}

func checkDecode(t *testing.T, raw []byte) {
	t.Helper()
	if !json.Valid(raw) || hasDuplicateMembers(raw) {
		return
	}
	want, wantOK := referenceView(raw, "u-user")
	var mem decodeArenas
	r, err := decodeRecord(raw, "u-user", &mem, false)
	if (err == nil) != wantOK {
		t.Fatalf("%s: decodeRecord error %v, reference accepts: %v", raw, err, wantOK)
	}
	if err != nil {
		return
	}
	got := viewOfRecord(r)
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if !bytes.Equal(gj, wj) {
		t.Fatalf("%s:\n got %s\nwant %s", raw, gj, wj)
	}
}

// TestDecodeRecordMatchesEncodingJSON compares the scanning decoder with a decode by encoding/json
// on every activity of random logs (plain and wild) and on hand-picked edge cases.
func TestDecodeRecordMatchesEncodingJSON(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		for _, ev := range randomLog(seed, 400, seed%2 == 0) {
			if len(ev.Activity) > 0 {
				checkDecode(t, ev.Activity)
			}
		}
	}
	for _, s := range decodeSeeds {
		checkDecode(t, []byte(s))
	}
}

var decodeSeeds = []string{
	`{}`, `null`, `[]`, `{"entities":{}}`, `{"entities":null,"text":null}`,
	`{"type":"typing","id":"s","text":"x","channelData":{"streamType":"streaming","streamSequence":1}}`,
	`{"type":"typing","id":"s","entities":[{"type":"streaminfo","streamType":"streaming","streamSequence":2,"streamId":"s0"}]}`,
	`{"type":"message","id":"f","channelData":{"streamType":"final","streamId":"s0"}}`,
	`{"type":"message","id":"p","entities":[{"type":"https://schema.org/Message","@type":"Message","@id":"","isPartOf":{"@id":"_:g","@type":"HowTo"},"position":[2,1],"abstract":"ab"}]}`,
	`{"type":"message","id":"\u0061b","text":"\u00e9","from":{"id":"u-user"},"timestamp":"2025-01-01T00:00:00Z"}`,
	`{"id":7,"text":3,"from":{"id":"x","role":null},"localTimestamp":"2025-01-01T00:00:00.5Z","timestamp":12}`,
	`{"channelData":{"clientActivityID":"c","webchat:sequence-id":"12","postBack":true,"messageBack":{"displayText":""}}}`,
	`{"channelData":{"webchat:sequence-id":1e999,"messageBack":1,"webchat:entity-position":"2","webchat:entity-part-of":"g"}}`,
	`{"attachments":[{}],"from":[],"replyToId":"r"}`, "{\"id\":\"\xff\xfe\",\"text\":\"\xc3\"}",
	`{"\u0074ype":"message","entities":[{"type":"stream\u0069nfo"}]}`,
	// Interims without text: the Message entity's abstract alone makes one not contentless.
	`{"type":"typing","id":"s","channelData":{"streamType":"streaming","streamSequence":1},"entities":[{"type":"https://schema.org/Message","@type":"Message","@id":"","abstract":"thinking"}]}`,
	`{"type":"typing","id":"s","channelData":{"streamType":"informative","streamSequence":2},"entities":[{"type":"https://schema.org/Message","@type":"Message","@id":""}]}`,
	`{"type":"typing","id":"s","channelData":{"streamType":"streaming","streamSequence":3},"entities":[{"type":"https://schema.org/Message","@type":"Message","@id":"","\u0061bstract":"x"}]}`,
}

func FuzzDecodeRecord(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecode(t, raw) })
}
