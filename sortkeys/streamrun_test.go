package sortkeys

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// streamLog is a log for the cached runs of findBeforeAfter: a few streams with long runs of
// revisions, their sequences mostly rising but also falling, repeated, not numbers or absent,
// between plain messages and user sends that land inside or after the runs, with revisions that
// reuse earlier ids, deletes, and sends fulfilled by typing echoes.
func streamLog(seed uint64, n int) []Event {
	rng := rand.New(rand.NewPCG(seed, 7))
	var events []Event
	var ids []string
	seqs := map[string]int{}
	ms := 0
	stamp := func() any {
		switch k := rng.IntN(10); {
		case k < 3:
			return nil
		case k < 4:
			ms -= rng.IntN(50)
		}
		ms += rng.IntN(3)
		return fmt.Sprintf("2025-01-01T00:%02d:%02d.%03dZ", ms/60000%60, ms/1000%60, ms%1000)
	}
	add := func(op Op, a map[string]any, cid string) {
		if ts := stamp(); ts != nil {
			a["timestamp"] = ts
		}
		raw, _ := json.Marshal(a)
		events = append(events, Event{Op: op, Activity: raw, ClientActivityID: cid})
	}
	newID := func() string { return pickID(rng, &ids, 7, len(events)) }
	var pending []string
	for len(events) < n {
		switch k := rng.IntN(20); {
		case k < 13:
			sid := []string{"s1", "s2", ""}[rng.IntN(3)]
			cd := map[string]any{"streamType": []string{"streaming", "streaming", "streaming", "informative", "final"}[rng.IntN(5)]}
			if sid != "" {
				cd["streamId"] = sid
			}
			seqs[sid]++
			switch r := rng.IntN(20); {
			case r < 14:
				cd["streamSequence"] = seqs[sid]
			case r < 17:
				cd["streamSequence"] = 1 + rng.IntN(seqs[sid])
			case r < 18:
				cd["streamSequence"] = "x"
			case r < 19:
				cd["streamSequence"] = 0.5
			}
			typ := "typing"
			if rng.IntN(10) == 0 {
				typ = "message"
			}
			a := map[string]any{"type": typ, "id": newID(), "from": map[string]any{"id": "bot", "role": "bot"}, "channelData": cd}
			if rng.IntN(20) > 0 {
				a["text"] = "t"
			}
			add(OpIncoming, a, "")
		case k < 16:
			add(OpIncoming, map[string]any{"type": "message", "id": newID(), "text": "m", "from": map[string]any{"id": "bot", "role": "bot"}}, "")
		case k < 17 && len(ids) > 0:
			events = append(events, Event{Op: OpDelete, ActivityID: ids[rng.IntN(len(ids))]})
		case k < 19:
			cid := fmt.Sprint("c", len(events))
			pending = append(pending, cid)
			a := map[string]any{"type": []string{"message", "typing"}[rng.IntN(2)], "text": "u", "from": map[string]any{"id": "u-user", "role": "user"},
				"channelData": map[string]any{"clientActivityID": cid, "streamId": "s1", "streamSequence": 1 + rng.IntN(5)}}
			add(OpPost, a, "")
		case len(pending) > 0:
			i := rng.IntN(len(pending))
			cid := pending[i]
			pending = slices.Delete(pending, i, i+1)
			a := map[string]any{"type": "typing", "id": newID(), "text": "u", "from": map[string]any{"id": "u-user", "role": "user"},
				"channelData": map[string]any{"clientActivityID": cid, "streamId": "s1", "streamSequence": 1 + rng.IntN(9)}}
			add(OpFulfilled, a, cid)
		}
	}
	return events
}

// TestStreamRunsEqualReference replays streamLog with the cached runs and with the literal
// findBeforeAfter.ts walk, and requires the same order after every event.
// Every other seed caches runs of any length, so that short logs reach the cache's upkeep too.
func TestStreamRunsEqualReference(t *testing.T) {
	for _, p := range []Profile{GenA, GenB} {
		for seed := uint64(1); seed <= 150; seed++ {
			opts := Options{Profile: p, UserID: "u-user"}
			fast := New(opts)
			if seed%2 == 0 {
				fast.st.eng.(*genAB).minRun = 1
			}
			agreesWithReference(t, fmt.Sprint(p, " seed ", seed), fast, opts, streamLog(seed, 200+int(seed%5)*100), false, nil)
		}
	}
}

