package findings

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
	"github.com/directline-go/directline/sortkeys"
)

// Options configure Check.
type Options struct {
	// Profile is the Web Chat generation the order is predicted for; "" means gen-c.
	Profile sortkeys.Profile
	// UserID is the user id Web Chat was started with (role inference).
	UserID string
	// MaxPerRule keeps at most this many findings per rule in Report.Findings (the first ones in
	// log order); 0 keeps all. Summary counts are always complete.
	MaxPerRule int
	// Progress, when set, is called with the number of events processed so far and the total.
	Progress func(done, total int)
}

// Finding is one rule violation.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Index is the 0-based position in the events slice of the event that carried the activity.
	Index int `json:"index"`
	// ActivityID is the activity's id, or its clientActivityID when it has none.
	ActivityID string `json:"activityId"`
	Message    string `json:"message"`
}

// Service orders.
const (
	// ServiceOrderSequenceID: every delivered activity carries a numeric sequence id, which
	// defines the service's order.
	ServiceOrderSequenceID = "sequence-id"
	// ServiceOrderDelivery: the order in which the log delivers activities.
	ServiceOrderDelivery = "delivery"
)

// Summary counts what Check found.
type Summary struct {
	Profile sortkeys.Profile `json:"profile"`
	// Events is len(events); Activities the number of distinct delivered activities.
	Events     int `json:"events"`
	Activities int `json:"activities"`
	// Posts is the number of post events (what Web Chat sent). The echo rules (DL021, DL030 to
	// DL032) compare posts with what came back: a log without posts, such as a service's log or
	// a transcript, cannot break them.
	Posts int `json:"posts"`
	// UserID is Options.UserID, the user id Web Chat was started with.
	UserID string `json:"userID"`
	// RoleInferred is the number of delivered activities whose from has an id and no role: Web
	// Chat takes them for the user's when from.id is the user id (Options.UserID), else for a
	// bot's.
	RoleInferred int `json:"roleInferred"`
	// RoleInferredUser is how many of those Web Chat takes for the user's.
	RoleInferredUser int `json:"roleInferredUser"`
	// Findings is the total number of findings, including any MaxPerRule left out.
	Findings   int              `json:"findings"`
	BySeverity map[Severity]int `json:"bySeverity"`
	ByRule     map[string]int   `json:"byRule"`
	// ServiceOrder is ServiceOrderSequenceID or ServiceOrderDelivery.
	ServiceOrder string `json:"serviceOrder"`
	// InvertedPairs is the number of pairs shown in the opposite order to the server: pairs of
	// bubbles on the predicted screen where the service's order puts every activity of the lower
	// one before any of the upper one (Span).
	InvertedPairs int64 `json:"invertedPairs"`
	// Moved is the number of bubbles outside one longest run kept in the service's order.
	Moved int `json:"moved"`
	// Bubbles is the number of bubbles on the predicted screen.
	Bubbles int `json:"bubbles"`
}

// Placement is one delivered activity's place in the service's order and in Web Chat's.
type Placement struct {
	// Name is the activity id.
	Name string `json:"name"`
	// Index is the event that first delivered it.
	Index int `json:"index"`
	// Service is its 0-based place in the service's order.
	Service int `json:"service"`
	// Display is the 0-based place in Report.Screen of the bubble it is a revision of, -1 when
	// none is: it is hidden or dropped.
	Display int `json:"display"`
	// Moved is true when that bubble is one Summary.Moved counts.
	Moved bool `json:"moved"`
}

// Report is the result of Check.
type Report struct {
	Findings []Finding `json:"findings"`
	Summary  Summary   `json:"summary"`
	// Order and Screen are the model's prediction after the last event.
	Order  []sortkeys.Item   `json:"-"`
	Screen []sortkeys.Bubble `json:"-"`
	// Service lists the delivered activities in the service's order.
	Service []Placement `json:"-"`
	// ScreenService has, for each bubble of Screen, the index in Service of the first delivered
	// activity among its revisions (Bubble.IDs), which DL070 names, or -1 when it has none (a
	// pending post). An activity counts for the highest bubble that lists it.
	ScreenService []int `json:"-"`
}

// Count returns the number of findings of one severity.
func (r *Report) Count(s Severity) int { return r.Summary.BySeverity[s] }

// screenWalkLimit: up to this many events, the screen's keys walk runs after every event, as Web
// Chat does; longer logs walk once at the end, as walking is linear in the list length.
const screenWalkLimit = 2000

