package findings

// Severity says how serious a finding is.
type Severity string

// Severities, from the Web Chat documentation's wording and the model's prediction.
const (
	// Must: a requirement Web Chat's docs/SORTING.md, docs/LIVESTREAMING.md or the Direct Line
	// echo contract states (WEBCHAT-ORDERING §2, §7.4) is broken.
	Must Severity = "MUST"
	// Should: a recommendation (WEBCHAT-ORDERING §8) is not followed.
	Should Severity = "SHOULD"
	// DropOrMisplace: Web Chat would drop the activity or show it somewhere other than where the
	// service put it.
	DropOrMisplace Severity = "DROP-or-MISPLACE"
)

// Rule is one conformance rule. ID is stable: tools and people may filter on it.
type Rule struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Doc      string   `json:"doc"`
}

// Rule ids. The package documentation lists them with their severities; TestDocListsEveryRule
// keeps the two in step.
const (
	TimestampMissing       = "DL001-timestamp-missing"
	TimestampUnparseable   = "DL002-timestamp-unparseable"
	TimestampNotISO        = "DL003-timestamp-not-iso"
	TimestampNoMillis      = "DL004-timestamp-no-milliseconds"
	TimestampNotIncreasing = "DL005-timestamp-not-increasing"
	ActivityMalformed      = "DL006-activity-malformed"
	IDMissing              = "DL007-id-missing"
	TypeWithoutRenderer    = "DL008-type-without-renderer"

	SequenceIDPartial    = "DL010-sequence-id-partial"
	SequenceIDString     = "DL011-sequence-id-string"
	SequenceIDNotInteger = "DL012-sequence-id-not-integer"
	SequenceIDDuplicate  = "DL013-sequence-id-duplicate"
	SequenceIDDecreasing = "DL014-sequence-id-decreasing"

	LocalTimestampMissing     = "DL020-localtimestamp-missing"
	LocalTimestampChanged     = "DL021-localtimestamp-changed"
	LocalTimestampOverwritten = "DL022-localtimestamp-overwritten"

	EchoWithoutClientActivityID = "DL030-echo-without-client-activity-id"
	EchoWithoutID               = "DL031-echo-without-id"
	EchoNotFromUser             = "DL032-echo-not-from-user"
	EchoClientActivityIDChanged = "DL033-echo-client-activity-id-changed"

	LivestreamAfterFinal         = "DL040-livestream-after-final"
	LivestreamFinalWithoutStream = "DL041-livestream-final-without-stream-id"
	LivestreamSequenceInvalid    = "DL042-livestream-stream-sequence-invalid"
	LivestreamRevisionIDReused   = "DL043-livestream-revision-id-reused"
	LivestreamInterimNotTyping   = "DL044-livestream-interim-not-typing"
	PartOfIDInvalid              = "DL050-part-of-id-invalid"
	PositionNotNumber            = "DL051-position-not-number"
	PartOfChanged                = "DL052-part-of-changed"
	ReplyToUnknown               = "DL060-reply-to-unknown"
	OrderInverted                = "DL070-order-inverted"
)

