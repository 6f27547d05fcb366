package sortkeys

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fieldStep is one event of a field case with, optionally, the order and screen expected after it.
type fieldStep struct {
	ev     Event
	order  []string
	screen []string
}

func in(js string) Event   { return Event{Op: OpIncoming, Activity: json.RawMessage(js)} }
func post(js string) Event { return Event{Op: OpPost, Activity: json.RawMessage(js)} }
func names(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

// bot builds a bot message; extra is spliced into the object (leading comma included).
func botMsg(id, extra string) string {
	return fmt.Sprintf(`{"type":"message","id":%q,"from":{"id":"bot","role":"bot"},"text":"text of %s"%s}`, id, id, extra)
}

const groupG1 = `,"entities":[{"type":"https://schema.org/Message","@type":"Message","@context":"https://schema.org","@id":"","isPartOf":{"@id":"_:g1","@type":"HowTo"}%s}]`

func runField(t *testing.T, profile Profile, steps []fieldStep) {
	t.Helper()
	r := New(Options{Profile: profile, UserID: "u-user", ScreenHistory: true})
	for i, s := range steps {
		if err := r.Apply(s.ev); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if s.order != nil && !slices.Equal(r.Names(), s.order) {
			t.Fatalf("step %d order: %s", i, firstDiff(r.Names(), s.order))
		}
		if s.screen != nil && !slices.Equal(bubbleNames(r.Screen()), s.screen) {
			t.Fatalf("step %d screen: %s", i, firstDiff(bubbleNames(r.Screen()), s.screen))
		}
	}
}

// TestFieldCases turns the sortkeys scenarios of the field cases (CASES.md) into replays against
// the current algorithm (gen-c) with the display order each case expects.
func TestFieldCases(t *testing.T) {
	r01 := func(x string) []fieldStep {
		return []fieldStep{
			{ev: in(`{"id":"u0","type":"message","text":"u0","from":{"id":"u-user","role":"user"},"timestamp":"2024-05-01T10:00:05.000Z","localTimestamp":"` + x + `","channelData":{"clientActivityID":"c0","webchat:sequence-id":10}}`)},
			{ev: in(`{"id":"b0","type":"message","text":"b0","from":{"id":"bot","role":"bot"},"timestamp":"2024-05-01T10:00:05.500Z","channelData":{"webchat:sequence-id":11}}`)},
			{ev: post(`{"type":"message","text":"c1","from":{"id":"u-user","role":"user"},"localTimestamp":"2024-05-01T10:00:02.000Z","channelData":{"clientActivityID":"c1"}}`)},
			{ev: Event{Op: OpFulfilled, ClientActivityID: "c1", Activity: json.RawMessage(`{"id":"u1","type":"message","text":"c1","from":{"id":"u-user","role":"user"},"timestamp":"2024-05-01T10:00:07.100Z","localTimestamp":"2024-05-01T10:00:02.000Z","channelData":{"clientActivityID":"c1","webchat:sequence-id":12}}`)},
				order: names("u0,b0,u1"), screen: names("u0,b0,u1")},
		}
	}
	r01i, r01ii := r01("2024-05-01T10:00:00.000Z"), r01("2024-05-01T10:00:05.000Z")
	r01i[2].order, r01ii[2].order = names("u0,b0,c1"), names("c1,u0,b0")

	x := func(id string, seq string) Event {
		return in(botMsg(id, `,"timestamp":"2024-05-01T10:00:00Z"`+seq))
	}
	seqCD := func(n int) string { return fmt.Sprintf(`,"channelData":{"webchat:sequence-id":%d}`, n) }
	u1 := in(`{"id":"U1","type":"message","text":"U1","from":{"id":"u-user","role":"user"},"timestamp":"2024-05-01T10:00:01.000Z","channelData":{"webchat:sequence-id":1}}`)
	u1noSeq := in(`{"id":"U1","type":"message","text":"U1","from":{"id":"u-user","role":"user"},"timestamp":"2024-05-01T10:00:01.000Z"}`)

	r13 := func(s2stream string) []fieldStep {
		return []fieldStep{
			{ev: in(`{"id":"u1","type":"message","text":"u1","from":{"id":"u-user","role":"user"},"channelData":{"webchat:sequence-id":1}}`)},
			{ev: in(`{"id":"s1a","type":"typing","text":"A","from":{"id":"bot"},"channelData":{"webchat:sequence-id":2,"streamType":"streaming","streamSequence":1}}`)},
			{ev: in(`{"id":"s1b","type":"typing","text":"A b","from":{"id":"bot"},"channelData":{"webchat:sequence-id":3,"streamId":"s1a","streamType":"streaming","streamSequence":2}}`)},
			{ev: in(`{"id":"s1f","type":"message","text":"A b c","from":{"id":"bot"},"channelData":{"webchat:sequence-id":4,"streamId":"s1a","streamType":"final"}}`)},
			{ev: in(`{"id":"u2","type":"message","text":"u2","from":{"id":"u-user","role":"user"},"channelData":{"webchat:sequence-id":5}}`)},
			{ev: in(`{"id":"s2a","type":"typing","text":"X","from":{"id":"bot"},"channelData":{"webchat:sequence-id":6,` + s2stream + `"streamType":"streaming","streamSequence":1}}`)},
			{ev: in(`{"id":"s2f","type":"message","text":"X y","from":{"id":"bot"},"channelData":{"webchat:sequence-id":7,"streamId":"` + map[bool]string{true: "s1a", false: "s2a"}[s2stream != ""] + `","streamType":"final"}}`)},
		}
	}
	r13a := r13("")
	r13a[6].order, r13a[6].screen = names("u1,s1a,s1b,s1f,u2,s2a,s2f"), names("u1,s1f,u2,s2f")
	r13v1 := r13(`"streamId":"s1a",`)
	r13v1[6].order, r13v1[6].screen = names("u1,s1a,s1b,s1f,u2"), names("u1,s1f,u2")

	ls := func(id, stream string, seq int, ts string) string {
		sid := ""
		if stream != "" {
			sid = `"streamId":"` + stream + `",`
		}
		return fmt.Sprintf(`{"id":%q,"type":"typing","text":"chunk %s","from":{"id":"bot"},"timestamp":%q,"channelData":{%s"streamType":"streaming","streamSequence":%d}}`, id, id, ts, sid, seq)
	}
	r13v2 := []fieldStep{
		{ev: in(botMsg("m1", `,"timestamp":"2025-01-01T00:00:10.000Z"`))},
		{ev: in(ls("s1", "", 1, "2025-01-01T00:00:20.000Z")), order: names("m1,s1")},
		{ev: in(ls("s2", "s1", 2, "2025-01-01T00:00:05.000Z")), order: names("m1,s1,s2")},
		{ev: in(`{"id":"s3","type":"message","text":"done","from":{"id":"bot"},"timestamp":"2025-01-01T00:00:05.000Z","channelData":{"streamId":"s1","streamType":"final"}}`),
			order: names("s1,s2,s3,m1"), screen: names("s3,m1")},
	}

	part := func(id, ts, pos, extra string) Event {
		p := ""
		if pos != "" {
			p = `,"position":` + pos
		}
		return in(fmt.Sprintf(`{"id":%q,"type":%q,"text":"part %s","from":{"id":"bot"},"timestamp":%q%s`+groupG1+`}`,
			id, map[bool]string{true: "typing", false: "message"}[extra != ""], id, ts, extra, p))
	}

	cases := []struct {
		name  string
		steps []fieldStep
	}{
		{"R01-A-i preserved localTimestamp", r01i},
		{"R01-A-ii overwritten localTimestamp", r01ii},
		{"R02-B sequence ids", []fieldStep{{ev: x("x3", seqCD(3))}, {ev: x("x1", seqCD(1))}, {ev: x("x2", seqCD(2)), order: names("x1,x2,x3")}}},
		{"R02-B same second without sequence ids", []fieldStep{{ev: x("x3", "")}, {ev: x("x1", "")}, {ev: x("x2", ""), order: names("x3,x1,x2")}}},
		{"R03-B sequence id beats skewed timestamps", []fieldStep{
			{ev: u1},
			{ev: in(botMsg("B2", `,"timestamp":"2024-05-01T10:00:01.100Z"`+seqCD(3)))},
			{ev: in(botMsg("B1", `,"timestamp":"2024-05-01T10:00:01.300Z"`+seqCD(2))), order: names("U1,B1,B2")}}},
		{"R03-B skewed timestamps without sequence ids", []fieldStep{
			{ev: u1noSeq},
			{ev: in(botMsg("B2", `,"timestamp":"2024-05-01T10:00:01.100Z"`))},
			{ev: in(botMsg("B1", `,"timestamp":"2024-05-01T10:00:01.300Z"`)), order: names("U1,B2,B1")}}},
		{"R05-A case 1 missing keys stay where they landed", []fieldStep{
			{ev: in(botMsg("k1", ""))},
			{ev: in(botMsg("k2", `,"timestamp":"2025-01-01T00:00:00.000Z"`))},
			{ev: in(botMsg("k3", `,"timestamp":"2025-01-01T00:00:00.002Z"`))},
			{ev: in(botMsg("k4", ""))},
			{ev: in(botMsg("k5", `,"timestamp":"2025-01-01T00:00:00.001Z"`)), order: names("k1,k2,k5,k3,k4")}}},
		{"R05-A case 2 NaN key without localTimestamp fallback", []fieldStep{
			{ev: in(botMsg("m0", `,"timestamp":"2025-01-01T00:00:00.010Z"`))},
			{ev: in(`{"id":"m1","type":"message","text":"m1","from":{"id":"u-user"},"timestamp":"garbage","localTimestamp":"2025-01-01T00:00:00.005Z"}`),
				order: names("m0,m1")}}},
		{"R05-A case 3 sequence id 0 counts, a string does not", []fieldStep{
			{ev: in(botMsg("t5", `,"timestamp":"2025-01-01T00:00:05.000Z"`))},
			{ev: in(botMsg("zero", `,"timestamp":"2025-01-01T00:00:09.000Z","channelData":{"webchat:sequence-id":0}`)), order: names("zero,t5")},
			{ev: in(botMsg("str", `,"timestamp":"2025-01-01T00:00:01.000Z","channelData":{"webchat:sequence-id":"12"}`)), order: names("zero,str,t5")}}},
		{"R12-B update keeps its place", []fieldStep{
			{ev: in(botMsg("a1", seqCD(5)))},
			{ev: in(`{"id":"U","type":"message","text":"U","from":{"id":"u-user","role":"user"},"channelData":{"webchat:sequence-id":6}}`)},
			{ev: in(`{"id":"a1","type":"message","text":"v2","from":{"id":"bot"},"channelData":{"webchat:sequence-id":5}}`), order: names("a1,U"), screen: names("a1,U")}}},
		{"R12-B update with a new key moves", []fieldStep{
			{ev: in(botMsg("a1", seqCD(5)))},
			{ev: in(`{"id":"U","type":"message","text":"U","from":{"id":"u-user","role":"user"},"channelData":{"webchat:sequence-id":6}}`)},
			{ev: in(`{"id":"a1","type":"message","text":"v2","from":{"id":"bot"},"channelData":{"webchat:sequence-id":7}}`), order: names("U,a1"), screen: names("U,a1")}}},
		{"R13-A two livestreams", r13a},
		{"R13-A variant 1 sealed session drops stream 2", r13v1},
		{"R13-A variant 2 interim does not move, final does", r13v2},
		{"R16 case 1 late part joins its group", []fieldStep{
			{ev: part("q1", "2025-01-01T00:00:00.000Z", "", "")},
			{ev: in(botMsg("r", `,"timestamp":"2025-01-01T00:00:00.002Z"`))},
			{ev: part("q3", "2025-01-01T00:00:00.001Z", "", ""), order: names("q1,q3,r")}}},
		// With the late part after r, only the grouping keeps q1 with q3: the group sorts by its
		// newest part, past r.
		{"R16 case 1 late part after another activity pulls its group along", []fieldStep{
			{ev: part("q1", "2025-01-01T00:00:00.000Z", "", "")},
			{ev: in(botMsg("r", `,"timestamp":"2025-01-01T00:00:00.002Z"`))},
			{ev: part("q3", "2025-01-01T00:00:00.003Z", "", ""), order: names("r,q1,q3")}}},
		{"R16 case 2 group key is the max of its parts", []fieldStep{
			{ev: part("p1", "2025-01-01T00:00:00.000Z", "", `,"channelData":{"streamType":"streaming","streamSequence":1}`)},
			{ev: part("p2", "2025-01-01T00:00:00.010Z", "", `,"channelData":{"streamId":"p1","streamType":"streaming","streamSequence":2}`)},
			{ev: part("p3", "2025-01-01T00:00:00.020Z", "", "")},
			{ev: in(botMsg("h", `,"timestamp":"2025-01-01T00:00:00.015Z"`)), order: names("h,p1,p2,p3"), screen: names("h,p2,p3")}}},
		{"R16 case 3 positions inside the group", []fieldStep{
			{ev: part("two", "2025-01-01T00:00:00.000Z", "2", "")},
			{ev: part("one", "2025-01-01T00:00:00.001Z", "1", ""), order: names("one,two")}}},
		{"R24 typing without stream fields takes no bubble", []fieldStep{
			{ev: in(`{"id":"t1","type":"typing","from":{"id":"bot"},"timestamp":"2025-01-01T00:00:00.000Z"}`)},
			{ev: in(botMsg("M", `,"timestamp":"2025-01-01T00:00:01.000Z"`)), order: names("t1,M"), screen: names("M")}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runField(t, GenC, c.steps) })
	}
}