// Check replays events against the model for opts.Profile and applies every rule in Rules. The
// events are in log order (conformance README "Ops"); expect checkpoints are skipped.
func Check(events []sortkeys.Event, opts Options) Report {
	c := newChecker(opts, events)
	replay := sortkeys.New(sortkeys.Options{Profile: opts.Profile, UserID: opts.UserID, ScreenHistory: len(events) <= screenWalkLimit})
	for i, ev := range events {
		if ev.Op == sortkeys.OpExpect {
			continue
		}
		if err := replay.Apply(ev); err != nil {
			c.add(ActivityMalformed, i, "", "the replay rejected this event: "+err.Error())
		}
		c.event(i, ev)
		if opts.Progress != nil && (i%1024 == 0 || i == len(events)-1) {
			opts.Progress(i+1, len(events))
		}
	}
	c.finish()
	rep := Report{Order: replay.Order(), Screen: replay.Screen()}
	c.order(&rep)
	profile := opts.Profile
	if profile == "" {
		profile = sortkeys.GenC
	}
	rep.Summary.Profile = profile
	rep.Summary.Events = len(events)
	rep.Summary.Activities = c.firsts
	rep.Summary.Posts = c.postEvents
	rep.Summary.UserID, rep.Summary.RoleInferred, rep.Summary.RoleInferredUser = opts.UserID, c.roleInferred, c.roleInferredUser
	rep.Summary.Bubbles = len(rep.Screen)
	c.report(&rep, opts.MaxPerRule)
	return rep
}

// delivered is what the rules that need the whole log (finish, serviceOrder, order) and later
// revisions of the same id read of one activity the service delivered. It is all Check keeps of
// a delivered activity: the parsed act, its entities and decoded strings are dropped once its own
// rules have run.
type delivered struct {
	index    int
	id, name string
	seq      float64
	seqKind  seqKind
	// first: the first delivery of its id (always, without an id).
	first bool
	// ts is the timestamp string; t is its time when parseTimestamp reads it (tsParsed).
	tsParsed bool
	ts       string
	t        time.Time
	// partOf is the raw isPartOf of its Message entity (a slice of the activity), nil when none.
	partOf json.RawMessage
	// sum is a hash of the activity's JSON: a later delivery of the same id with the same sum is
	// the same activity delivered again (a reconnect's overlap), not a new revision; again says
	// this delivery is one.
	sum   uint64
	again bool
	// finalAtStart: a livestream's final carrying its first revision's timestamp, which
	// WEBCHAT-ORDERING §8 recommends for a final that should stay where the stream began.
	finalAtStart bool
}

// typeInvoke is the invoke activity type, which Web Chat hides.
const typeInvoke = "invoke"

// suspect is a delivered activity that looks like the echo of a pending post without carrying
// its clientActivityID: rule is reported with the message format and args once the log has
// ended, if post was never echoed.
type suspect struct {
	index              int
	name, rule, format string
	args               []any
	post               *post
}

// reply is a delivered activity with a replyToId, for ReplyToUnknown once the log has ended.
type reply struct {
	index         int
	name, replyTo string
}

// post is a posted activity waiting for its echo; a fulfilled event without a matching post
// makes one with index -1 and no posted values.
type post struct {
	// index is the post event's; the lists of textPosts are in its order.
	index  int
	cid    string
	echoed bool
	// fromID is the posted activity's from.id as sent (raw JSON).
	fromID string
	// The posted activity's values the echo rules compare.
	typ, text      string
	localTS        string
	localTSPresent bool
}

type session struct {
	finalized bool
	partOf    string
	// howTo is howTo(partOf), kept as each later revision compares with partOf, which may be long.
	howTo bool
	// startTS is the timestamp string of the session's first revision.
	startTS string
}

type checker struct {
	opts     Options
	findings []finding
	// reported marks (rule, event index) pairs already reported, so one event never repeats a rule.
	reported map[[2]int]bool
	ruleIdx  map[string]int
	seed     maphash.Seed

	posts map[string]*post
	// byText holds, under type and text, the posts an echo without clientActivityID may be of.
	byText     map[string]textPosts
	deliveries []delivered
	// roleInferred counts the deliveries whose role is inferred (Summary.RoleInferred), and
	// roleInferredUser those of them taken for the user's.
	roleInferred, roleInferredUser int
	// postEvents counts the post events (Summary.Posts).
	postEvents int
	// firsts counts the deliveries with first set.
	firsts int
	// byID is the index in deliveries of the latest revision of each id.
	byID       map[string]int
	sessions   map[string]*session
	seqOwner   map[float64]string
	maxSeq     float64
	maxSeqID   string
	haveMaxSeq bool
	botSeen    bool
	// repliedTo holds the replyToIds of the deliveries so far.
	repliedTo map[string]bool
	replyTos  []reply
	suspects  []suspect
}

func newChecker(opts Options, events []sortkeys.Event) *checker {
	// Each incoming or fulfilled event delivers at most one activity: sized for that many, the
	// deliveries and ids of a long log are not copied as they grow.
	n := 0
	for _, ev := range events {
		if ev.Op == sortkeys.OpIncoming || ev.Op == sortkeys.OpFulfilled {
			n++
		}
	}
	c := &checker{
		opts:       opts,
		reported:   map[[2]int]bool{},
		ruleIdx:    map[string]int{},
		posts:      map[string]*post{},
		byText:     map[string]textPosts{},
		deliveries: make([]delivered, 0, n),
		byID:       make(map[string]int, n),
		sessions:   map[string]*session{},
		seqOwner:   map[float64]string{},
		repliedTo:  map[string]bool{},
		seed:       maphash.MakeSeed(),
	}
	for i, r := range Rules {
		c.ruleIdx[r.ID] = i
	}
	return c
}

// finding is a Finding whose Message is format with args, formatted only if the report lists it:
// beyond MaxPerRule most findings of a long log are only counted, and a message may quote another
// activity's id or value, which formatting every finding would copy once per finding.
type finding struct {
	Finding
	format string
	args   []any
}

