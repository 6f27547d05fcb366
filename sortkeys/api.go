// Package sortkeys models how Microsoft Bot Framework Web Chat orders the activities of a
// conversation (WEBCHAT-ORDERING.md) and replays activity logs against that model: after every
// event it can report the order Web Chat keeps in its store (state.activities) and, for the
// current algorithm, the bubbles a person sees.
//
// Three generations of Web Chat's algorithm are modelled (WEBCHAT-ORDERING §6):
//
//   - gen-a: botframework-webchat-core 4.18.2 (npm botframework-webchat 4.18.1): every activity
//     gets a numeric sequence id (livestream neighbours, else timestamp, else last + 0.001) and
//     the list is ordered by it, ties keeping arrival order.
//   - gen-b: the Sept–Nov 2025 prerelease (botframework-webchat-core
//     4.18.1-main.20251101.54e519d): part grouping by isPartOf/position first, streaminfo entities.
//   - gen-c: Web Chat main after the November 2025 rewrite (units sorted by logical timestamp).
//
// Arithmetic follows JavaScript: float64, undefined and NaN kept apart, timestamps parsed as
// Date.parse does.
package sortkeys

import (
	"encoding/json"
	"fmt"
)

// Profile names a generation of Web Chat's ordering algorithm.
type Profile string

// Profiles. GenC is the default.
const (
	GenA Profile = "gen-a"
	GenB Profile = "gen-b"
	GenC Profile = "gen-c"
)

// ParseProfile accepts "gen-a", "gen-b", "gen-c" and "" (GenC). Anything else is an error.
func ParseProfile(s string) (Profile, error) {
	switch Profile(s) {
	case GenA, GenB, GenC:
		return Profile(s), nil
	case "":
		return GenC, nil
	}
	return "", fmt.Errorf("sortkeys: unknown profile %q (want gen-a, gen-b or gen-c)", s)
}

// Op is the kind of an Event (conformance README "Ops").
type Op string

// Ops of the conformance vectors, plus OpAdvance for the replyToId hold's simulated clock.
const (
	// OpIncoming: an activity reaches the store from the service (DIRECT_LINE/INCOMING_ACTIVITY).
	OpIncoming Op = "incoming"
	// OpPost: the user sends Activity; it is pending under its clientActivityID
	// (DIRECT_LINE/POST_ACTIVITY_PENDING).
	OpPost Op = "post"
	// OpFulfilled: the send of ClientActivityID succeeded; Activity is the service's echo
	// (DIRECT_LINE/POST_ACTIVITY_FULFILLED, preceded by the echo's delivery when not yet seen).
	// When an earlier event delivered an activity with that clientActivityID and an id, the
	// first such completes the send instead, as in Web Chat.
	OpFulfilled Op = "fulfilled"
	// OpDelete: DIRECT_LINE/DELETE_ACTIVITY for ActivityID.
	OpDelete Op = "delete"
	// OpAdvance only moves the simulated clock to At (milliseconds); see Options.ReplyHold.
	OpAdvance Op = "advance"
)

// Event is one entry of an activity log, in the conformance-vector shape.
type Event struct {
	Op Op `json:"op"`
	// Activity is the activity JSON for incoming, post and fulfilled.
	Activity json.RawMessage `json:"activity,omitempty"`
	// ClientActivityID names the send a fulfilled event completes.
	ClientActivityID string `json:"clientActivityID,omitempty"`
	// ActivityID names the activity a delete event removes.
	ActivityID string `json:"activityID,omitempty"`
	// At is the simulated clock in milliseconds when the event happens. It is read only with
	// Options.ReplyHold; the clock never goes backwards (an earlier At is ignored).
	At *float64 `json:"at,omitempty"`
}

// Options configure a Replay.
type Options struct {
	// Profile selects the algorithm; "" means GenC.
	Profile Profile
	// UserID is the user id Web Chat was started with; it drives role inference for incoming
	// activities without from.role.
	UserID string
	// ReplyHold enables Web Chat's hold of incoming activities (queueIncomingActivitySaga.ts),
	// on the simulated clock of Event.At: while state.activities holds a bot activity, an
	// incoming activity with a truthy replyToId that no activity there has as its id or
	// replyToId (=== on either) is held. It goes on when a later delivered activity has that id,
	// or state.activities has one with that id or replyToId as another is delivered, or after
	// ReplyHoldTimeout ms; activities one delivery lets go follow it in the order they were
	// held, breadth first. Posts and deletes change what the hold sees but release nothing. A
	// fulfilled event whose echo is held completes its send when that echo is delivered. Held
	// activities still waiting when the log ends are not in the order. Conformance vectors run
	// without it; the differential tests (sortkeys/difftest) compare it with Web Chat's own
	// sagas.
	ReplyHold bool
	// ScreenHistory makes every Apply run the rendering layer's keys walk, as Web Chat does after
	// every change; keys can depend on that history (conformance README "From order to
	// screen"). It costs O(n) per event. Without it, each Screen call walks once. Either way a
	// walk over the same list as the last one is skipped, as Web Chat walks after changes only.
	ScreenHistory bool
}

