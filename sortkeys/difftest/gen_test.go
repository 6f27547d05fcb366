package difftest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/directline-go/directline/sortkeys"
)

// userID is the id Web Chat is started with in every generated log.
const userID = "u-user"

// genLog is one generated activity log in the conformance-vector shape.
type genLog struct {
	Name   string           `json:"name"`
	UserID string           `json:"userID"`
	Events []sortkeys.Event `json:"events"`
}

// obj is an activity (or a part of one) under construction; encoding/json writes its keys
// sorted, which keeps generated logs byte-stable per seed.
type obj = map[string]any

// keyMode says which sort keys the simulated service stamps on the activities it delivers.
type keyMode int

const (
	keysSequenceID keyMode = iota // integer webchat:sequence-id on every server activity
	keysTimestamp                 // timestamps only
	keysMixed                     // a sequence id on some activities
)

// session is a livestream the simulated bot is producing.
type session struct {
	id       string // the first revision's id, which later revisions name as streamId
	entity   bool   // metadata in a streaminfo entity instead of channelData
	next     int    // next streamSequence
	held     []obj  // revisions generated but not delivered yet (delivered out of order)
	final    bool   // a final activity was delivered
	partOf   string // HowTo grouping the session belongs to, if any
	revision []string
}

// send is an outgoing activity the user posted.
type send struct {
	clientActivityID string
	echo             obj  // the service's echo, once it exists
	echoed           bool // the echo was delivered as an incoming activity
	acked            bool // the send was fulfilled
}

// generator produces one log from a seed. The mix follows the conformance README's random-NN
// logs: plain messages and updates, livestreams in channelData and entity form (out of order,
// informative, contentless, regrets, late revisions), HowTo parts with and without positions,
// sends with echoes before or after the acknowledgement or never acknowledged, restored user
// messages, missing, null and unparseable timestamps, null fields, and sequence ids.
type generator struct {
	rng      *rand.Rand
	keys     keyMode
	serverMs int64 // the service's clock, ms since the Unix epoch
	skewMs   int64 // how far the user's clock is ahead of the service's
	seq      int   // last sequence id the service stamped
	counter  int
	posts    int

	events    []sortkeys.Event
	delivered []obj // every incoming revision so far, for updates and re-deliveries
	sessions  []*session
	groupings []string
	sends     []*send
}

var base = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// unparseable are timestamp strings that JavaScript's Date parses to NaN.
var unparseable = []string{"", "garbage", "not-a-date", "2025-02-30T25:61:00Z", "2025-13-45T99:99:99Z"}

func generate(seed uint64, events int) genLog {
	g := &generator{
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		serverMs: base.UnixMilli(),
		seq:      1000,
	}
	g.keys = keyMode(g.rng.IntN(3))
	g.skewMs = int64(g.rng.IntN(7)-3) * 700
	for len(g.events) < events {
		g.step()
	}
	return genLog{Name: fmt.Sprintf("seed-%d", seed), UserID: userID, Events: g.events}
}

func (g *generator) chance(percent int) bool { return g.rng.IntN(100) < percent }

func (g *generator) newID(prefix string) string {
	g.counter++
	return prefix + strconv.Itoa(g.counter)
}

func (g *generator) tick() { g.serverMs += int64(1 + g.rng.IntN(600)) }

func isoMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// serverStamp stamps the service's keys on a delivered activity: a timestamp (sometimes
// missing, null, second-resolution, with an offset, skewed or unparseable) and, depending on
// the key mode, a sequence id (rarely 0, negative, fractional or a string).
func (g *generator) serverStamp(a obj) {
	g.tick()
	ms := g.serverMs
	switch r := g.rng.IntN(100); {
	case r < 4:
		// no timestamp
	case r < 6:
		a["timestamp"] = nil
	case r < 10:
		a["timestamp"] = unparseable[g.rng.IntN(len(unparseable))]
	case r < 14:
		a["timestamp"] = time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05Z")
	case r < 18:
		a["timestamp"] = time.UnixMilli(ms).In(time.FixedZone("", 9*3600)).Format("2006-01-02T15:04:05.000-07:00")
	case r < 24:
		a["timestamp"] = isoMillis(ms - int64(g.rng.IntN(3000)))
	default:
		a["timestamp"] = isoMillis(ms)
	}

	g.seq += 1 + g.rng.IntN(3)
	stamp := g.keys == keysSequenceID || (g.keys == keysMixed && g.chance(50))
	if !stamp {
		return
	}
	cd := channelData(a)
	switch r := g.rng.IntN(100); {
	case r < 2:
		cd["webchat:sequence-id"] = 0
	case r < 4:
		cd["webchat:sequence-id"] = -g.rng.IntN(50)
	case r < 6:
		cd["webchat:sequence-id"] = float64(g.seq) + 0.5
	case r < 8:
		cd["webchat:sequence-id"] = strconv.Itoa(g.seq)
	default:
		cd["webchat:sequence-id"] = g.seq
	}
}