func (c *checker) add(rule string, index int, name, msg string) { c.addf(rule, index, name, "%s", msg) }

func (c *checker) addf(rule string, index int, name, format string, args ...any) {
	key := [2]int{c.ruleIdx[rule], index}
	if c.reported[key] {
		return
	}
	c.reported[key] = true
	c.findings = append(c.findings, finding{
		Finding: Finding{Rule: rule, Severity: Rules[c.ruleIdx[rule]].Severity, Index: index, ActivityID: name},
		format:  format, args: args,
	})
}

func (c *checker) event(i int, ev sortkeys.Event) {
	switch ev.Op {
	case sortkeys.OpPost:
		c.postEvents++
	case sortkeys.OpIncoming, sortkeys.OpFulfilled:
	default:
		return
	}
	var a act
	if !a.parse(ev.Activity, c.opts.UserID) {
		c.add(ActivityMalformed, i, "", "the activity is not a JSON object")
		return
	}
	if a.decodeErr != nil {
		c.add(ActivityMalformed, i, a.name(), a.decodeErr.Error())
	}
	switch ev.Op {
	case sortkeys.OpPost:
		c.post(i, &a)
	case sortkeys.OpIncoming:
		c.deliver(i, &a, nil)
	case sortkeys.OpFulfilled:
		cid := ev.ClientActivityID
		if cid == "" {
			cid = a.clientID
		}
		p := c.posts[cid]
		if p != nil && p.echoed {
			// The echo arrived earlier as an incoming event; this only completes the send.
			return
		}
		if a.clientID != "" && a.clientID != cid {
			c.addf(EchoClientActivityIDChanged, i, a.name(), "the fulfilled event completes the post with clientActivityID %q, but its echo carries %q: Web Chat would not take it for that post's echo", cid, a.clientID)
		}
		if p == nil {
			p = &post{index: -1}
		}
		c.deliver(i, &a, p)
	}
}

func (c *checker) post(i int, a *act) {
	if !a.localTSPresent {
		c.add(LocalTimestampMissing, i, a.name(), "posted activity has no localTimestamp")
	}
	if a.clientID != "" {
		p := &post{
			index: i, cid: a.clientID, typ: a.typ, text: a.text(), localTS: a.localTS, localTSPresent: a.localTSPresent,
			fromID: string(a.from.id),
		}
		c.posts[a.clientID] = p
		if p.text != "" {
			k := textKey(p.typ, p.text)
			tp := c.byText[k]
			tp.all = append(tp.all, p)
			if tp.byFrom != nil {
				tp.byFrom[p.fromID] = append(tp.byFrom[p.fromID], p)
			}
			c.byText[k] = tp
		}
	}
}

func textKey(typ, text string) string { return typ + "\x00" + text }

// pending says p still waits for its echo. A post stops pending for good once echoed or posted
// again under its clientActivityID.
func (c *checker) pending(p *post) bool { return !p.echoed && c.posts[p.cid] == p }

// textPosts are the posts with one type and text, for pendingWithText.
type textPosts struct {
	// all lists them earliest first, from the earliest still pending on.
	all []*post
	// byFrom lists the same posts under their from.id as sent, each list earliest first. It is
	// made only once an echo from another sender than the earliest pending post's asks, as most
	// logs never have one.
	byFrom map[string][]*post
}

// earliestFrom returns the earliest post still pending with from.id sent as from (raw, "" for
// none), or nil. It drops the posts before it, as a post stops pending for good.
func (c *checker) earliestFrom(tp textPosts, from string) *post {
	ps := tp.byFrom[from]
	for len(ps) > 0 && !c.pending(ps[0]) {
		ps = ps[1:]
	}
	if len(ps) == 0 {
		delete(tp.byFrom, from)
		return nil
	}
	tp.byFrom[from] = ps
	return ps[0]
}

