package sortkeys

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"
)

// logGen writes random activity logs that mix plain messages, updates, livestreams, HowTo
// groupings (some with livestream parts), sends with echoes before or after the acknowledgement,
// restored user messages and, when wild, missing or unparseable timestamps, sequence ids,
// deletes and late revisions after a final.
type logGen struct {
	rng  *rand.Rand
	wild bool
	// deletes, when set, makes one event in five a delete of an id delivered so far (any kind:
	// livestream revisions, HowTo parts, echoes), often a recent one; ids keeps them.
	deletes bool
	ids     []string
	clock   int64 // ms since 2025-01-01
	serial  int
	bots    []string
	open    []*genSession
	groups  []string
	sends   []*genSend
	events  []Event

	// recent, when set, makes updates, livestream revisions, HowTo parts, echoes and a wild
	// log's deletes of bot messages pick among the recent last candidates of their kind instead
	// of among all of them, as a conversation whose bot revises what it said lately would;
	// unset, the pick is uniform over the whole history, so the state an event touches spreads
	// over the log as it grows.
	recent int
}

type genSession struct {
	sid     string
	seq     int
	group   string
	pos     int
	entered bool
}

type genSend struct {
	cid    string
	echo   json.RawMessage
	echoed bool
}

var genEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func newLogGen(seed uint64, wild bool) *logGen {
	return &logGen{rng: rand.New(rand.NewPCG(seed, seed^0x5DEECE66D)), wild: wild}
}

// pick chooses one of n candidates, oldest first (see recent).
func (g *logGen) pick(n int) int {
	if g.recent > 0 && n > g.recent {
		return n - g.recent + g.rng.IntN(g.recent)
	}
	return g.rng.IntN(n)
}

func (g *logGen) id(prefix string) string {
	g.serial++
	return fmt.Sprintf("%s-%06d", prefix, g.serial)
}

func (g *logGen) stamp(ms int64) string {
	return genEpoch.Add(time.Duration(ms) * time.Millisecond).Format("2006-01-02T15:04:05.000Z07:00")
}

// timing returns the timestamp (nil: none) and sequence id (nil: none) of a new bot activity.
func (g *logGen) timing() (ts any, seq any) {
	g.clock += int64(g.rng.IntN(1500))
	at := g.clock
	if g.wild {
		switch g.rng.IntN(40) {
		case 0:
			return nil, nil
		case 1:
			return []string{"", "garbage", "2025-02-30T25:61:00Z", "not-a-date"}[g.rng.IntN(4)], nil
		case 2:
			return g.stamp(at)[:19] + "Z", nil
		case 3:
			at -= int64(g.rng.IntN(20000))
		case 4:
			return g.stamp(at), float64(g.rng.IntN(50))
		case 5:
			return g.stamp(at), "12"
		}
	}
	return g.stamp(at), nil
}

func (g *logGen) emit(op Op, act map[string]any, cid string) json.RawMessage {
	var raw json.RawMessage
	if act != nil {
		b, err := json.Marshal(act)
		if err != nil {
			panic(err)
		}
		raw = b
	}
	g.events = append(g.events, Event{Op: op, Activity: raw, ClientActivityID: cid})
	if id, ok := act["id"].(string); ok && g.deletes {
		g.ids = append(g.ids, id)
	}
	return raw
}

func (g *logGen) bot(typ, id, text string) map[string]any {
	a := map[string]any{"type": typ, "id": id, "from": map[string]any{"id": "bot", "name": "Bot", "role": "bot"},
		"conversation": map[string]any{"id": "conv-1"}, "channelId": "directline"}
	if text != "" {
		a["text"] = text
	}
	ts, seq := g.timing()
	if ts != nil {
		a["timestamp"] = ts
	}
	if seq != nil {
		a["channelData"] = map[string]any{"webchat:sequence-id": seq}
	}
	return a
}

func setCD(a map[string]any, k string, v any) {
	cd, _ := a["channelData"].(map[string]any)
	if cd == nil {
		cd = map[string]any{}
		a["channelData"] = cd
	}
	cd[k] = v
}

func partOf(a map[string]any, group string, pos int) {
	e := map[string]any{"@context": "https://schema.org", "@id": "", "@type": "Message",
		"type": "https://schema.org/Message", "isPartOf": map[string]any{"@id": group, "@type": "HowTo"}}
	if pos > 0 {
		e["position"] = pos
	}
	a["entities"] = []any{e}
}

