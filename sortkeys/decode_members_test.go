package sortkeys

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unsafe"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
)

// decodeRecordByMembers is the member-by-member decoder the single-pass one replaced: each member
// is skipped by bracket matching, then from, channelData and the entities are scanned again. It
// stays as the oracle for input encoding/json rejects, which the replay must accept or refuse
// exactly as before.
func decodeRecordByMembers(raw json.RawMessage, userID string, mem *decodeArenas) (*record, error) {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return nil, ErrNotObject
	}
	// t and every value handed out below are slices of raw: the difference of capacities is the
	// offset into raw.
	base := cap(raw)
	r := mem.records.alloc()
	r.rawPtr, r.rawLen = unsafe.SliceData(raw), int32(len(raw))
	r.dec = &mem.dec
	cd := &mem.dec.cd
	*cd = channelData{}
	a := &mem.dec.act
	*a = activity.Activity{Entities: a.Entities[:0]}
	tsString := false
	var bad error
	var fromID, text []byte
	var fromRole string
	hasFrom := false
	// JSON.parse keeps the last of repeated members: collect them first, in order of first
	// appearance, each with its last value.
	var keys []string
	last := map[string][]byte{}
	err := jsonscan.Members(t, func(key []byte, v []byte) {
		if _, ok := last[string(key)]; !ok {
			keys = append(keys, string(key))
		}
		last[string(key)] = v
	})
	if err != nil {
		return nil, err
	}
	for _, key := range keys {
		v := last[key]
		if len(v) == 4 && string(v) == "null" { // the scanner hands out values without spaces
			continue
		}
		switch key {
		case "type":
			typ, _ := internedOf(v)
			r.setType(typ)
		case "id":
			r.idRef, r.idIsString = r.strOf(v, strID)
			r.idKeyed = !r.idIsString && r.setKeyOf(v, strID)
		case "text":
			text = v
			r.textKind = textOther
			if inner, ok := jsonscan.PlainString(v); ok {
				r.textKind = textKindOf(len(inner) > 0)
			} else if s, ok := jsonscan.StringValue(v); ok {
				r.textKind = textKindOf(s != "")
			}
		case "timestamp":
			// A repeated member: the last one is the activity's, string or not.
			r.hasTimestamp, r.tsDate, tsString = true, jsDateValue(v), v[0] == '"'
		case "localTimestamp":
			r.ltsDef, r.ltsV = true, jsDateValue(v)
		case "replyToId":
			r.replyRef, _ = r.strOf(v, strReplyTo)
		case "from":
			hasFrom = jsonscan.Members(v, func(k []byte, fv []byte) {
				switch string(k) {
				case "id":
					fromID = fv
				case "role":
					fromRole, _ = internedOf(fv)
				}
			}) == nil
		case "channelData":
			if jsonscan.Members(v, cd.set) == nil {
				cd.raw = v
			}
		case "entities":
			r.entStart, r.entEnd = int32(base-cap(v)), int32(base-cap(v)+len(v))
			if e := jsonscan.Elements(v, func(ev []byte) {
				a.Entities = append(a.Entities, ev)
				esc := bytes.IndexByte(ev, '\\') >= 0
				r.mayStreamInfo = r.mayStreamInfo || esc || bytes.Contains(ev, []byte("streaminfo"))
				r.mayPartOf = r.mayPartOf || esc || bytes.Contains(ev, []byte("isPartOf"))
				r.mayAbstract = r.mayAbstract || esc || bytes.Contains(ev, []byte("abstract"))
			}); e != nil {
				bad = e
			}
		case "attachments":
			n := 0
			r.attachmentsOther = jsonscan.Elements(v, func([]byte) { n++ }) != nil
			r.hasAttachments = !r.attachmentsOther && n > 0
		}
	}
	if bad != nil {
		return nil, bad
	}
	if r.entEnd == 0 {
		a.Entities = nil
	}
	a.Type, a.ID = r.typ(), r.id()
	if r.hasAttachments {
		a.Attachments = oneAttachment
	}
	var cidIsString bool
	r.cidRef, cidIsString = r.strOf(cd.cid, strCid)
	r.cidKeyed = cd.cid != nil && !cidIsString && r.setKeyOf(cd.cid, strCid)
	switch {
	case !hasFrom:
		r.setRole("channel")
	case fromRole != "":
		r.setRole(fromRole)
	default:
		r.setRole(roleOf(fromID, userID))
	}
	if seq, ok := jsonNumber(cd.seqID); ok {
		r.tsDef, r.tsV = true, seq
	} else if tsString {
		r.tsDef, r.tsV = true, r.tsDate
	}
	r.postBack = truthy(cd.postBack)
	if truthy(cd.messageBack) {
		var mb map[string]json.RawMessage
		r.messageBackHidden = json.Unmarshal(cd.messageBack, &mb) != nil || !truthy(mb["displayText"])
	}
	if cd.stream.StreamType != nil || r.mayStreamInfo {
		// Only livestream candidates need text and channelData, read here as a map by
		// activity.Livestream.
		a.Text, _ = jsonscan.StringValue(text)
		if cd.stream.StreamType != nil {
			a.ChannelData = map[string]json.RawMessage{}
			if err := jsonscan.Members(cd.raw, func(k []byte, cv []byte) { a.ChannelData[string(k)] = cv }); err != nil {
				return nil, err
			}
		}
		if ls, ok := a.Livestream(); ok && r.livestreamShape() {
			r.keepLivestream(ls, cd, mem)
		}
	}
	return r, nil
}