// TestStreamRunGaps covers logs the random ones seldom reach, with every run cached: units with a
// sequence id landing inside a cached run, then a member that asks no question of the run landing
// right after the run's cached length, then a revision that does; a run's head or an inner
// member leaving.
func TestStreamRunGaps(t *testing.T) {
	typing := func(id, streamID, seq, extra string) Event {
		cd := `"streamType":"streaming","streamSequence":` + seq
		if streamID != "" {
			cd += `,"streamId":"` + streamID + `"`
		}
		return in(`{"type":"typing","id":"` + id + `","text":"t","from":{"id":"bot"},"timestamp":"1970-01-01T00:00:01.000Z",` +
			`"channelData":{` + cd + extra + `}}`)
	}
	msg := func(id, seq string) Event {
		return in(`{"type":"message","id":"` + id + `","text":"m","from":{"id":"bot"},"channelData":{"webchat:sequence-id":` + seq + `}}`)
	}
	for _, c := range []struct {
		name   string
		events []Event
	}{
		{"two gaps, then a member after the cached length", []Event{
			typing("s1", "s1", "1", ""), typing("r2", "s1", "2", ""), typing("r3", "s1", "3", ""), typing("r4", "s1", "4", ""),
			msg("x", "1000.0005"), msg("y", "1000.0025"),
			typing("u", "s1", `"x"`, `,"webchat:sequence-id":1000.0022`),
			typing("v", "s1", "10", ""),
		}},
		{"a gap closed by a delete", []Event{
			typing("s1", "s1", "1", ""), typing("r2", "s1", "2", ""), msg("x", "1000.0015"), typing("r3", "s1", "3", ""),
			{Op: OpDelete, ActivityID: "x"}, typing("r4", "s1", "4", ""),
		}},
		{"the head leaves", []Event{
			typing("s1", "s1", "1", ""), typing("r2", "s1", "2", ""), typing("r3", "s1", "3", ""), typing("r4", "s1", "4", ""),
			{Op: OpDelete, ActivityID: "s1"}, typing("r5", "s1", "2.5", ""),
		}},
		{"a member leaves from inside the run", []Event{
			typing("s1", "s1", "1", ""), typing("r2", "s1", "2", ""), typing("r3", "s1", "3", ""),
			typing("r2", "", "1", `,"webchat:sequence-id":5000`), typing("r4", "s1", "4", ""),
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fast := New(Options{Profile: GenA})
			fast.st.eng.(*genAB).minRun = 1
			agreesWithReference(t, c.name, fast, Options{Profile: GenA}, c.events, false, nil)
		})
	}
}