// Rules is the rule table, in id order. Severity and Doc here are what reports carry.
var Rules = []Rule{
	{TimestampMissing, Must, "A delivered activity has no timestamp. SORTING.md: timestamp is required and assigned by the service; without it (and without a sequence id) Web Chat appends the activity and later arrivals pass over it."},
	{TimestampUnparseable, DropOrMisplace, "timestamp is not a string, or a string JavaScript's Date cannot parse, and no numeric webchat:sequence-id covers it: its logical timestamp is NaN or undefined, so Web Chat appends it at the end (getLogicalTimestamp.ts)."},
	{TimestampNotISO, Must, "timestamp is not an ISO 8601 / RFC 3339 date-time with a UTC offset and its fields in range, e.g. 2000-01-23T12:34:56.000Z (SORTING.md): not a string, not a date at all, another form, or a day or time that does not exist. Browsers may parse other forms differently or as local time, and roll impossible days over."},
	{TimestampNoMillis, Should, "timestamp has fewer than three fractional digits; activities within one second tie and fall back to arrival order (SORTING.md recommends 1 ms resolution; WebChat#4204)."},
	{TimestampNotIncreasing, Should, "Along the service's order, timestamp is equal to or earlier than the previous activity's; the service should bump it by 1 ms so arrival order never decides (WEBCHAT-ORDERING §8). Re-deliveries of an id are not compared."},
	{ActivityMalformed, Must, "The activity JSON has a member of the wrong type (for example from as a string), or the replay could not use the event; Web Chat may fail on it."},
	{IDMissing, Must, "A delivered activity (other than an echo) has no id. Web Chat invents a random one, so later updates never replace it and livestreams cannot link to it (createGroupedActivitiesReducer.ts)."},
	{TypeWithoutRenderer, Should, "The activity's type is none Web Chat renders or hides (message, typing, conversationUpdate, event, invoke): trace, endOfConversation, handoff and the like reach Web Chat main's fallback renderer, which throws \"No renderer for activity of type …\" and may draw an error box in that slot. The service should not send them to Web Chat clients (WEBCHAT-ORDERING §5.2). The predicted screen leaves them out."},
	{SequenceIDPartial, Must, "channelData[\"webchat:sequence-id\"] is missing here but present on other activities. Sequence ids and epoch milliseconds share one number space, so every activity with a sequence id sorts before every one without (WEBCHAT-ORDERING §4.4)."},
	{SequenceIDString, DropOrMisplace, "webchat:sequence-id is a string (or another non-number); Web Chat ignores it and sorts by timestamp instead (getLogicalTimestamp.ts: typeof === 'number')."},
	{SequenceIDNotInteger, Must, "webchat:sequence-id is a number but not a safe integer in JavaScript, an integer within ±(2^53 − 1) (SORTING.md: integer); beyond it, neighbouring integers read as one number."},
	{SequenceIDDuplicate, Must, "Two different activities carry the same webchat:sequence-id (SORTING.md: unique); ties fall back to arrival order. An update of the same id may keep its sequence id."},
	{SequenceIDDecreasing, Should, "Along delivery order a sequence id is lower than one delivered before it: the service delivered out of its own order, so clients see activities move."},
	{LocalTimestampMissing, Must, "A user activity has no localTimestamp (SORTING.md: required on outgoing activities); Web Chat places a message being sent by comparing localTimestamp with earlier user messages."},
	{LocalTimestampChanged, Must, "The echo's localTimestamp differs from the one the client posted; the service must return it unchanged (WEBCHAT-ORDERING §7.4; field case R01 ii, R22)."},
	{LocalTimestampOverwritten, Should, "A user activity's localTimestamp is identical to its server timestamp: it looks overwritten with server time, which makes the next message being sent jump (field case R01 ii)."},
	{EchoWithoutClientActivityID, DropOrMisplace, "The echo of a posted activity has no channelData.clientActivityID: Web Chat cannot match it to the pending message, which stays and then fails, and the echo shows as a second bubble."},
	{EchoWithoutID, Must, "The echo of a posted activity has no id; Web Chat only accepts an echo with a non-empty id, so the send ends as \"send failed\" (postActivitySaga.ts)."},
	{EchoNotFromUser, DropOrMisplace, "An activity carries the clientActivityID of a pending post but Web Chat does not take it for the user's: from.role is not \"user\", or it is absent and from.id is not the user id. It is ordered as another sender's activity, not as the echo (createGroupedActivitiesReducer.ts; conformance gen-c/outgoing-echo-without-user-role)."},
	{EchoClientActivityIDChanged, DropOrMisplace, "A user activity looks like the echo of a pending post (same type and text) but carries another channelData.clientActivityID, one no post used: Web Chat matches clientActivityID exactly, so the post stays pending and then fails, and the echo shows as a second bubble (WEBCHAT-ORDERING §7.4)."},
	{LivestreamAfterFinal, DropOrMisplace, "A livestream revision arrives after its session's final activity; Web Chat has sealed the session and drops it (LIVESTREAMING.md, upsert.ts), while 4.18 (gen-a), which has no sealing, shows it in place of the final. The same activity delivered again (same id and JSON, as a reconnect may) changes nothing and is not reported."},
	{LivestreamFinalWithoutStream, DropOrMisplace, "streamType \"final\" without a non-empty streamId: not a livestream activity, so the session is never concluded and the final shows as its own bubble."},
	{LivestreamSequenceInvalid, DropOrMisplace, "A streaming or informative revision whose streamSequence is not an integer >= 1: not a livestream activity, so it is not joined to its session."},
	{LivestreamRevisionIDReused, DropOrMisplace, "A livestream revision reuses an activity id already delivered, or (gen-c) the same revision is delivered again before the final; Web Chat main keeps both entries in the session and its UI fails (LIVESTREAMING.md: ids unique; upsert.ts does not deduplicate). gen-a and gen-b replace the earlier activity with that id instead."},
	{LivestreamInterimNotTyping, DropOrMisplace, "streamType \"streaming\" or \"informative\" on an activity that is not typing: not a livestream activity, shown as a separate bubble."},
	{PartOfIDInvalid, DropOrMisplace, "isPartOf[\"@id\"] of the schema.org Message entity is not a blank node (_:...) or a URL; Web Chat main (gen-c) does not group the activity (the gen-b prerelease groups any string)."},
	{PositionNotNumber, DropOrMisplace, "position of the schema.org Message entity is not a JSON number; Web Chat rejects the entity and does not group the activity."},
	{PartOfChanged, DropOrMisplace, "isPartOf differs between revisions of one activity or one livestream session; Web Chat leaves the old entry behind (undefined behaviour, duplicate entries). gen-c keeps only HowTo groupings together, so a change elsewhere is not reported there; gen-a groups nothing and is not checked."},
	{ReplyToUnknown, Should, "replyToId names an activity that never arrives, and Web Chat holds the activity up to 5 s before showing it: reported only when it does, that is when a bot activity came before it and no earlier activity replies to the same id (queueIncomingActivitySaga.ts)."},
	{OrderInverted, DropOrMisplace, "The model's predicted screen shows a bubble below one whose activities the service delivered after all of its own (sequence id when every activity has one, else delivery order); a bubble spans the delivered activities among its revisions. One finding per moved bubble, naming a bubble it is inverted with; the summary counts the pairs shown in the opposite order to the server."},
}

// RuleByID returns the rule with that id.
func RuleByID(id string) (Rule, bool) {
	for _, r := range Rules {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}