// deliver applies the per-activity rules to an activity the service delivered. echoOf is the
// post a fulfilled event completes (nil for incoming events).
func (c *checker) deliver(i int, a *act, echoOf *post) {
	name := a.name()
	if a.roleInferred {
		c.roleInferred++
		if a.role == activity.RoleUser {
			c.roleInferredUser++
		}
	}
	if a.role != activity.RoleUser && a.clientID != "" {
		if p := c.posts[a.clientID]; echoOf != nil || p != nil && !p.echoed {
			why := "from has neither id nor role"
			switch {
			case a.roleInferred:
				why = fmt.Sprintf("no from.role, and from.id %s is not the user id %q", a.from.id, c.opts.UserID)
			case a.role != "channel":
				why = "from.role " + string(a.from.role)
			}
			c.addf(EchoNotFromUser, i, name, "carries the clientActivityID %q of a pending post, but Web Chat takes it for a %s's activity: %s", a.clientID, a.role, why)
		}
	}
	if echoOf == nil && a.role == activity.RoleUser {
		p := c.posts[a.clientID]
		switch {
		case a.clientID != "" && p != nil && !p.echoed:
			echoOf = p
		// An activity like a pending post is only a suspect: the same user may have sent the
		// same text from another tab. It is reported if that post is never echoed (finish).
		case a.clientID == "":
			if p := c.pendingWithText(a); p != nil {
				c.suspects = append(c.suspects, suspect{index: i, name: name, rule: EchoWithoutClientActivityID, post: p,
					format: "looks like the echo of the post with clientActivityID %q (same text), which is never echoed, but has no channelData.clientActivityID", args: []any{p.cid}})
			}
		case p == nil:
			if p := c.pendingWithText(a); p != nil {
				c.suspects = append(c.suspects, suspect{index: i, name: name, rule: EchoClientActivityIDChanged, post: p,
					format: "looks like the echo of the post with clientActivityID %q (same text), which is never echoed, but carries %q; Web Chat matches it exactly, so the post stays pending and this shows as a second bubble", args: []any{p.cid, a.clientID}})
			}
		}
	}
	if echoOf != nil {
		c.echo(i, a, echoOf)
	} else if a.id == "" && !a.idOther {
		c.add(IDMissing, i, name, "delivered activity has no id")
	}
	switch a.typ {
	case "", activity.TypeMessage, activity.TypeTyping, activity.TypeConversationUpdate, activity.TypeEvent, typeInvoke:
	default:
		c.addf(TypeWithoutRenderer, i, name, "Web Chat has no renderer for type %q: it throws \"No renderer for activity of type\", which may draw an error box; the service should not send it to Web Chat", a.typ)
	}
	if a.role == activity.RoleUser {
		// An echo without one is the post's fault when the post had none (reported there), and
		// DL021's when it did.
		if !a.localTSPresent && echoOf == nil {
			c.add(LocalTimestampMissing, i, name, "user activity has no localTimestamp")
		}
		if a.localTSPresent && a.tsString && a.localTS == a.ts {
			c.addf(LocalTimestampOverwritten, i, name, "localTimestamp %q is identical to the server timestamp", a.localTS)
		}
	}
	var t time.Time
	tsParsed := false
	if a.tsString {
		t, tsParsed = parseTimestamp(a.ts)
	}
	c.timestamp(i, a, tsParsed)
	prevAt, idSeen := c.byID[a.id]
	c.sequenceID(i, a, idSeen)
	sum := maphash.Bytes(c.seed, jsonscan.TrimSpace(a.raw))
	again := idSeen && c.deliveries[prevAt].sum == sum

	if a.id != "" {
		c.byID[a.id] = len(c.deliveries)
	}
	msg, hasMsg := a.messageEntity()
	d := delivered{
		index: i, id: a.id, name: name, seq: a.seq, seqKind: a.seqKind, first: !idSeen,
		tsParsed: tsParsed, ts: a.ts, t: t, partOf: msg.isPartOf, sum: sum, again: again,
	}
	c.deliveries = append(c.deliveries, d)
	if d.first {
		c.firsts++
	}
	isStream, atStart := c.livestream(i, a, idSeen, again, msg.isPartOf)
	c.deliveries[len(c.deliveries)-1].finalAtStart = atStart
	if !isStream && idSeen {
		if was, now := partOf(c.deliveries[prevAt].partOf), partOf(msg.isPartOf); was != now && c.sortsBy(howTo(was), howTo(now)) {
			c.addf(PartOfChanged, i, name, "isPartOf changed from %s to %s in an update of the same id", orNone(was), orNone(now))
		}
	}
	if hasMsg {
		c.partGrouping(i, name, msg)
	}
	// Web Chat holds a reply once a bot activity is in the store, unless an activity replying to
	// the same id already is (queueIncomingActivitySaga.ts; ordering notes §3 step 2, §9.5).
	if a.replyTo != "" && c.botSeen && !c.repliedTo[a.replyTo] {
		c.replyTos = append(c.replyTos, reply{index: i, name: name, replyTo: a.replyTo})
	}
	if a.replyTo != "" {
		c.repliedTo[a.replyTo] = true
	}
	if a.role == activity.RoleBot {
		c.botSeen = true
	}
}

// pendingWithText returns the earliest post still pending with a's type and (non-empty) text
// that a's sender may have sent, or nil.
func (c *checker) pendingWithText(a *act) *post {
	text := a.text()
	if text == "" {
		return nil
	}
	k := textKey(a.typ, text)
	tp := c.byText[k]
	ps := tp.all
	for len(ps) > 0 && !c.pending(ps[0]) {
		ps = ps[1:]
	}
	if len(ps) == 0 {
		delete(c.byText, k)
		return nil
	}
	tp.all = ps
	// Another sender's message is no echo of this user's post: a post sent without a from.id, or
	// an activity without one, may be either's.
	head, from := ps[0], string(a.from.id)
	if head.fromID == "" || from == "" || head.fromID == from {
		c.byText[k] = tp
		return head
	}
	if tp.byFrom == nil {
		tp.byFrom = map[string][]*post{}
		for _, p := range ps {
			tp.byFrom[p.fromID] = append(tp.byFrom[p.fromID], p)
		}
	}
	c.byText[k] = tp
	p := c.earliestFrom(tp, from)
	if q := c.earliestFrom(tp, ""); q != nil && (p == nil || q.index < p.index) {
		p = q
	}
	return p
}

