package sortkeys

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/directline-go/directline/activity/jsonscan"
)

// fastPathInputs are values of the shapes the decoder's fast paths read (objects of plain
// strings, as from, conversation and channelData usually are) and of every shape that must send
// them to the general way: escapes, other values, whitespace, cuts and malformed input.
func fastPathInputs() []string {
	ins := []string{
		`{}`, `{ }`, `{"id":"bot","name":"Bot","role":"bot"}`, `{"id":"conv-1"}`, `{"id":"u-user","role":"user"}`,
		`{"id":"x","role":"bot","id":"y"}`, `{"role":"us\u0065r","id":"a"}`, `{"\u0069d":"a","role":"bot"}`,
		`{"id":1,"role":"bot"}`, `{"id":"a","role":null}`, `{"id":{"a":"}"},"role":"bot"}`, `{"id":"a" ,"role":"bot"}`,
		`{"id": "a"}`, `{"id":"a","x":[1,{"b":"c"}],"role":"bot"}`, `{"id":"a",}`, `{"id":"a"`, `{"id":"a"}}`,
		`{"id":"a\"}"}`, `{"id":"é","role":"bot"}`, "{\"id\":\"a\x01\"}", `{"a":"b","c":tru"e"}`, `{"a":1"}`,
		`{"streamType":"streaming","streamId":"s-1","streamSequence":2}`, `{"streamSequence":1,"streamType":"streaming"}`,
		`{"clientActivityID":"c-1"}`, `{"webchat:sequence-id":12,"postBack":true,"messageBack":{"displayText":""}}`,
		`{"streamType":"final","streamId":"s-1","streamId":"s-2"}`, `{"streamId":"s"` + "\t" + `,"streamType":"final"}`,
		`{"@id":"_:g-1","@type":"HowTo"}`, `{"@id":"_:g-1","@type":{"x":"]"}}`, `[1,"]"]`, `"s"`, `12`, `null`, `{`, ``,
	}
	var out []string
	for _, in := range ins {
		out = append(out, in, in+`,"z":"w"}`, ` `+in, strings.ReplaceAll(in, `":"`, `": "`))
		for n := 0; n < len(in); n++ {
			out = append(out, in[:n])
		}
	}
	return out
}

// TestSkipValueFastPaths: skipValue and skipValueStrict end where jsonscan's SkipValue and
// SkipValueStrict end, with the same errors, from every index.
func TestSkipValueFastPaths(t *testing.T) {
	var run [4]jsonscan.Span
	for _, in := range fastPathInputs() {
		d := []byte(in)
		for i := 0; i <= len(d); i++ {
			end, err := skipValue(d, i, run[:])
			wend, werr := jsonscan.SkipValue(d, i)
			if end != wend || (err == nil) != (werr == nil) {
				t.Fatalf("skipValue(%q, %d) = %d, %v; SkipValue %d, %v", d, i, end, err, wend, werr)
			}
			end, err = skipValueStrict(d, i, run[:])
			wend, werr = jsonscan.SkipValueStrict(d, i)
			if end != wend || (err == nil) != (werr == nil) {
				t.Fatalf("skipValueStrict(%q, %d) = %d, %v; SkipValueStrict %d, %v", d, i, end, err, wend, werr)
			}
		}
	}
}

// TestScanFromFastPath: scanFrom, which reads a from of plain strings in one run, reads what
// fromMembers, the general way, reads.
func TestScanFromFastPath(t *testing.T) {
	for _, in := range fastPathInputs() {
		d := []byte(`{"from":` + in)
		i := len(`{"from":`)
		var id, wid []byte
		var role, wrole string
		end, ok, err := scanFrom(d, i, &id, &role)
		wend, wok, werr := fromMembers(d, i, &wid, &wrole)
		if end != wend || ok != wok || (err == nil) != (werr == nil) || string(id) != string(wid) || role != wrole {
			t.Fatalf("scanFrom(%q) = %d, %v, %v, %q, %q; general way %d, %v, %v, %q, %q",
				in, end, ok, err, id, role, wend, wok, werr, wid, wrole)
		}
	}
}