func channelData(a obj) obj {
	cd, ok := a["channelData"].(obj)
	if !ok {
		cd = obj{}
		a["channelData"] = cd
	}
	return cd
}

func (g *generator) botFrom() obj {
	switch r := g.rng.IntN(100); {
	case r < 5:
		return obj{"id": "bot", "name": "Bot"} // role inferred
	case r < 25:
		return obj{"id": "helper-bot", "name": "Helper", "role": "bot"}
	default:
		return obj{"id": "bot", "name": "Bot", "role": "bot"}
	}
}

func (g *generator) emit(ev sortkeys.Event) { g.events = append(g.events, ev) }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func clone(a obj) obj {
	var c obj
	if err := json.Unmarshal(mustJSON(a), &c); err != nil {
		panic(err)
	}
	return c
}

func (g *generator) incoming(a obj) {
	g.delivered = append(g.delivered, a)
	g.emit(sortkeys.Event{Op: sortkeys.OpIncoming, Activity: mustJSON(a)})
}

// step appends one or two events.
func (g *generator) step() {
	switch r := g.rng.IntN(100); {
	case r < 26:
		g.plain()
	case r < 32:
		g.update()
	case r < 36:
		g.typing()
	case r < 54:
		g.livestream()
	case r < 62:
		g.howToPart()
	case r < 70:
		g.post()
	case r < 75:
		g.echo()
	case r < 84:
		g.fulfil()
	case r < 88:
		g.restoredUserMessage()
	case r < 92:
		g.channelActivity()
	case r < 93:
		g.deleteActivity()
	default:
		g.plain()
	}
}

func (g *generator) plain() {
	id := g.newID("m")
	a := obj{"type": "message", "id": id, "from": g.botFrom(), "text": "msg " + id}
	switch r := g.rng.IntN(100); {
	case r < 3:
		a["text"] = nil
		a["attachments"] = []any{obj{"contentType": "image/png", "contentUrl": "https://example.invalid/" + id + ".png"}}
	case r < 5:
		a["entities"] = nil
	case r < 7:
		a["channelData"] = nil
	}
	g.serverStamp(a)
	g.incoming(a)
}

// update re-delivers an earlier activity under its id with new content and possibly new keys.
func (g *generator) update() {
	if len(g.delivered) == 0 {
		g.plain()
		return
	}
	a := clone(g.delivered[g.rng.IntN(len(g.delivered))])
	if a["id"] == nil {
		g.plain()
		return
	}
	a["text"] = fmt.Sprintf("%v (edited)", a["text"])
	switch g.rng.IntN(3) {
	case 0: // same keys
	case 1:
		delete(a, "timestamp")
		if cd, ok := a["channelData"].(obj); ok {
			delete(cd, "webchat:sequence-id")
		}
	default:
		if cd, ok := a["channelData"].(obj); ok {
			delete(cd, "webchat:sequence-id")
		}
		g.serverStamp(a)
	}
	g.incoming(a)
}

func (g *generator) typing() {
	id := g.newID("ty")
	a := obj{"type": "typing", "id": id, "from": g.botFrom()}
	if g.chance(20) {
		a["text"] = "typing with text " + id // not a livestream: no stream fields
	}
	g.serverStamp(a)
	g.incoming(a)
}

// livestream starts a session, continues one (possibly out of order), finalises one, or sends
// a late revision after the final.
func (g *generator) livestream() {
	if g.lateRevision() {
		return
	}
	var open []*session
	for _, s := range g.sessions {
		if !s.final {
			open = append(open, s)
		}
	}
	if len(open) == 0 || (len(open) < 3 && g.chance(25)) {
		g.startSession("")
		return
	}
	s := open[g.rng.IntN(len(open))]
	switch r := g.rng.IntN(100); {
	case r < 15 && len(s.held) > 0:
		g.deliverHeld(s, g.rng.IntN(len(s.held)))
	case r < 30:
		// Generated now, delivered later: the interims arrive out of order.
		s.held = append(s.held, g.revision(s, "streaming"))
		g.incoming(g.stampedRevision(s, "streaming"))
	case r < 80:
		kind := "streaming"
		if g.chance(15) {
			kind = "informative"
		}
		g.incoming(g.stampedRevision(s, kind))
	default:
		g.finalise(s)
	}
}