// partLog is a gen-b log for the cached part groupings of insertionIndex: parts of two
// groupings with positions rising, falling, repeated or absent, sequence ids from timestamps
// rising, falling or absent, between plain messages, with updates that move a part to the
// other grouping or drop its position, deletes, and parts sent by the user and fulfilled.
func partLog(seed uint64, n int) []Event {
	rng := rand.New(rand.NewPCG(seed, 11))
	var events []Event
	var ids []string
	ms, pos := 0, 0
	newID := func() string { return pickID(rng, &ids, 8, len(events)) }
	part := func(a map[string]any) {
		group := []string{"_:g1", "_:g2"}[rng.IntN(2)]
		p := any(nil)
		switch k := rng.IntN(10); {
		case k < 6:
			pos++
			p = pos
		case k < 8:
			p = rng.IntN(pos + 2)
		case k < 9:
			p = float64(rng.IntN(pos+2)) + 0.5
		}
		if rng.IntN(4) == 0 {
			cd := map[string]any{"webchat:entity-part-of": group}
			if p != nil {
				cd["webchat:entity-position"] = p
			}
			a["channelData"] = cd
			return
		}
		e := map[string]any{"@context": "https://schema.org", "@id": "", "@type": "Message", "type": "https://schema.org/Message",
			"isPartOf": map[string]any{"@id": group, "@type": "HowTo"}}
		if p != nil {
			e["position"] = p
		}
		a["entities"] = []any{e}
	}
	stamp := func(a map[string]any) {
		switch k := rng.IntN(10); {
		case k < 2:
			return
		case k < 5:
			ms -= rng.IntN(40)
		}
		ms += rng.IntN(3)
		a["timestamp"] = fmt.Sprintf("2025-01-01T00:%02d:%02d.%03dZ", ms/60000%60, ms/1000%60, ms%1000)
	}
	// userPart makes a the user's part, sent under cid.
	userPart := func(a map[string]any, cid string) {
		a["from"] = map[string]any{"id": "u-user", "role": "user"}
		part(a)
		if cd, ok := a["channelData"].(map[string]any); ok {
			cd["clientActivityID"] = cid
		} else {
			a["channelData"] = map[string]any{"clientActivityID": cid}
		}
	}
	var pending []string
	for len(events) < n {
		a := map[string]any{"type": "message", "text": "x", "from": map[string]any{"id": "bot", "role": "bot"}}
		op, cid := OpIncoming, ""
		switch k := rng.IntN(20); {
		case k < 12:
			part(a)
		case k < 16:
		case k < 17 && len(ids) > 0:
			events = append(events, Event{Op: OpDelete, ActivityID: ids[rng.IntN(len(ids))]})
			continue
		case k < 18:
			cid = fmt.Sprint("c", len(events))
			pending = append(pending, cid)
			userPart(a, cid)
			op, cid = OpPost, ""
		case len(pending) > 0:
			i := rng.IntN(len(pending))
			cid = pending[i]
			pending = slices.Delete(pending, i, i+1)
			userPart(a, cid)
			op = OpFulfilled
		default:
			continue
		}
		if op != OpPost {
			a["id"] = newID()
		}
		stamp(a)
		raw, _ := json.Marshal(a)
		events = append(events, Event{Op: op, Activity: raw, ClientActivityID: cid})
	}
	return events
}

// TestPartRunsEqualReference replays partLog with the cached part groupings and with the
// reducer's literal findIndex, and requires the same order after every event.
func TestPartRunsEqualReference(t *testing.T) {
	for seed := uint64(1); seed <= 150; seed++ {
		opts := Options{Profile: GenB, UserID: "u-user"}
		agreesWithReference(t, fmt.Sprint("seed ", seed), New(opts), opts, partLog(seed, 200+int(seed%5)*100), false, nil)
	}
}

// pickID returns one of ids again one time in odds, else a new id made of n, which it adds to ids.
func pickID(rng *rand.Rand, ids *[]string, odds, n int) string {
	if len(*ids) > 0 && rng.IntN(odds) == 0 {
		return (*ids)[rng.IntN(len(*ids))]
	}
	id := fmt.Sprint("a", n)
	*ids = append(*ids, id)
	return id
}

// typingHeadLog is a log for the member orders of findBeforeAfter: plain typing indicators (in
// gen-a all members of one group) delivered, delivered again and deleted in random orders at
// random times, between messages and livestreams' first revisions, which ask for the group's head.
func typingHeadLog(seed uint64, n int) []Event {
	return seededLog(seed, 23, n, func(rng *rand.Rand, i int) Event {
		id, sec := fmt.Sprint("t", rng.IntN(1+i/3)), rng.IntN(400)
		switch k := rng.IntN(10); {
		case k < 4:
			return typingIndicator(id, sec)
		case k < 5:
			return shapeMsg(fmt.Sprint("m", i), sec, "")
		case k < 7:
			return Event{Op: OpDelete, ActivityID: id}
		}
		return sessionRevision(id, id, rng.IntN(4), sec, "")
	})
}

// TestTypingHeadEqualsReference replays typingHeadLog with the member orders (made for groups of
// any size in every other seed) and with the literal findBeforeAfter.ts walk, and requires the
// same order after every event.
func TestTypingHeadEqualsReference(t *testing.T) {
	ordered := 0
	for _, p := range []Profile{GenA, GenB} {
		for seed := uint64(1); seed <= 40; seed++ {
			opts := Options{Profile: p, UserID: "u-user"}
			fast := New(opts)
			g := fast.st.eng.(*genAB)
			if seed%2 == 0 {
				g.minRun = 1
			}
			agreesWithReference(t, fmt.Sprint(p, " seed ", seed), fast, opts, typingHeadLog(seed, 300+int(seed)*20), false,
				func(int, Event) { ordered += len(g.orders) })
		}
	}
	if ordered == 0 {
		t.Fatal("no member order was made")
	}
	t.Logf("%d member orders seen", ordered)
}