// ReplyHoldTimeout is how long, in simulated milliseconds, an incoming activity waits for the
// activity its replyToId names (Web Chat: 5 seconds).
const ReplyHoldTimeout = 5000

// Item is one entry of state.activities.
type Item struct {
	// Name is the id, or the clientActivityID while the activity is pending without an id.
	Name string
	// ID is the activity id ("" while pending).
	ID string
	// ClientActivityID is channelData.clientActivityID, if any.
	ClientActivityID string
	// Pending is true while an outgoing activity has not been fulfilled.
	Pending bool
	// Role is from.role, or the role Web Chat infers when it is absent: "user" when from.id is
	// the user id, "bot" for any other from.id, else "channel" (WEBCHAT-ORDERING §3 step 1).
	Role string
	// Activity is the JSON of the revision the store holds, as it was delivered.
	Activity json.RawMessage
	// Arrival is the 0-based index, among all Apply calls, of the event that delivered this
	// revision (for a held reply: the event that released it).
	Arrival int
	// Unit is the gen-c sorting unit: "" for a plain activity, "livestream:<session id>" or
	// "howto:<isPartOf @id>". gen-a has no units (always ""); gen-b gives "part:<isPartOf @id>"
	// for an activity it keeps among its part-of peers.
	Unit string
}

// Bubble is one rendered bubble on the screen.
type Bubble struct {
	// Name names the revision shown (id, or clientActivityID while pending).
	Name string
	// Key is the bubble's key (revisions with one key share a bubble).
	Key int
	// First is the index in the UI list of the key's first revision.
	First int
	// IDs are the activity ids of the key's revisions in the UI list (conformance README "From
	// order to screen", steps 1 and 2), in that list's order: a livestream's revisions, a post's
	// echo, a deleted revision kept on screen. Pending revisions, which have no id, are left out;
	// an id the list holds twice is listed twice.
	IDs []string
	// Activity is the JSON of the revision shown, as it was delivered or posted (a deleted
	// revision kept on screen included), and Role its role as Item.Role gives it.
	Activity json.RawMessage
	Role     string
}

// Replay replays an activity log against one profile. It is not safe for concurrent use.
type Replay struct {
	st *state
}

// New returns an empty Replay.
func New(opts Options) *Replay { return newReplay(opts) }

// Apply applies one event. It returns an error only for unusable input (an activity that is not
// a JSON object or is larger than 2 GiB − 1 bytes, ErrActivityTooLarge; an unknown op; a
// fulfilled event without clientActivityID) and, after math.MaxInt32 events, ErrLogTooLong; the
// state is then unchanged. The Replay keeps ev.Activity
// (Item.Activity hands it back) and reads ids from its bytes in place: the caller must not modify
// them afterwards.
func (r *Replay) Apply(ev Event) error { return r.apply(ev) }

// Order returns state.activities, top to bottom (conformance "order"). It is computed on demand.
func (r *Replay) Order() []Item { return r.order() }

// Names returns the Name of every Item of Order.
func (r *Replay) Names() []string { return r.names() }

// Screen returns the rendered bubbles top to bottom (conformance "screen"). gen-c follows the
// conformance README's "From order to screen"; gen-a and gen-b apply the same rules as a best
// effort. The keys walk is performed on demand and remembers its records for the next call, so
// calling Screen after every event reproduces Web Chat's walk-per-event history exactly.
func (r *Replay) Screen() []Bubble { return r.screen() }

// Len is the number of entries of state.activities.
func (r *Replay) Len() int { return r.length() }

// Vector is one conformance vector file (conformance README "File format").
type Vector struct {
	Name    string        `json:"name"`
	Profile string        `json:"profile"`
	Source  string        `json:"source"`
	UserID  string        `json:"userID"`
	Events  []VectorEvent `json:"events"`
}

// VectorEvent is an Event or, when Op is "expect", a checkpoint.
type VectorEvent struct {
	Event
	// Order is the expected state.activities names (expect only).
	Order []string `json:"order,omitempty"`
	// Screen is the expected bubble names; nil when the checkpoint has no screen.
	Screen []string `json:"screen,omitempty"`
}

// OpExpect marks a checkpoint in a Vector.
const OpExpect Op = "expect"

// LoadVector reads and decodes one vector file. It checks that the profile is known and that
// every event has a known op.
func LoadVector(path string) (*Vector, error) { return loadVector(path) }

// DateParse is JavaScript's Date.parse(s) as V8 computes it (Web Chat runs in Chrome, Edge or
// Node; WEBCHAT-ORDERING §4 reads timestamps with new Date(timestamp)), in milliseconds since
// 1970-01-01T00:00:00Z, or NaN where V8 gives NaN. A date-time without an offset is read as UTC,
// the zone the conformance vectors were recorded in. The replay reads timestamps the same way.
func DateParse(s string) float64 { return parseDate(s) }