// FuzzDecodeRecordMatchesMemberScan compares the single-pass decoder with the member-by-member
// one on any input, valid JSON or not: same acceptance, same view.
func FuzzDecodeRecordMatchesMemberScan(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	for _, ev := range randomLog(3, 300, true) {
		if len(ev.Activity) > 0 {
			f.Add([]byte(ev.Activity))
		}
	}
	f.Fuzz(checkMatchesMemberScan)
}

func checkMatchesMemberScan(t *testing.T, raw []byte) {
	t.Helper()
	var m1, m2 decodeArenas
	r1, e1 := decodeRecordByMembers(raw, "u-user", &m1)
	r2, e2 := decodeRecord(raw, "u-user", &m2, false)
	if (e1 == nil) != (e2 == nil) {
		t.Fatalf("%q: old %v new %v", raw, e1, e2)
	}
	if e1 != nil {
		return
	}
	g1, _ := json.Marshal(viewOfRecord(r1))
	g2, _ := json.Marshal(viewOfRecord(r2))
	if !bytes.Equal(g1, g2) {
		t.Fatalf("%q: old %s new %s", raw, g1, g2)
	}
}

// TestDecodeRecordCutsAndSpaces compares the single-pass decoder with the member-by-member one on
// every prefix of the seeds and of random activities (a member cut after its key, its colon or
// inside its value reads the general way, near the end of the input), and on the same activities
// with whitespace around their separators.
func TestDecodeRecordCutsAndSpaces(t *testing.T) {
	var ins []string
	ins = append(ins, decodeSeeds...)
	for _, ev := range randomLog(5, 60, true) {
		if len(ev.Activity) > 0 {
			ins = append(ins, string(ev.Activity))
		}
	}
	for _, in := range ins {
		for n := 0; n <= len(in); n++ {
			checkMatchesMemberScan(t, []byte(in[:n]))
		}
		for _, r := range []*strings.Replacer{
			strings.NewReplacer(`":`, `" :`), strings.NewReplacer(`":`, `": `), strings.NewReplacer(`,"`, ` ,"`),
			strings.NewReplacer(`,"`, `, "`), strings.NewReplacer(`{"`, `{ "`), strings.NewReplacer(`"}`, `" }`),
		} {
			checkMatchesMemberScan(t, []byte(r.Replace(in)))
		}
	}
}

// TestDecodeRecordRepeatedMembers: a repeated member replaces the earlier one whole, as in
// JSON.parse: a null or non-object last value leaves it absent, and an entities that is not an
// array fails only when no later one replaces it.
func TestDecodeRecordRepeatedMembers(t *testing.T) {
	for _, s := range []string{
		`{"type":"message","id":"m","timestamp":"2025-01-01T00:00:01.000Z","timestamp":null}`,
		`{"type":"message","id":"m","channelData":{"webchat:sequence-id":3,"clientActivityID":"c"},"channelData":null}`,
		`{"type":"message","id":"m","channelData":{"webchat:sequence-id":3,"clientActivityID":"c"},"channelData":{"x":1}}`,
		`{"type":"message","id":"m","channelData":{"clientActivityID":"c"},"channelData":"s"}`,
		`{"type":"message","id":"m","from":{"id":"b","role":"bot"},"from":{"id":"u-user"}}`,
		`{"type":"message","id":"m","from":{"id":"b","role":"bot"},"from":null}`,
		`{"type":"message","id":"m","from":{"id":"b","role":"bot"},"from":"b"}`,
		`{"type":"message","id":"m","entities":[{"type":"streaminfo"}],"entities":[]}`,
		`{"type":"message","id":"m","entities":5,"entities":[{"type":"x"}]}`,
		`{"type":"message","id":"m","entities":"s","entities":[]}`,
		`{"type":"message","id":"m","entities":[],"entities":{"a":1}}`,
		`{"type":"message","id":"m","entities":[],"entities":null}`,
		`{"type":"message","id":"m","text":"a","text":null,"attachments":[1],"attachments":null}`,
		`{"type":"message","id":"m","id":null,"replyToId":"r","replyToId":null,"localTimestamp":"2025-01-01T00:00:01.000Z","localTimestamp":null}`,
		`{"type":"message","type":null,"id":"m"}`,
	} {
		checkMatchesMemberScan(t, []byte(s))
	}
}

// TestDecodeRecordRepeatedChannelData: with channelData repeated, the livestream readers see the
// last object read.
func TestDecodeRecordRepeatedChannelData(t *testing.T) {
	for _, s := range []string{
		`{"type":"typing","id":"a","text":"x","channelData":{"streamType":"streaming","streamId":"q","streamSequence":1},"channelData":{"streamType":"streaming","streamSequence":2}}`,
		`{"type":"typing","id":"a","text":"x","channelData":{"streamType":"streaming","streamId":"q","streamSequence":1},"channelData":[1]}`,
		`{"type":"typing","id":"a","text":"x","channelData":{"streamType":"streaming","streamId":"q","streamSequence":1},"channelData":{"a":1"}}`,
	} {
		var m1, m2 decodeArenas
		r1, e1 := decodeRecordByMembers([]byte(s), "u-user", &m1)
		r2, e2 := decodeRecord([]byte(s), "u-user", &m2, false)
		if (e1 == nil) != (e2 == nil) {
			t.Fatalf("%s: %v %v", s, e1, e2)
		}
		if e1 == nil {
			g1, _ := json.Marshal(viewOfRecord(r1))
			g2, _ := json.Marshal(viewOfRecord(r2))
			if !bytes.Equal(g1, g2) {
				t.Fatalf("%s:\n%s\n%s", s, g1, g2)
			}
		}
	}
}