func (c *checker) echo(i int, a *act, p *post) {
	name := a.name()
	if a.clientID == "" {
		c.add(EchoWithoutClientActivityID, i, name, "the echo of a posted activity has no channelData.clientActivityID")
	}
	if a.id == "" {
		c.add(EchoWithoutID, i, name, "the echo of a posted activity has no id")
	} else {
		p.echoed = true
	}
	if !p.localTSPresent {
		return
	}
	switch {
	case !a.localTSPresent:
		c.addf(LocalTimestampChanged, i, name, "the echo dropped localTimestamp (posted as %q)", p.localTS)
	case a.localTS != p.localTS:
		c.addf(LocalTimestampChanged, i, name, "localTimestamp changed from %q, as posted, to %q", p.localTS, a.localTS)
	}
}

// timestamp applies the timestamp rules; parsed says parseTimestamp reads a.ts.
func (c *checker) timestamp(i int, a *act, parsed bool) {
	name := a.name()
	if a.tsRaw == nil {
		c.add(TimestampMissing, i, name, "delivered activity has no timestamp")
		return
	}
	// A timestamp that is not a date-time string is not ISO either; without a numeric sequence
	// id to sort by, Web Chat also has no key for it.
	covered := a.seqKind == seqNumber
	if !a.tsString {
		c.add(TimestampNotISO, i, name, "timestamp is "+jsonKind(a.tsRaw)+", not an ISO 8601 string")
		if !covered {
			c.add(TimestampUnparseable, i, name, "timestamp is "+jsonKind(a.tsRaw)+", not a string; Web Chat has no key for it and appends it")
		}
		return
	}
	if !parsed {
		c.addf(TimestampNotISO, i, name, "timestamp %q is not a date JavaScript can read (Date.parse gives NaN)", a.ts)
		if !covered {
			c.addf(TimestampUnparseable, i, name, "timestamp %q cannot be parsed by JavaScript's Date (NaN); Web Chat appends it", a.ts)
		}
		return
	}
	digits, iso := isoFraction(a.ts)
	switch {
	case !iso:
		c.addf(TimestampNotISO, i, name, "timestamp %q is not an RFC 3339 date-time with a UTC offset and fields in range", a.ts)
	case digits == 0:
		c.addf(TimestampNoMillis, i, name, "timestamp %q has no fractional seconds; Web Chat reads times to the millisecond", a.ts)
	case digits < 3:
		c.addf(TimestampNoMillis, i, name, "timestamp %q has %d fractional digit(s), fewer than the 3 of milliseconds", a.ts, digits)
	}
}

// sequenceID applies the sequence id rules; idSeen says an earlier activity had a's id.
func (c *checker) sequenceID(i int, a *act, idSeen bool) {
	name := a.name()
	switch a.seqKind {
	case seqOther:
		c.add(SequenceIDString, i, name, "webchat:sequence-id is "+jsonKind(a.seqRaw)+"; Web Chat ignores it and uses the timestamp")
		return
	case seqAbsent:
		return
	}
	if !a.seqIsInteger() {
		c.add(SequenceIDNotInteger, i, name, "webchat:sequence-id "+string(a.seqRaw)+" is not a safe integer in JavaScript (an integer within ±(2^53 − 1))")
	}
	switch owner, ok := c.seqOwner[a.seq]; {
	case !ok:
		c.seqOwner[a.seq] = a.id
	case a.id == "" || owner != a.id:
		c.addf(SequenceIDDuplicate, i, name, "webchat:sequence-id %s%s is also on %s", string(a.seqRaw), jsValueNote(a.seqRaw, a.seq), orNone(owner))
	}
	if idSeen {
		// A re-delivery keeps its place in delivery order; only first deliveries are compared.
		return
	}
	if c.haveMaxSeq && a.seq < c.maxSeq {
		c.addf(SequenceIDDecreasing, i, name, "webchat:sequence-id %s is delivered after %s (on %s)", string(a.seqRaw), sortkeys.NumberString(c.maxSeq), orNone(c.maxSeqID))
	}
	if !c.haveMaxSeq || a.seq > c.maxSeq {
		c.maxSeq, c.maxSeqID, c.haveMaxSeq = a.seq, a.id, true
	}
}