// lateRevision sometimes delivers a held revision of a session that is already final.
func (g *generator) lateRevision() bool {
	for _, s := range g.sessions {
		if s.final && len(s.held) > 0 && g.chance(30) {
			g.deliverHeld(s, 0)
			return true
		}
	}
	return false
}

func (g *generator) deliverHeld(s *session, i int) {
	a := s.held[i]
	s.held = slices.Delete(s.held, i, i+1)
	g.serverStamp(a)
	g.incoming(a)
}

func (g *generator) startSession(partOf string) {
	s := &session{id: g.newID("s"), entity: g.chance(50), next: 1, partOf: partOf}
	g.sessions = append(g.sessions, s)
	kind := "streaming"
	if g.chance(20) {
		kind = "informative"
	}
	g.incoming(g.stampedRevision(s, kind))
}

func (g *generator) stampedRevision(s *session, kind string) obj {
	a := g.revision(s, kind)
	g.serverStamp(a)
	return a
}

// revision builds the next interim of s (streamType streaming or informative).
func (g *generator) revision(s *session, kind string) obj {
	id := s.id
	if len(s.revision) > 0 {
		id = g.newID("r")
		if g.chance(3) {
			id = s.revision[g.rng.IntN(len(s.revision))] // an id reused inside the session
		}
	}
	s.revision = append(s.revision, id)
	a := obj{"type": "typing", "id": id, "from": g.botFrom()}
	if !g.chance(10) { // contentless revisions have no text
		a["text"] = fmt.Sprintf("%s part %d", s.id, s.next)
	}
	seq := s.next
	s.next++
	if g.chance(3) {
		seq-- // a repeated streamSequence
	}
	meta := obj{"streamSequence": seq, "streamType": kind}
	if id != s.id || len(s.revision) > 1 {
		meta["streamId"] = s.id
	}
	g.attachStreamMeta(a, s, meta)
	return a
}

func (g *generator) attachStreamMeta(a obj, s *session, meta obj) {
	var entities []any
	if s.entity {
		meta["type"] = "streaminfo"
		entities = append(entities, meta)
	} else {
		cd := channelData(a)
		for k, v := range meta {
			cd[k] = v
		}
	}
	if s.partOf != "" {
		entities = append(entities, g.partEntity(s.partOf))
	}
	if entities != nil {
		a["entities"] = entities
	}
}

func (g *generator) finalise(s *session) {
	s.final = true
	a := obj{"type": "message", "id": g.newID("f"), "from": g.botFrom(), "text": s.id + " final"}
	if g.chance(15) {
		a["text"] = "" // a regret: the final carries no content
	}
	g.attachStreamMeta(a, s, obj{"streamId": s.id, "streamType": "final"})
	g.serverStamp(a)
	g.incoming(a)
}

// partEntity is a schema.org Message entity naming a HowTo grouping; the position is a number,
// missing, fractional or (rarely) a string.
func (g *generator) partEntity(grouping string) obj {
	e := obj{
		"@context": "https://schema.org",
		"@id":      "",
		"@type":    "Message",
		"type":     "https://schema.org/Message",
		"isPartOf": obj{"@id": grouping, "@type": "HowTo"},
	}
	switch r := g.rng.IntN(100); {
	case r < 20:
		// no position
	case r < 25:
		e["position"] = strconv.Itoa(1 + g.rng.IntN(5))
	case r < 30:
		e["position"] = float64(g.rng.IntN(5)) + 0.5
	default:
		e["position"] = 1 + g.rng.IntN(6)
	}
	if g.chance(5) {
		e["isPartOf"] = obj{"@id": grouping, "@type": "CreativeWork"}
	}
	if g.chance(10) {
		e["abstract"] = "step summary"
	}
	return e
}

func (g *generator) howToPart() {
	if len(g.groupings) == 0 || g.chance(30) {
		g.groupings = append(g.groupings, "_:"+g.newID("g"))
	}
	grouping := g.groupings[g.rng.IntN(len(g.groupings))]
	if g.chance(20) {
		g.startSession(grouping)
		return
	}
	id := g.newID("p")
	a := obj{"type": "message", "id": id, "from": g.botFrom(), "text": "part " + id,
		"entities": []any{g.partEntity(grouping)}}
	g.serverStamp(a)
	g.incoming(a)
}

