// Package findings checks an activity log against what Web Chat needs to show it in the service's
// order, and reports every problem as a Finding with a stable rule id.
//
// Check replays the log with the sortkeys model (profile gen-a, gen-b or gen-c) and applies the
// rules below. Each finding names the rule, its severity, the event index and id of the activity,
// and a one-line explanation. Severities:
//
//   - MUST: a requirement of Web Chat's docs/SORTING.md, docs/LIVESTREAMING.md or of the Direct
//     Line echo contract is broken (WEBCHAT-ORDERING §2, §7.4).
//   - SHOULD: a recommendation (WEBCHAT-ORDERING §8) is not followed.
//   - DROP-or-MISPLACE: Web Chat would drop the activity or show it somewhere other than where the
//     service put it.
//
// "Delivered" activities are those of incoming events and the echoes of fulfilled events (when
// not already delivered). The service's order is the sequence id order when every delivered
// activity with an id carries a numeric webchat:sequence-id, else the delivery order; activities
// without an id have no place in it (DL007 reports them).
//
// Rules (the Rules table carries the same ids and severities and a longer explanation):
//
//	ID                                        Severity          Reported when
//	DL001-timestamp-missing                   MUST              a delivered activity has no timestamp
//	DL002-timestamp-unparseable               DROP-or-MISPLACE  timestamp is not a string, or JavaScript's Date gives NaN, and no numeric sequence id covers it
//	DL003-timestamp-not-iso                   MUST              timestamp is not an RFC 3339 date-time with offset and fields in range
//	DL004-timestamp-no-milliseconds           SHOULD            timestamp has fewer than 3 fractional digits
//	DL005-timestamp-not-increasing            SHOULD            timestamp is not later than the previous one in the service's order
//	DL006-activity-malformed                  MUST              a member has the wrong JSON type, or the replay rejected the event
//	DL007-id-missing                          MUST              a delivered activity (not an echo) has no id
//	DL008-type-without-renderer               SHOULD            a type Web Chat has no renderer for (trace, endOfConversation, ...)
//	DL010-sequence-id-partial                 MUST              webchat:sequence-id is missing while other activities have one
//	DL011-sequence-id-string                  DROP-or-MISPLACE  webchat:sequence-id is a string or another non-number
//	DL012-sequence-id-not-integer             MUST              webchat:sequence-id is a fraction or beyond ±(2^53 − 1)
//	DL013-sequence-id-duplicate               MUST              two different activities share a sequence id
//	DL014-sequence-id-decreasing              SHOULD            a sequence id is delivered after a higher one
//	DL020-localtimestamp-missing              MUST              a user activity (posted or delivered) has no localTimestamp
//	DL021-localtimestamp-changed              MUST              the echo's localTimestamp differs from the posted one
//	DL022-localtimestamp-overwritten          SHOULD            a user activity's localTimestamp equals its server timestamp
//	DL030-echo-without-client-activity-id     DROP-or-MISPLACE  an echo has no channelData.clientActivityID
//	DL031-echo-without-id                     MUST              an echo has no id
//	DL032-echo-not-from-user                  DROP-or-MISPLACE  an echo's role is not the user's, as Web Chat infers it
//	DL033-echo-client-activity-id-changed     DROP-or-MISPLACE  an echo carries another clientActivityID than its post
//	DL040-livestream-after-final              DROP-or-MISPLACE  a new livestream revision arrives after the session's final
//	DL041-livestream-final-without-stream-id  DROP-or-MISPLACE  streamType final without streamId
//	DL042-livestream-stream-sequence-invalid  DROP-or-MISPLACE  streamSequence of an interim is not an integer >= 1
//	DL043-livestream-revision-id-reused       DROP-or-MISPLACE  a livestream revision reuses an activity id, or comes again before the final
//	DL044-livestream-interim-not-typing       DROP-or-MISPLACE  streamType streaming/informative on a non-typing activity
//	DL050-part-of-id-invalid                  DROP-or-MISPLACE  isPartOf["@id"] is neither a blank node nor a URL
//	DL051-position-not-number                 DROP-or-MISPLACE  position of the Message entity is not a number
//	DL052-part-of-changed                     DROP-or-MISPLACE  isPartOf changes between revisions
//	DL060-reply-to-unknown                    SHOULD            replyToId names an activity that never arrives, and Web Chat holds the reply
//	DL070-order-inverted                      DROP-or-MISPLACE  a bubble on the screen is shown out of the service's order
//
// DL070 compares the service's order with the screen the model predicts (sortkeys Replay.Screen,
// conformance README "From order to screen"), the bubbles a person sees, for every profile. A
// bubble merges revisions (a livestream's, a post and its echo, updates of one id) and spans the
// places in the service's order of the delivered activities among them (Span, Bubble.IDs); hidden
// activities and bubbles without a delivered revision are not counted. Two bubbles are shown in
// the opposite order to the server when the service delivered every activity of the lower one
// before any of the upper one, so a livestream is in order whether Web Chat shows it at its first
// revision's place or at its final's. The summary counts those pairs (Summary.InvertedPairs,
// O(n log n)), and DL070 reports each bubble outside one longest run that keeps the service's
// order (Summary.Moved), on its first delivered activity, naming a bubble it is inverted with.
package findings