// livestream applies the livestream rules and reports whether a is a valid livestream revision,
// and whether it is a final with its session's first timestamp. idSeen says an earlier activity
// had a's id, again that it was this same activity; isPartOf is that of its Message entity.
func (c *checker) livestream(i int, a *act, idSeen, again bool, isPartOf json.RawMessage) (isStream, finalAtStart bool) {
	name := a.name()
	sm, ok := a.streamMeta()
	if !ok {
		return false, false
	}
	var ls activity.Livestream
	if d := a.decoded(); d != nil {
		ls, ok = d.Livestream()
	}
	if !ok {
		// Not a revision. When both channelData and a streaminfo entity carry metadata, Web
		// Chat takes the entity's if channelData's is invalid; then ok holds and nothing is
		// reported here.
		c.notLivestream(i, a, sm)
		return false, false
	}
	// gen-a and gen-b replace an activity delivered again under its id, where gen-c's session
	// keeps both entries; gen-a has no sealing (WEBCHAT-ORDERING §4.3, §6.1).
	genA, genC := c.opts.Profile == sortkeys.GenA, c.opts.Profile == "" || c.opts.Profile == sortkeys.GenC
	s := c.sessions[ls.SessionID]
	if s != nil && s.finalized {
		switch {
		case again:
		case genA:
			c.addf(LivestreamAfterFinal, i, name, "revision for livestream %s after its final activity; Web Chat main drops it, and 4.18 (gen-a, checked here) shows it in place of the final", ls.SessionID)
		default:
			c.addf(LivestreamAfterFinal, i, name, "revision for livestream %s after its final activity; Web Chat drops it", ls.SessionID)
		}
		return true, false
	}
	switch {
	case again && genC:
		c.addf(LivestreamRevisionIDReused, i, name, "the same revision %s delivered again; Web Chat does not deduplicate a session's revisions by id, so livestream %s lists it twice", a.id, ls.SessionID)
	case again:
	case idSeen && genC:
		c.addf(LivestreamRevisionIDReused, i, name, "livestream revision reuses the id %s of an earlier activity; Web Chat keeps both in livestream %s", a.id, ls.SessionID)
	case idSeen:
		c.addf(LivestreamRevisionIDReused, i, name, "livestream revision reuses the id %s of an earlier activity, which it replaces in livestream %s (%s, checked here; Web Chat main keeps both)", a.id, ls.SessionID, c.opts.Profile)
	}
	earlier := s != nil
	if !earlier {
		p := partOf(isPartOf)
		s = &session{partOf: p, howTo: howTo(p), startTS: a.ts}
		c.sessions[ls.SessionID] = s
	} else if p := partOf(isPartOf); p != s.partOf && c.sortsBy(s.howTo, howTo(p)) {
		c.addf(PartOfChanged, i, name, "isPartOf changed from %s to %s within livestream %s", orNone(s.partOf), orNone(p), ls.SessionID)
	}
	if ls.Kind == activity.LivestreamFinal {
		s.finalized = true
		return true, earlier && a.tsString && a.ts == s.startTS
	}
	return true, false
}

// notLivestream reports why livestream metadata sm, as sent, does not make a a revision.
func (c *checker) notLivestream(i int, a *act, sm streamMeta) {
	name := a.name()
	switch sm.streamType {
	case activity.StreamTypeStreaming, activity.StreamTypeInformative:
		if a.typ != activity.TypeTyping {
			c.addf(LivestreamInterimNotTyping, i, name, "streamType %q on a %q activity; only typing activities are livestream revisions", sm.streamType, a.typ)
			return
		}
		n, isNum := number(sm.seqRaw)
		if !isNum || n < 1 || n != math.Trunc(n) || math.IsInf(n, 0) {
			what := "missing"
			if sm.seqPresent {
				what = jsonKind(sm.seqRaw)
			}
			c.add(LivestreamSequenceInvalid, i, name, "streamSequence is "+what+", not an integer >= 1; the revision is not joined to its session")
		}
	case activity.StreamTypeFinal:
		if sm.streamID == "" {
			c.add(LivestreamFinalWithoutStream, i, name, "final livestream activity without streamId; the session is never concluded")
		}
	}
}

// partGrouping applies the part grouping rules to the Message entity e of the activity name.
func (c *checker) partGrouping(i int, name string, e entity) {
	if raw := e.isPartOf; raw != nil && !isNull(raw) {
		var po map[string]any
		if err := unmarshalFirst(raw, &po); err == nil {
			id, isStr := po["@id"].(string)
			if !isStr || !activity.IsIdentifier(id) {
				c.addf(PartOfIDInvalid, i, name, "isPartOf[\"@id\"] %v is not a blank node (_:...) or a URL; %s", po["@id"], c.notGrouped(isStr))
			}
		}
	}
	if raw := e.position; raw != nil && !isNull(raw) {
		if _, isNum := number(activity.FirstValue(raw)); !isNum {
			c.add(PositionNotNumber, i, name, "position is "+jsonKind(activity.FirstValue(raw))+", not a number; "+c.notGrouped(true))
		}
	}
}

// sortsBy reports whether a change of isPartOf between two groupings, wasHowTo and nowHowTo
// saying which is a HowTo one, can leave an entry behind in the profile checked: gen-c keeps only
// HowTo groupings together (WEBCHAT-ORDERING §4.6), gen-b any grouping, gen-a none.
func (c *checker) sortsBy(wasHowTo, nowHowTo bool) bool {
	switch c.opts.Profile {
	case sortkeys.GenA:
		return false
	case sortkeys.GenB:
		return true
	}
	return wasHowTo || nowHowTo
}

// howTo reports whether partOf (partOf's form) names a HowTo grouping.
func howTo(partOf string) bool { return strings.Contains(partOf, `"@type":"HowTo"`) }

// notGrouped says what becomes of a part whose Message entity Web Chat main rejects, for the
// profile checked: gen-b groups it all the same when the entity still names a grouping id
// (patchActivity copies what it finds), and gen-a groups nothing.
func (c *checker) notGrouped(namesGroup bool) string {
	const main = "Web Chat main (gen-c) does not group the activity"
	switch c.opts.Profile {
	case sortkeys.GenB:
		if namesGroup {
			return main + "; the gen-b prerelease checked here still does"
		}
	case sortkeys.GenA:
		return main + "; 4.18 (gen-a, checked here) groups no activity"
	}
	return main
}