// TestScanChannelDataMatchesGeneralWay: scanChannelData reads what entering the object, or else
// skipping it and reading it member by member, reads.
func TestScanChannelDataMatchesGeneralWay(t *testing.T) {
	for _, in := range fastPathInputs() {
		d := []byte(`{"channelData":` + in)
		i := len(`{"channelData":`)
		var got channelData
		end, err := scanChannelData(d, i, &got)
		var ref channelData
		rend, rerr := enterObject(d, i, ref.set)
		if rerr == nil {
			ref.raw = d[i:rend]
		} else {
			ref = channelData{}
			if rend, rerr = jsonscan.SkipValue(d, i); rerr == nil && jsonscan.Members(d[i:rend], ref.set) == nil {
				ref.raw = d[i:rend]
			}
		}
		if end != rend || (err == nil) != (rerr == nil) || (err == nil && !sameChannelData(&got, &ref)) {
			t.Fatalf("scanChannelData(%q) = %d, %v, %+v; general way %d, %v, %+v", in, end, err, got, rend, rerr, ref)
		}
	}
}

func sameChannelData(a, b *channelData) bool {
	eq := func(x, y json.RawMessage) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }
	return eq(a.raw, b.raw) && eq(a.seqID, b.seqID) && eq(a.cid, b.cid) && eq(a.stream.StreamID, b.stream.StreamID) &&
		eq(a.stream.StreamSequence, b.stream.StreamSequence) && eq(a.entityPosition, b.entityPosition) &&
		eq(a.entityPartOf, b.entityPartOf) && eq(a.postBack, b.postBack) && eq(a.messageBack, b.messageBack) &&
		eq(a.stream.StreamType, b.stream.StreamType)
}

// TestDecodeRecordReusedArenas decodes a log's activities one after another with one
// decodeArenas, as the replay does, and each again with fresh ones: the scratch the decoder keeps
// across activities (channelData and act) must not show through.
func TestDecodeRecordReusedArenas(t *testing.T) {
	var raws [][]byte
	for _, s := range decodeSeeds {
		raws = append(raws, []byte(s))
	}
	for _, s := range []string{
		`{"type":"typing","id":"a","text":"x","channelData":{"streamType":"streaming","streamId":"q","streamSequence":1},"channelData":{"streamType":"streaming","streamSequence":2,"other":1}}`,
		`{"type":"typing","id":"b","text":"y","channelData":{"streamType":"streaming","streamSequence":3}}`,
		`{"type":"message","id":"c","channelData":{"streamType":"final","streamId":"q"}}`,
		`{"type":"typing","id":"d","channelData":{"streamType":"informative","streamId":"q","streamSequence":4}}`,
		`{"type":"message","id":"e","text":"t\u0065xt","channelData":{"streamType":"final","streamId":"q"}}`,
	} {
		raws = append(raws, []byte(s))
	}
	for seed := uint64(1); seed <= 4; seed++ {
		for _, ev := range randomLog(seed, 300, seed%2 == 0) {
			if len(ev.Activity) > 0 {
				raws = append(raws, ev.Activity)
			}
		}
	}
	var shared decodeArenas
	for _, raw := range raws {
		r1, e1 := decodeRecord(raw, "u-user", &shared, false)
		var fresh decodeArenas
		r2, e2 := decodeRecord(raw, "u-user", &fresh, false)
		if (e1 == nil) != (e2 == nil) {
			t.Fatalf("%s: reused arenas %v, fresh %v", raw, e1, e2)
		}
		if e1 != nil {
			continue
		}
		g1, _ := json.Marshal(viewOfRecord(r1))
		g2, _ := json.Marshal(viewOfRecord(r2))
		if !bytes.Equal(g1, g2) {
			t.Fatalf("%s:\nreused %s\n fresh %s", raw, g1, g2)
		}
		if r1.dec.cd.stream.StreamType != nil || r1.mayStreamInfo {
			// The livestream readers see text as encoding/json decodes it.
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) == nil && !hasDuplicateMembers(raw) {
				if want, _ := jsonscan.StringValue(m["text"]); r1.dec.act.Text != want {
					t.Fatalf("%s: act.Text %q, want %q", raw, r1.dec.act.Text, want)
				}
			}
		}
		a1, a2 := &r1.dec.act, &r2.dec.act
		if a1.Type != a2.Type || a1.ID != a2.ID || a1.Text != a2.Text || len(a1.Attachments) != len(a2.Attachments) ||
			len(a1.Entities) != len(a2.Entities) || a1.ChannelData != nil || !sameChannelData(&r1.dec.cd, &r2.dec.cd) {
			t.Fatalf("%s: reused arenas act %+v cd %+v; fresh act %+v cd %+v", raw, *a1, r1.dec.cd, *a2, r2.dec.cd)
		}
	}
}