// step appends one or two events.
func (g *logGen) step() {
	if g.deletes && len(g.ids) > 0 && g.rng.IntN(5) == 0 {
		from := 0
		if g.rng.IntN(2) == 0 {
			from = max(0, len(g.ids)-20)
		}
		g.events = append(g.events, Event{Op: OpDelete, ActivityID: g.ids[from+g.rng.IntN(len(g.ids)-from)]})
		return
	}
	n := g.rng.IntN(100)
	switch {
	case n < 35: // plain bot message
		id := g.id("a")
		g.bots = append(g.bots, id)
		g.emit(OpIncoming, g.bot("message", id, "hello "+id), "")
	case n < 40 && len(g.bots) > 0: // update
		id := g.bots[g.pick(len(g.bots))]
		g.emit(OpIncoming, g.bot("message", id, "updated "+id), "")
	case n < 43:
		g.emit(OpIncoming, g.bot([]string{"typing", "event", "conversationUpdate"}[g.rng.IntN(3)], g.id("t"), ""), "")
	case n < 50: // new livestream, sometimes a HowTo part
		s := &genSession{sid: g.id("s"), seq: 1}
		if g.rng.IntN(3) == 0 && len(g.groups) > 0 {
			s.group, s.pos = g.groups[g.pick(len(g.groups))], g.rng.IntN(4)
		}
		g.open = append(g.open, s)
		a := g.bot("typing", s.sid, "")
		if g.rng.IntN(4) > 0 {
			a["text"] = "part 1"
		}
		setCD(a, "streamSequence", 1)
		setCD(a, "streamType", "streaming")
		if s.group != "" {
			partOf(a, s.group, s.pos)
		}
		g.emit(OpIncoming, a, "")
	case n < 68 && len(g.open) > 0: // livestream revision
		i := g.pick(len(g.open))
		s := g.open[i]
		final := g.rng.IntN(4) == 0
		typ := "typing"
		if final && g.rng.IntN(5) > 0 {
			typ = "message"
		}
		a := g.bot(typ, g.id("r"), "")
		setCD(a, "streamId", s.sid)
		s.seq++
		seq := s.seq
		if g.wild && g.rng.IntN(6) == 0 {
			seq = 1 + g.rng.IntN(s.seq)
		}
		switch {
		case final:
			setCD(a, "streamType", "final")
			if typ == "message" {
				a["text"] = "final"
			}
			if !g.wild || g.rng.IntN(3) > 0 {
				g.open = append(g.open[:i], g.open[i+1:]...)
			}
		case g.rng.IntN(6) == 0:
			setCD(a, "streamType", "informative")
			setCD(a, "streamSequence", seq)
			a["text"] = "searching"
		default:
			setCD(a, "streamType", "streaming")
			setCD(a, "streamSequence", seq)
			if g.rng.IntN(8) > 0 {
				a["text"] = fmt.Sprintf("part %d", seq)
			}
		}
		if s.group != "" {
			partOf(a, s.group, s.pos)
		}
		g.emit(OpIncoming, a, "")
	case n < 78: // HowTo part
		if len(g.groups) == 0 || g.rng.IntN(4) == 0 {
			g.groups = append(g.groups, "_:"+g.id("g"))
		}
		id := g.id("p")
		g.bots = append(g.bots, id)
		a := g.bot("message", id, "step "+id)
		partOf(a, g.groups[g.pick(len(g.groups))], g.rng.IntN(5))
		g.emit(OpIncoming, a, "")
	case n < 88: // send
		cid := g.id("c")
		local := g.clock - int64(g.rng.IntN(3000)) + 1000
		act := map[string]any{"type": "message", "text": "user says " + cid, "attachments": []any{},
			"from": map[string]any{"id": "u-user", "name": "User", "role": "user"}, "channelId": "webchat",
			"localTimestamp": g.stamp(local), "localTimezone": "UTC", "locale": "en-US",
			"channelData": map[string]any{"clientActivityID": cid}}
		g.emit(OpPost, act, "")
		echo := map[string]any{}
		for k, v := range act {
			echo[k] = v
		}
		echo["id"] = g.id("u")
		if g.deletes {
			g.ids = append(g.ids, echo["id"].(string))
		}
		ts, seq := g.timing()
		if ts != nil {
			echo["timestamp"] = ts
		}
		cd := map[string]any{"clientActivityID": cid}
		if seq != nil {
			cd["webchat:sequence-id"] = seq
		}
		echo["channelData"] = cd
		raw, _ := json.Marshal(echo)
		g.sends = append(g.sends, &genSend{cid: cid, echo: raw})
	case n < 96 && len(g.sends) > 0: // echo and/or acknowledgement
		i := g.pick(len(g.sends))
		s := g.sends[i]
		if !s.echoed && g.rng.IntN(3) == 0 {
			s.echoed = true
			g.events = append(g.events, Event{Op: OpIncoming, Activity: s.echo})
			return
		}
		g.sends = append(g.sends[:i], g.sends[i+1:]...)
		g.events = append(g.events, Event{Op: OpFulfilled, ClientActivityID: s.cid, Activity: s.echo})
	case n < 98: // restored user message
		id := g.id("h")
		a := g.bot("message", id, "restored")
		a["from"] = map[string]any{"id": "u-user"}
		a["localTimestamp"] = g.stamp(g.clock - int64(g.rng.IntN(60000)))
		setCD(a, "clientActivityID", g.id("rc"))
		g.emit(OpIncoming, a, "")
	default:
		if g.wild && len(g.bots) > 0 {
			g.events = append(g.events, Event{Op: OpDelete, ActivityID: g.bots[g.pick(len(g.bots))]})
			return
		}
		id := g.id("a")
		g.emit(OpIncoming, g.bot("message", id, "hi"), "")
	}
}

// deleteLog is randomLog, wild, with many more deletes.
func deleteLog(seed uint64, n int) []Event {
	g := newLogGen(seed, true)
	g.deletes = true
	for len(g.events) < n {
		g.step()
	}
	return g.events
}

// randomLog returns a log of at least n events.
func randomLog(seed uint64, n int, wild bool) []Event { return recentLog(seed, n, wild, 0) }

// recentLog is randomLog whose references to earlier activities pick among the recent last
// candidates (logGen.recent; 0: among all).
func recentLog(seed uint64, n int, wild bool, recent int) []Event {
	g := newLogGen(seed, wild)
	g.recent = recent
	for len(g.events) < n {
		g.step()
	}
	return g.events
}