// finish applies the rules that need the whole log.
func (c *checker) finish() {
	for _, s := range c.suspects {
		if !s.post.echoed {
			c.addf(s.rule, s.index, s.name, s.format, s.args...)
		}
	}
	for _, r := range c.replyTos {
		if _, ok := c.byID[r.replyTo]; !ok {
			c.addf(ReplyToUnknown, r.index, r.name, "replyToId %q names an activity that never arrives; Web Chat holds this one up to 5 s, and later replies to the same id that arrive meanwhile with it", r.replyTo)
		}
	}
	withSeq := 0
	for k := range c.deliveries {
		if c.deliveries[k].seqKind == seqNumber {
			withSeq++
		}
	}
	if withSeq > 0 && withSeq < len(c.deliveries) {
		for k := range c.deliveries {
			if d := &c.deliveries[k]; d.seqKind == seqAbsent {
				c.addf(SequenceIDPartial, d.index, d.name, "no webchat:sequence-id, while %d of %d deliveries carry one; it sorts after all of them", withSeq, len(c.deliveries))
			}
		}
	}
}

// serviceOrder returns the first deliveries with an id in the service's order, and which order
// that is.
func (c *checker) serviceOrder() ([]*delivered, string) {
	list := make([]*delivered, 0, c.firsts)
	all := true
	for k := range c.deliveries {
		d := &c.deliveries[k]
		if !d.first || d.id == "" {
			continue
		}
		list = append(list, d)
		if d.seqKind != seqNumber {
			all = false
		}
	}
	if !all || len(list) == 0 {
		return list, ServiceOrderDelivery
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].seq < list[j].seq })
	return list, ServiceOrderSequenceID
}

// order compares the service's order with the predicted screen and checks timestamps along the
// service's order.
func (c *checker) order(rep *Report) {
	list, basis := c.serviceOrder()
	rep.Summary.ServiceOrder = basis
	var prevT *delivered
	for _, d := range list {
		if !d.tsParsed || d.finalAtStart {
			continue
		}
		if prevT != nil {
			switch {
			case d.t.Equal(prevT.t) && d.ts == prevT.ts:
				c.addf(TimestampNotIncreasing, d.index, d.name, "timestamp %s equals that of %s, the activity before it in the service's order", d.ts, prevT.name)
			case d.t.Equal(prevT.t):
				c.addf(TimestampNotIncreasing, d.index, d.name, "timestamp %s is in the same millisecond as %s of %s, the activity before it in the service's order; Web Chat reads times to the millisecond", d.ts, prevT.ts, prevT.name)
			case d.t.Before(prevT.t):
				c.addf(TimestampNotIncreasing, d.index, d.name, "timestamp %s is earlier than %s of %s, the activity before it in the service's order", d.ts, prevT.ts, prevT.name)
			}
		}
		prevT = d
	}

	// list has the first delivery of every id byID holds, and of no other: byID, which nothing
	// reads any more, is turned into each id's place in list rather than building that map anew.
	rank := c.byID
	rep.Service = make([]Placement, len(list))
	for k, d := range list {
		rank[d.id] = k
		rep.Service[k] = Placement{Name: d.id, Index: d.index, Service: k, Display: -1}
	}
	c.byID = nil
	lo, hi, places := c.deliveryPlaces(rank, len(list), basis)
	// The rule is about what a person sees: bubbles, each spanning the deliveries of the
	// activities among its revisions that no bubble higher up already shows.
	rep.ScreenService = make([]int, len(rep.Screen))
	spans := make([]Span, 0, len(rep.Screen))
	spanOf := make([]int, len(rep.Screen)) // the span of the bubble at each place, -1 for none
	for pos, b := range rep.Screen {
		s := Span{First: -1}
		rep.ScreenService[pos] = -1
		for _, id := range b.IDs {
			k, ok := rank[id]
			if !ok || rep.Service[k].Display >= 0 {
				continue
			}
			rep.Service[k].Display = pos
			if s.First < 0 || lo[k] < s.First {
				s.First = lo[k]
			}
			s.Last = max(s.Last, hi[k])
			if first := rep.ScreenService[pos]; first < 0 || k < first {
				rep.ScreenService[pos] = k
			}
		}
		spanOf[pos] = -1
		if s.First >= 0 {
			spanOf[pos] = len(spans)
			spans = append(spans, s)
		}
	}
	c.inversions(rep, spans, spanOf, places, basis)
}