// localTimestamp is the user's clock with the offset Web Chat writes; sometimes a non-UTC zone.
func (g *generator) localTimestamp() string {
	t := time.UnixMilli(g.serverMs + g.skewMs)
	if g.chance(30) {
		return t.In(time.FixedZone("", 9*3600)).Format("2006-01-02T15:04:05.000-07:00")
	}
	return t.UTC().Format("2006-01-02T15:04:05.000-07:00")
}

func (g *generator) post() {
	g.tick()
	cid := g.newID("c")
	a := obj{
		"type":           "message",
		"localTimestamp": g.localTimestamp(),
		"localTimezone":  "Etc/UTC",
		"channelId":      "webchat",
		"from":           obj{"id": userID, "name": "User", "role": "user"},
		"locale":         "en-US",
		"text":           "user " + cid,
		"attachments":    []any{},
		"channelData":    obj{"clientActivityID": cid},
	}
	if g.posts == 0 {
		a["entities"] = []any{obj{"requiresBotState": true, "supportsListening": true, "supportsTts": true, "type": "ClientCapabilities"}}
	}
	g.posts++
	g.sends = append(g.sends, &send{clientActivityID: cid, echo: a})
	g.emit(sortkeys.Event{Op: sortkeys.OpPost, Activity: mustJSON(a)})
}

// echoOf returns the service's echo of s, building it the first time.
func (g *generator) echoOf(s *send) obj {
	if _, done := s.echo["id"]; done {
		return s.echo
	}
	e := clone(s.echo)
	e["id"] = g.newID("u")
	e["channelId"] = "directline"
	if g.chance(15) {
		e["from"] = obj{"id": userID, "name": "User"} // role inferred from userID
	}
	g.serverStamp(e)
	s.echo = e
	return e
}

func (g *generator) pickSend(pred func(*send) bool) *send {
	var c []*send
	for _, s := range g.sends {
		if pred(s) {
			c = append(c, s)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[g.rng.IntN(len(c))]
}

// echo delivers a send's echo before the acknowledgement, or re-delivers an echo.
func (g *generator) echo() {
	s := g.pickSend(func(s *send) bool { return !s.echoed || g.chance(10) })
	if s == nil {
		g.post()
		return
	}
	s.echoed = true
	g.incoming(clone(g.echoOf(s)))
}

func (g *generator) fulfil() {
	s := g.pickSend(func(s *send) bool { return !s.acked })
	if s == nil || g.chance(10) { // some sends are never acknowledged
		g.plain()
		return
	}
	s.acked = true
	e := g.echoOf(s)
	if !s.echoed {
		g.delivered = append(g.delivered, e)
	}
	s.echoed = true
	g.emit(sortkeys.Event{Op: sortkeys.OpFulfilled, ClientActivityID: s.clientActivityID, Activity: mustJSON(e)})
}

// restoredUserMessage is a user message from history: no pending send matches it.
func (g *generator) restoredUserMessage() {
	id := g.newID("h")
	a := obj{"type": "message", "id": id, "text": "history " + id, "localTimestamp": g.localTimestamp()}
	if g.chance(50) {
		a["from"] = obj{"id": userID, "name": "User", "role": "user"}
	} else {
		a["from"] = obj{"id": userID, "name": "User"}
	}
	if g.chance(50) {
		a["channelData"] = obj{"clientActivityID": g.newID("hc")}
	}
	g.serverStamp(a)
	g.incoming(a)
}

// channelActivity is an activity without a usable sender: from missing, null or without id.
func (g *generator) channelActivity() {
	id := g.newID("e")
	a := obj{"type": "conversationUpdate", "id": id}
	switch g.rng.IntN(4) {
	case 0:
		a["from"] = nil
	case 1:
		a["from"] = obj{"name": "nobody"}
	case 2:
		a["type"] = "event"
		a["name"] = "custom"
		a["from"] = g.botFrom()
	}
	g.serverStamp(a)
	g.incoming(a)
}

func (g *generator) deleteActivity() {
	if len(g.delivered) == 0 {
		g.plain()
		return
	}
	id, _ := g.delivered[g.rng.IntN(len(g.delivered))]["id"].(string)
	g.emit(sortkeys.Event{Op: sortkeys.OpDelete, ActivityID: id})
}