// deliveryPlaces gives each id of the service's order (rank: id → its place in list, n of them)
// the first and last place of its deliveries among all deliveries in that order, revisions
// included: an update delivered after other activities stretches its bubble's span to there.
// In the sequence-id order a revision counts where its sequence id puts it, and only with a
// numeric one. places is the number of places.
func (c *checker) deliveryPlaces(rank map[string]int, n int, basis string) (lo, hi []int, places int) {
	all := make([]*delivered, 0, len(c.deliveries))
	for k := range c.deliveries {
		d := &c.deliveries[k]
		// The same activity delivered again changes nothing on screen: it does not stretch its
		// bubble's span.
		if _, ok := rank[d.id]; !ok || d.id == "" || d.again || (basis == ServiceOrderSequenceID && d.seqKind != seqNumber) {
			continue
		}
		all = append(all, d)
	}
	// A service's deliveries are mostly in sequence-id order already; checking costs a pass.
	bySeq := func(i, j int) bool { return all[i].seq < all[j].seq }
	if basis == ServiceOrderSequenceID && !sort.SliceIsSorted(all, bySeq) {
		sort.SliceStable(all, bySeq)
	}
	lo, hi = make([]int, n), make([]int, n)
	for k := range lo {
		lo[k] = -1
	}
	for p, d := range all {
		k := rank[d.id]
		if lo[k] < 0 {
			lo[k] = p
		}
		hi[k] = p
	}
	return lo, hi, len(all)
}

// inversions counts the pairs of spans (one per bubble with a delivered revision, spanOf[pos]
// for the bubble at screen place pos) shown in the opposite order to the server and reports
// DL070 for each moved bubble.
func (c *checker) inversions(rep *Report, spans []Span, spanOf []int, places int, basis string) {
	rep.Summary.InvertedPairs = InvertedPairs(spans, places)
	moved := Moved(spans, places)
	for k := range rep.Service {
		if pos := rep.Service[k].Display; pos >= 0 {
			rep.Service[k].Moved = moved[spanOf[pos]]
		}
	}
	// Each moved bubble is inverted with a kept one (else the run would keep it too): the kept
	// bubble above it that starts latest in the service's order, or the kept one below it that
	// ends earliest.
	place := make([]int, len(spans)) // the screen place of each span's bubble
	for pos, j := range spanOf {
		if j >= 0 {
			place[j] = pos
		}
	}
	above := make([]int, len(spans)) // the kept span above each with the latest First, -1 for none
	latest := -1
	for j := range spans {
		above[j] = latest
		if !moved[j] && (latest < 0 || spans[j].First > spans[latest].First) {
			latest = j
		}
	}
	earliest := -1 // the kept span below with the earliest Last
	for j := len(spans) - 1; j >= 0; j-- {
		if !moved[j] {
			if earliest < 0 || spans[j].Last < spans[earliest].Last {
				earliest = j
			}
			continue
		}
		rep.Summary.Moved++
		p := &rep.Service[rep.ScreenService[place[j]]]
		// Bubbles are named as the screen table names them: by the revision shown.
		self := "shown at place " + strconv.Itoa(place[j]+1)
		if shown := rep.Screen[place[j]].Name; shown != p.Name {
			self = "shown as " + shown + " at place " + strconv.Itoa(place[j]+1)
		}
		if a := above[j]; a >= 0 && inverted(spans[a], spans[j]) {
			c.addf(OrderInverted, p.Index, p.Name, "%s of Web Chat's screen, below %s (place %d), %s", self, rep.Screen[place[a]].Name, place[a]+1, serviceSays(basis, "after"))
		} else if b := earliest; b >= 0 && inverted(spans[j], spans[b]) {
			c.addf(OrderInverted, p.Index, p.Name, "%s of Web Chat's screen, above %s (place %d), %s", self, rep.Screen[place[b]].Name, place[b]+1, serviceSays(basis, "before"))
		} else {
			c.add(OrderInverted, p.Index, p.Name, self+" of Web Chat's screen, out of the service's order")
		}
	}
}

// serviceSays is where the service's order puts the other bubble, "after" or "before" this one:
// by delivery, or by webchat:sequence-id when every delivered activity has a numeric one.
func serviceSays(basis, side string) string {
	if basis == ServiceOrderSequenceID {
		return "which comes " + side + " it by webchat:sequence-id"
	}
	return "which the service delivered " + side + " it"
}

func (c *checker) report(rep *Report, maxPerRule int) {
	sort.SliceStable(c.findings, func(i, j int) bool {
		if c.findings[i].Index != c.findings[j].Index {
			return c.findings[i].Index < c.findings[j].Index
		}
		return c.findings[i].Rule < c.findings[j].Rule
	})
	rep.Summary.BySeverity = map[Severity]int{}
	rep.Summary.ByRule = map[string]int{}
	rep.Findings = []Finding{}
	for _, f := range c.findings {
		rep.Summary.BySeverity[f.Severity]++
		rep.Summary.ByRule[f.Rule]++
		if maxPerRule <= 0 || rep.Summary.ByRule[f.Rule] <= maxPerRule {
			f.Message = fmt.Sprintf(f.format, f.args...)
			rep.Findings = append(rep.Findings, f.Finding)
		}
	}
	rep.Summary.Findings = len(c.findings)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// jsValueNote says which number Web Chat sees when an integer as sent reads as another in
// JavaScript (beyond 2^53 it rounds to an even neighbour); "" otherwise.
func jsValueNote(raw json.RawMessage, v float64) string {
	sent := strings.TrimSpace(string(raw))
	if shown := sortkeys.NumberString(v); !strings.ContainsAny(sent, ".eE") && shown != sent {
		return " (" + shown + " in JavaScript)"
	}
	return ""
}
