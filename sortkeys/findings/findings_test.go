package findings

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/directline-go/directline/sortkeys"
)

const userID = "u-user"

func in(js string) sortkeys.Event {
	return sortkeys.Event{Op: sortkeys.OpIncoming, Activity: json.RawMessage(js)}
}
func posted(js string) sortkeys.Event {
	return sortkeys.Event{Op: sortkeys.OpPost, Activity: json.RawMessage(js)}
}
func fulfilled(cid, js string) sortkeys.Event {
	return sortkeys.Event{Op: sortkeys.OpFulfilled, ClientActivityID: cid, Activity: json.RawMessage(js)}
}

// bot is a conforming bot message: id, sequence id and a millisecond UTC timestamp.
func bot(id string, seq int, extra string) sortkeys.Event {
	return in(fmt.Sprintf(`{"type":"message","id":%q,"timestamp":"2024-05-01T10:00:%02d.000Z","from":{"id":"bot","role":"bot"},"text":"t %s","channelData":{"webchat:sequence-id":%d}%s}`, id, seq, id, seq, extra))
}

// user is a conforming user message as delivered by the service.
func user(id string, seq int, cid, lt string) sortkeys.Event {
	return in(fmt.Sprintf(`{"type":"message","id":%q,"timestamp":"2024-05-01T10:00:%02d.000Z","localTimestamp":%q,"from":{"id":"u-user","role":"user"},"text":"hi","channelData":{"clientActivityID":%q,"webchat:sequence-id":%d}}`, id, seq, lt, cid, seq))
}

const postC1 = `{"type":"message","localTimestamp":"2024-05-01T10:00:02.000+02:00","from":{"id":"u-user","role":"user"},"text":"hi","channelData":{"clientActivityID":"c1"}}`

const postedLT = "2024-05-01T10:00:02.000+02:00"

// echoC1 is the echo of postC1; an empty cid, id or lt leaves that member out.
func echoC1(cid, id, lt string) string {
	m := map[string]any{
		"type": "message", "timestamp": "2024-05-01T10:00:07.000Z", "text": "hi",
		"from": map[string]any{"id": "u-user", "role": "user"},
	}
	cd := map[string]any{"webchat:sequence-id": 7}
	if cid != "" {
		cd["clientActivityID"] = cid
	}
	m["channelData"] = cd
	if id != "" {
		m["id"] = id
	}
	if lt != "" {
		m["localTimestamp"] = lt
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// Stream helpers: typing revisions and the final, in channelData form, each with its own seq.
func interim(id, streamID string, seq int, streamSeq string) sortkeys.Event {
	sid := ""
	if streamID != "" {
		sid = fmt.Sprintf(`,"streamId":%q`, streamID)
	}
	return in(fmt.Sprintf(`{"type":"typing","id":%q,"timestamp":"2024-05-01T10:00:%02d.000Z","from":{"id":"bot","role":"bot"},"text":"chunk","channelData":{"webchat:sequence-id":%d,"streamType":"streaming","streamSequence":%s%s}}`, id, seq, seq, streamSeq, sid))
}

func final(id, streamID string, seq int) sortkeys.Event {
	sid := ""
	if streamID != "" {
		sid = fmt.Sprintf(`,"streamId":%q`, streamID)
	}
	return in(fmt.Sprintf(`{"type":"message","id":%q,"timestamp":"2024-05-01T10:00:%02d.000Z","from":{"id":"bot","role":"bot"},"text":"done","channelData":{"webchat:sequence-id":%d,"streamType":"final"%s}}`, id, seq, seq, sid))
}

func part(id string, seq int, partOfID, position string) sortkeys.Event {
	return bot(id, seq, fmt.Sprintf(`,"entities":[{"type":"https://schema.org/Message","@type":"Message","@context":"https://schema.org","@id":"","isPartOf":{"@id":%q,"@type":"HowTo"},"position":%s}]`, partOfID, position))
}

func ts(id, timestamp string) sortkeys.Event {
	return in(fmt.Sprintf(`{"type":"message","id":%q,"timestamp":%s,"from":{"id":"bot","role":"bot"},"text":"x"}`, id, timestamp))
}

func events(evs ...sortkeys.Event) []sortkeys.Event { return evs }

// streamAt is a livestream revision with sequence id seq and timestamp second sec: the first
// (no streamID), an interim, or the final when id starts with f.
func streamAt(id, streamID string, seq, sec int) sortkeys.Event {
	typ, meta := "typing", fmt.Sprintf(`"streamType":"streaming","streamSequence":%d`, seq)
	if strings.HasPrefix(id, "f") {
		typ, meta = "message", `"streamType":"final"`
	}
	if streamID != "" {
		meta += fmt.Sprintf(`,"streamId":%q`, streamID)
	}
	return in(fmt.Sprintf(`{"type":%q,"id":%q,"timestamp":"2024-05-01T10:00:%02d.000Z","from":{"id":"bot","role":"bot"},"text":"t","channelData":{"webchat:sequence-id":%d,%s}}`, typ, id, sec, seq, meta))
}

// partOfType is a bot message, part of the grouping id of type typ.
func partOfType(id, group, typ string) sortkeys.Event {
	return bot(id, 1, fmt.Sprintf(`,"entities":[{"type":"https://schema.org/Message","@type":"Message","@id":"","isPartOf":{"@id":%q,"@type":%q}}]`, group, typ))
}

// streamPartOf is interim revision id of livestream streamID (the first when streamID is ""),
// part of the grouping group of type typ.
func streamPartOf(id, streamID string, seq int, group, typ string) sortkeys.Event {
	sid := ""
	if streamID != "" {
		sid = fmt.Sprintf(`,"streamId":%q`, streamID)
	}
	return in(fmt.Sprintf(`{"type":"typing","id":%q,"timestamp":"2024-05-01T10:00:%02d.000Z","from":{"id":"bot","role":"bot"},"text":"chunk","channelData":{"webchat:sequence-id":%d,"streamType":"streaming","streamSequence":%d%s},"entities":[{"type":"https://schema.org/Message","@type":"Message","@id":"","isPartOf":{"@id":%q,"@type":%q}}]}`, id, seq, seq, seq, sid, group, typ))
}

// nullCDStream is a livestream activity whose metadata is in a streaminfo entity, with channelData
// holding the same members as null; its type is message for a final, typing otherwise.
func nullCDStream(id, meta string) sortkeys.Event {
	typ := "typing"
	if strings.Contains(meta, `"final"`) {
		typ = "message"
	}
	return in(fmt.Sprintf(`{"type":%q,"id":%q,"timestamp":"2024-05-01T10:00:01.000Z","from":{"id":"bot","role":"bot"},"text":"t","channelData":{"streamType":null,"streamId":null,"streamSequence":null},"entities":[{"type":"streaminfo",%s}]}`, typ, id, meta))
}

// TestRules gives every rule one log that triggers it and one that does not.
func TestRules(t *testing.T) {
	cases := []struct {
		rule      string
		bad, good []sortkeys.Event
		// at is the event index the finding must name.
		at int
	}{
		{TimestampMissing, events(in(`{"type":"message","id":"a","from":{"id":"bot"},"text":"x"}`)), events(ts("a", `"2024-05-01T10:00:00.000Z"`)), 0},
		{TimestampUnparseable, events(ts("a", `"2024-05-01T10:00:00.000Z"`), ts("b", `"garbage"`)), events(bot("a", 1, ""), in(`{"type":"message","id":"b","timestamp":"garbage","from":{"id":"bot"},"text":"x","channelData":{"webchat:sequence-id":2}}`)), 1},
		{TimestampUnparseable, events(ts("a", `12345`)), events(ts("a", `"2024-05-01T10:00:00.000Z"`)), 0},
		{TimestampNotISO, events(ts("a", `"Wed, 01 May 2024 10:00:00 GMT"`)), events(ts("a", `"2024-05-01T10:00:00.000+02:00"`)), 0},
		{TimestampNotISO, events(ts("a", `"2024-05-01T10:00:00.000"`)), events(ts("a", `"2024-05-01T10:00:00.000Z"`)), 0},
		{TimestampNoMillis, events(ts("a", `"2024-05-01T10:00:00Z"`)), events(ts("a", `"2024-05-01T10:00:00.1234567Z"`)), 0},
		{TimestampNotIncreasing, events(ts("a", `"2024-05-01T10:00:01.000Z"`), ts("b", `"2024-05-01T10:00:01.000Z"`)), events(ts("a", `"2024-05-01T10:00:01.000Z"`), ts("b", `"2024-05-01T10:00:01.001Z"`)), 1},
		// A final may carry its stream's start time, to stay where the stream began
		// (WEBCHAT-ORDERING §8); a final with any other earlier time may not.
		{TimestampNotIncreasing, events(streamAt("s1", "", 1, 1), streamAt("s2", "s1", 2, 3), streamAt("f1", "s1", 3, 2)), events(streamAt("s1", "", 1, 1), streamAt("s2", "s1", 2, 3), streamAt("f1", "s1", 3, 1)), 2},
		{TimestampNotIncreasing, events(ts("a", `"2024-05-01T10:00:01.000Z"`), ts("b", `"2024-05-01T10:00:00.000Z"`)), events(ts("a", `"2024-05-01T10:00:01.000Z"`), ts("a", `"2024-05-01T09:00:00.000Z"`)), 1},
		{ActivityMalformed, events(in(`{"type":"message","id":"a","timestamp":"2024-05-01T10:00:00.000Z","from":"bot","text":"x"}`)), events(bot("a", 1, "")), 0},
		{ActivityMalformed, events(bot("a", 1, ""), in(`[1,2]`)), events(bot("a", 1, "")), 1},
		{IDMissing, events(in(`{"type":"message","timestamp":"2024-05-01T10:00:00.000Z","from":{"id":"bot"},"text":"x"}`)), events(bot("a", 1, "")), 0},
		{TypeWithoutRenderer, events(in(`{"type":"trace","id":"t","timestamp":"2024-05-01T10:00:00.000Z","from":{"id":"bot"},"text":"x"}`)), events(in(`{"type":"event","id":"e","timestamp":"2024-05-01T10:00:00.000Z","from":{"id":"bot"},"name":"x"}`)), 0},
		{TypeWithoutRenderer, events(in(`{"type":"endOfConversation","id":"t","timestamp":"2024-05-01T10:00:00.000Z","from":{"id":"bot"}}`)), events(bot("a", 1, "")), 0},
		// A numeric id is an id to Web Chat; DL006 reports that it is not a string.
		{IDMissing, events(in(`{"type":"message","timestamp":"2024-05-01T10:00:00.000Z","from":{"id":"bot"},"text":"x"}`)), events(in(`{"type":"message","id":1,"timestamp":"2024-05-01T10:00:00.000Z","from":{"id":"bot"},"text":"x"}`)), 0},
		{SequenceIDPartial, events(bot("a", 1, ""), ts("b", `"2024-05-01T10:00:09.000Z"`)), events(bot("a", 1, ""), bot("b", 2, "")), 1},
		{SequenceIDString, events(in(`{"type":"message","id":"a","timestamp":"2024-05-01T10:00:00.000Z","from":{"id":"bot"},"text":"x","channelData":{"webchat:sequence-id":"12"}}`)), events(bot("a", 12, "")), 0},
		{SequenceIDNotInteger, events(in(`{"type":"message","id":"a","timestamp":"2024-05-01T10:00:00.000Z","from":{"id":"bot"},"text":"x","channelData":{"webchat:sequence-id":1.5}}`)), events(bot("a", 2, "")), 0},
		{SequenceIDDuplicate, events(bot("a", 1, ""), bot("b", 1, "")), events(bot("a", 1, ""), bot("a", 1, `,"value":"updated"`)), 1},
		{SequenceIDDecreasing, events(bot("a", 2, ""), bot("b", 1, "")), events(bot("b", 1, ""), bot("a", 2, "")), 1},
		{LocalTimestampMissing, events(in(`{"type":"message","id":"u","timestamp":"2024-05-01T10:00:00.000Z","from":{"id":"u-user"},"text":"x"}`)), events(user("u", 1, "c0", "2024-05-01T11:00:00.000+01:00")), 0},
		{LocalTimestampMissing, events(posted(`{"type":"message","from":{"id":"u-user","role":"user"},"text":"hi","channelData":{"clientActivityID":"c1"}}`)), events(posted(postC1)), 0},
		{LocalTimestampChanged, events(posted(postC1), fulfilled("c1", echoC1("c1", "u1", "2024-05-01T08:00:07.000Z"))), events(posted(postC1), fulfilled("c1", echoC1("c1", "u1", postedLT))), 1},
		{LocalTimestampChanged, events(posted(postC1), in(echoC1("c1", "u1", ""))), events(posted(postC1), in(echoC1("c1", "u1", postedLT))), 1},
		{LocalTimestampOverwritten, events(user("u", 1, "c0", "2024-05-01T10:00:01.000Z")), events(user("u", 1, "c0", "2024-05-01T10:00:00.000Z")), 0},
		{EchoWithoutClientActivityID, events(posted(postC1), fulfilled("c1", echoC1("", "u1", postedLT))), events(posted(postC1), fulfilled("c1", echoC1("c1", "u1", postedLT))), 1},
		{EchoWithoutClientActivityID, events(posted(postC1), in(echoC1("", "u1", postedLT))), events(posted(postC1), in(`{"type":"message","id":"u9","timestamp":"2024-05-01T10:00:07.000Z","localTimestamp":"2024-05-01T10:00:02.000Z","from":{"id":"u-user","role":"user"},"text":"other text","channelData":{"webchat:sequence-id":7}}`)), 1},
		{EchoWithoutID, events(posted(postC1), in(echoC1("c1", "", postedLT))), events(posted(postC1), in(echoC1("c1", "u1", postedLT))), 1},
		{EchoNotFromUser, events(posted(postC1), in(strings.Replace(echoC1("c1", "u1", postedLT), `"role":"user"`, `"role":"bot"`, 1))), events(posted(postC1), in(echoC1("c1", "u1", postedLT))), 1},
		{EchoNotFromUser, events(posted(postC1), in(strings.Replace(echoC1("c1", "u1", postedLT), `{"id":"u-user","role":"user"}`, `{"id":"dl_other"}`, 1))), events(posted(postC1), in(strings.Replace(echoC1("c1", "u1", postedLT), `{"id":"u-user","role":"user"}`, `{"id":"u-user"}`, 1))), 1},
		{EchoNotFromUser, events(posted(postC1), in(strings.Replace(echoC1("c1", "u1", postedLT), `"from":{"id":"u-user","role":"user"},`, ``, 1))), events(posted(postC1), in(echoC1("c1", "u1", postedLT))), 1},
		{LivestreamAfterFinal, events(interim("s1", "", 1, "1"), final("f1", "s1", 2), interim("s2", "s1", 3, "2")), events(interim("s1", "", 1, "1"), interim("s2", "s1", 2, "2"), final("f1", "s1", 3)), 2},
		{LivestreamFinalWithoutStream, events(interim("s1", "", 1, "1"), final("f1", "", 2)), events(interim("s1", "", 1, "1"), final("f1", "s1", 2)), 1},
		{LivestreamSequenceInvalid, events(interim("s1", "", 1, "1"), interim("s2", "s1", 2, "1.5")), events(interim("s1", "", 1, "1"), interim("s2", "s1", 2, "2")), 1},
		{LivestreamSequenceInvalid, events(interim("s1", "", 1, `"1"`)), events(interim("s1", "", 1, "1")), 0},
		{LivestreamRevisionIDReused, events(interim("s1", "", 1, "1"), interim("s1", "s1", 2, "2")), events(interim("s1", "", 1, "1"), interim("s2", "s1", 2, "2")), 1},
		{LivestreamInterimNotTyping, events(in(`{"type":"message","id":"s1","timestamp":"2024-05-01T10:00:01.000Z","from":{"id":"bot"},"text":"A","channelData":{"streamType":"streaming","streamSequence":1}}`)), events(interim("s1", "", 1, "1")), 0},
		{PartOfIDInvalid, events(part("a", 1, "h-00001", "1")), events(part("a", 1, "_:h-00001", "1")), 0},
		{PartOfIDInvalid, events(part("a", 1, "h-00001", "1")), events(part("a", 1, "https://example.com/h/1", "1")), 0},
		{PositionNotNumber, events(part("a", 1, "_:g", `"2"`)), events(part("a", 1, "_:g", "2")), 0},
		{PartOfChanged, events(part("a", 1, "_:g1", "1"), part("a", 1, "_:g2", "1")), events(part("a", 1, "_:g1", "1"), part("a", 1, "_:g1", "2")), 1},
		{ReplyToUnknown, events(bot("b0", 1, ""), bot("b1", 2, `,"replyToId":"nope"`)), events(bot("b0", 1, ""), bot("b1", 2, `,"replyToId":"b0"`)), 1},
		{ReplyToUnknown, events(bot("b0", 1, ""), bot("b1", 2, `,"replyToId":"nope"`)), events(bot("b1", 2, `,"replyToId":"nope"`)), 1},
		// The ordering notes' replyToId/firstSetOfActivities: a later reply to the same unknown id
		// shows at once, as the first (the first bot activity) did.
		{ReplyToUnknown, events(bot("b0", 1, ""), bot("b2", 2, `,"replyToId":"nope"`)), events(bot("b1", 1, `,"replyToId":"nope"`), bot("b2", 2, `,"replyToId":"nope"`)), 1},
		// A timestamp that is no date at all is not ISO either, whether or not a sequence id covers it.
		{TimestampNotISO, events(ts("a", `"garbage"`)), events(ts("a", `"2024-05-01t10:00:00.100z"`)), 0},
		{TimestampNotISO, events(bot("a", 1, ""), in(`{"type":"message","id":"b","timestamp":12345,"from":{"id":"bot"},"text":"x","channelData":{"webchat:sequence-id":2}}`)), events(bot("a", 1, ""), bot("b", 2, "")), 1},
		{TimestampNotISO, events(ts("a", `"2024-02-30T10:00:00.000Z"`)), events(ts("a", `"2024-02-29T10:00:00.000Z"`)), 0},
		{TimestampNotISO, events(ts("a", `"2024-03-01T24:00:00.000Z"`)), events(ts("a", `"2000-02-29T23:59:59.000+23:59"`)), 0},
		{TimestampNoMillis, events(ts("a", `"2024-05-01T10:00:00.1Z"`)), events(ts("a", `"2024-05-01T10:00:00.100Z"`)), 0},
		{SequenceIDNotInteger, events(bot("a", 1, ""), in(`{"type":"message","id":"b","timestamp":"2024-05-01T10:00:02.000Z","from":{"id":"bot"},"text":"x","channelData":{"webchat:sequence-id":9007199254740992}}`)), events(bot("a", 1, ""), in(`{"type":"message","id":"b","timestamp":"2024-05-01T10:00:02.000Z","from":{"id":"bot"},"text":"x","channelData":{"webchat:sequence-id":9007199254740991}}`)), 1},
		// An echo under another clientActivityID than its post's (here in other case).
		{EchoClientActivityIDChanged, events(posted(postC1), in(echoC1("C1", "u1", postedLT))), events(posted(postC1), in(echoC1("c1", "u1", postedLT))), 1},
		{EchoClientActivityIDChanged, events(posted(postC1), fulfilled("c1", echoC1("c1", "u1", postedLT)), in(echoC1("c9", "u9", postedLT)), posted(strings.Replace(postC1, `"c1"`, `"c2"`, 1)), in(echoC1("x2", "u2", postedLT))), events(posted(postC1), fulfilled("c1", echoC1("c1", "u1", postedLT)), in(echoC1("c9", "u9", postedLT))), 4},
		// The final delivered again, byte for byte (a reconnect's overlap), changes nothing.
		{LivestreamAfterFinal, events(interim("s1", "", 1, "1"), final("f1", "s1", 2), final("f2", "s1", 3)), events(interim("s1", "", 1, "1"), final("f1", "s1", 2), final("f1", "s1", 2)), 2},
		// An interim delivered again is kept twice in its session.
		{LivestreamRevisionIDReused, events(interim("s1", "", 1, "1"), interim("s2", "s1", 2, "2"), interim("s2", "s1", 2, "2")), events(interim("s1", "", 1, "1"), interim("s2", "s1", 2, "2"), final("f1", "s1", 3), final("f1", "s1", 3)), 2},
		// channelData's streamSequence is invalid, so Web Chat reads the streaminfo entity's, which is valid.
		{LivestreamSequenceInvalid, events(interim("s1", "", 1, "1"), interim("s2", "s1", 2, "0")), events(interim("s1", "", 1, "1"), in(`{"type":"typing","id":"s2","timestamp":"2024-05-01T10:00:02.000Z","from":{"id":"bot","role":"bot"},"text":"chunk","channelData":{"webchat:sequence-id":2,"streamType":"streaming","streamSequence":0},"entities":[{"type":"streaminfo","streamType":"streaming","streamSequence":2,"streamId":"s1"}]}`)), 1},
		{PartOfIDInvalid, events(part("a", 1, "http://example.com:99999", "1")), events(part("a", 1, "http://a%41.com", "1")), 0},
		{PositionNotNumber, events(part("a", 1, "_:g", `[true]`)), events(part("a", 1, "_:g", "1e400")), 0},
		// The same grouping in another member order and in a one-element array is no change.
		{PartOfChanged, events(part("a", 1, "_:g1", "1"), bot("a", 1, `,"entities":[{"type":"https://schema.org/Message","@type":"Message","@id":"","isPartOf":[{"@id":"_:g2","@type":"HowTo"}],"position":1}]`)), events(part("a", 1, "_:g1", "1"), bot("a", 1, `,"entities":[{"type":"https://schema.org/Message","@type":"Message","@id":"","isPartOf":[{"@type":"HowTo","@id":"_:g1","name":"steps"}],"position":1}]`)), 1},
		{OrderInverted, events(ts("a", `"2024-05-01T10:00:10.000Z"`), ts("b", `"2024-05-01T10:00:05.000Z"`)), events(ts("a", `"2024-05-01T10:00:05.000Z"`), ts("b", `"2024-05-01T10:00:10.000Z"`)), 1},
		// Delivered again unchanged (a reconnect's overlap), a and b stay inverted: a re-delivery
		// does not stretch a bubble's span.
		{OrderInverted, events(ts("a", `"2024-05-01T10:00:10.000Z"`), ts("b", `"2024-05-01T10:00:05.000Z"`), ts("a", `"2024-05-01T10:00:10.000Z"`), ts("b", `"2024-05-01T10:00:05.000Z"`)), events(ts("a", `"2024-05-01T10:00:05.000Z"`), ts("b", `"2024-05-01T10:00:10.000Z"`), ts("a", `"2024-05-01T10:00:05.000Z"`)), 1},
		// Only HowTo groupings are kept together in gen-c: changing another isPartOf leaves nothing behind.
		{PartOfChanged, events(part("a", 1, "_:g1", "1"), part("a", 1, "_:g2", "1")), events(partOfType("a", "_:t1", "Conversation"), partOfType("a", "_:t2", "Conversation")), 1},
		// Within a livestream, the same: a move from a HowTo grouping (the session's first) is
		// reported, a move between groupings of other types is not.
		{PartOfChanged, events(streamPartOf("s1", "", 1, "_:h1", "HowTo"), streamPartOf("s2", "s1", 2, "_:t2", "Conversation"), streamPartOf("s3", "s1", 3, "_:t3", "Conversation")), events(streamPartOf("s1", "", 1, "_:t1", "Conversation"), streamPartOf("s2", "s1", 2, "_:t2", "Conversation"), streamPartOf("s3", "s1", 3, "_:t3", "Conversation")), 1},
		// A fulfilled event whose echo carries another clientActivityID than the post's.
		{EchoClientActivityIDChanged, events(posted(postC1), fulfilled("c1", echoC1("c9", "u1", postedLT))), events(posted(postC1), fulfilled("c1", echoC1("c1", "u1", postedLT))), 1},
		// channelData's livestream members are null, as serializers write absent ones; the
		// streaminfo entity says what the activity is.
		{LivestreamAfterFinal, events(nullCDStream("s1", `"streamType":"streaming","streamSequence":1`), nullCDStream("f1", `"streamType":"final","streamId":"s1"`), nullCDStream("s2", `"streamType":"streaming","streamSequence":2,"streamId":"s1"`)), events(nullCDStream("s1", `"streamType":"streaming","streamSequence":1`), nullCDStream("s2", `"streamType":"streaming","streamSequence":2,"streamId":"s1"`), nullCDStream("f1", `"streamType":"final","streamId":"s1"`)), 2},
	}
	seen := map[string]bool{}
	for i, tc := range cases {
		seen[tc.rule] = true
		t.Run(fmt.Sprintf("%s/%d", tc.rule, i), func(t *testing.T) {
			bad := Check(tc.bad, Options{UserID: userID})
			f, ok := find(bad, tc.rule)
			if !ok {
				t.Fatalf("log that should trigger %s did not; findings: %+v", tc.rule, bad.Findings)
			}
			if f.Index != tc.at {
				t.Errorf("finding at index %d, want %d: %+v", f.Index, tc.at, f)
			}
			rule, _ := RuleByID(tc.rule)
			if f.Severity != rule.Severity || f.Message == "" || strings.Contains(f.Message, "\n") {
				t.Errorf("finding %+v: want severity %s and a one-line message", f, rule.Severity)
			}
			good := Check(tc.good, Options{UserID: userID})
			if f, ok := find(good, tc.rule); ok {
				t.Errorf("log that should not trigger %s did: %+v", tc.rule, f)
			}
		})
	}
	for _, r := range Rules {
		if !seen[r.ID] {
			t.Errorf("rule %s has no test case", r.ID)
		}
	}
}

func find(rep Report, rule string) (Finding, bool) {
	for _, f := range rep.Findings {
		if f.Rule == rule {
			return f, true
		}
	}
	return Finding{}, false
}

func TestCleanLogHasNoFindings(t *testing.T) {
	rep := Check(events(
		bot("b0", 1, ""),
		posted(postC1),
		fulfilled("c1", echoC1("c1", "u1", postedLT)),
		interim("s1", "", 8, "1"), interim("s2", "s1", 9, "2"), final("f1", "s1", 10),
		part("p1", 11, "_:g", "1"), part("p2", 12, "_:g", "2"),
		bot("b2", 13, `,"replyToId":"u1"`),
	), Options{UserID: userID})
	if len(rep.Findings) != 0 {
		t.Fatalf("findings on a clean log: %+v", rep.Findings)
	}
	if rep.Summary.ServiceOrder != ServiceOrderSequenceID || rep.Summary.Activities != 8 || rep.Summary.Posts != 1 {
		t.Errorf("summary %+v", rep.Summary)
	}
	if rep := Check(events(bot("b0", 1, "")), Options{UserID: userID}); rep.Summary.Posts != 0 {
		t.Errorf("a log without posts counts %d", rep.Summary.Posts)
	}
	// from with an id and no role, twice; without from, and with a role, not counted.
	rep = Check(events(
		in(`{"type":"message","id":"a","from":{"id":"u-user"}}`), in(`{"type":"message","id":"b","from":{"id":"x","role":""}}`),
		in(`{"type":"message","id":"c"}`), bot("d", 1, ""),
	), Options{UserID: userID})
	if rep.Summary.RoleInferred != 2 || rep.Summary.RoleInferredUser != 1 || rep.Summary.UserID != userID {
		t.Errorf("RoleInferred %d (%d the user's), UserID %q", rep.Summary.RoleInferred, rep.Summary.RoleInferredUser, rep.Summary.UserID)
	}
}

func loadEvents(t *testing.T, name string) ([]sortkeys.Event, string) {
	t.Helper()
	v, err := sortkeys.LoadVector(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var evs []sortkeys.Event
	for _, e := range v.Events {
		evs = append(evs, e.Event)
	}
	return evs, v.UserID
}

// TestFieldCases turns the field reports (field/CASES.md) into findings.
func TestFieldCases(t *testing.T) {
	r13 := []sortkeys.Event{
		in(`{"id":"u1","type":"message","from":{"role":"user"},"channelData":{"webchat:sequence-id":1}}`),
		in(`{"id":"s1a","type":"typing","text":"A","channelData":{"webchat:sequence-id":2,"streamType":"streaming","streamSequence":1}}`),
		in(`{"id":"s1b","type":"typing","text":"A b","channelData":{"webchat:sequence-id":3,"streamId":"s1a","streamType":"streaming","streamSequence":2}}`),
		in(`{"id":"s1f","type":"message","text":"A b c","channelData":{"webchat:sequence-id":4,"streamId":"s1a","streamType":"final"}}`),
		in(`{"id":"u2","type":"message","from":{"role":"user"},"channelData":{"webchat:sequence-id":5}}`),
		// Variant 1: the bot gives stream 2 the first stream's id.
		in(`{"id":"s2a","type":"typing","text":"X","channelData":{"webchat:sequence-id":6,"streamId":"s1a","streamType":"streaming","streamSequence":1}}`),
		in(`{"id":"s2f","type":"message","text":"X y","channelData":{"webchat:sequence-id":7,"streamId":"s1a","streamType":"final"}}`),
	}
	r01 := []sortkeys.Event{
		posted(`{"type":"message","localTimestamp":"2024-05-01T10:00:00.000Z","from":{"id":"u-user","name":"User","role":"user"},"text":"earlier user message","channelData":{"clientActivityID":"c0"}}`),
		fulfilled("c0", `{"type":"message","id":"u0","timestamp":"2024-05-01T10:00:05.000Z","localTimestamp":"2024-05-01T10:00:05.000Z","from":{"id":"u-user","name":"User","role":"user"},"text":"earlier user message","channelData":{"clientActivityID":"c0","webchat:sequence-id":10}}`),
	}
	vec := func(name string) []sortkeys.Event { evs, _ := loadEvents(t, name); return evs }
	cases := []struct {
		name   string
		events []sortkeys.Event
		want   map[string][]string // rule → activity ids
	}{
		{"R01 case ii: service overwrote localTimestamp", r01, map[string][]string{LocalTimestampChanged: {"u0"}, LocalTimestampOverwritten: {"u0"}}},
		{"R01 case ii vector", vec("r01-client-clock-skew-ii.json"), map[string][]string{LocalTimestampOverwritten: {"u0"}}},
		{"R05 unparseable timestamp", vec("r05-unparseable-timestamp.json"), map[string][]string{TimestampUnparseable: {"m1"}}},
		{"R13 variant 1: second stream reuses streamId", r13, map[string][]string{LivestreamAfterFinal: {"s2a", "s2f"}, TimestampMissing: {"u1", "s1a", "s1b", "s1f", "u2", "s2a", "s2f"}}},
		{"R13 scenario A as logged", vec("r13-two-livestreams.json"), map[string][]string{LivestreamAfterFinal: nil}},
		{"R16 string position", vec("quirk-string-position-disables-grouping.json"), map[string][]string{PositionNotNumber: {"a-00002"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(tc.events, Options{UserID: userID})
			for rule, ids := range tc.want {
				var got []string
				for _, f := range rep.Findings {
					if f.Rule == rule {
						got = append(got, f.ActivityID)
					}
				}
				if strings.Join(got, ",") != strings.Join(ids, ",") {
					t.Errorf("%s: got %v, want %v", rule, got, ids)
				}
			}
		})
	}
}

func TestMaxPerRuleKeepsCounts(t *testing.T) {
	var evs []sortkeys.Event
	for i := range 10 {
		evs = append(evs, ts(fmt.Sprint("a", i), fmt.Sprintf(`"2024-05-01T10:00:%02dZ"`, i)))
	}
	rep := Check(evs, Options{MaxPerRule: 3})
	if n := rep.Summary.ByRule[TimestampNoMillis]; n != 10 {
		t.Errorf("ByRule = %d, want 10", n)
	}
	got := 0
	for _, f := range rep.Findings {
		if f.Rule == TimestampNoMillis {
			got++
		}
	}
	if got != 3 {
		t.Errorf("kept %d findings, want 3", got)
	}
	if rep.Summary.Findings != len(rep.Findings)+7 || rep.Count(Should) != rep.Summary.Findings {
		t.Errorf("summary %+v with %d findings kept", rep.Summary, len(rep.Findings))
	}
}

func TestProgressReachesTotal(t *testing.T) {
	var last, total int
	Check(events(bot("a", 1, ""), bot("b", 2, "")), Options{Progress: func(d, n int) { last, total = d, n }})
	if last != 2 || total != 2 {
		t.Errorf("progress ended at %d/%d", last, total)
	}
}

// TestDocListsEveryRule keeps the package documentation's table in step with Rules.
func TestDocListsEveryRule(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	for _, r := range Rules {
		found := false
		for _, l := range lines {
			fields := strings.Fields(strings.TrimPrefix(l, "//"))
			if len(fields) >= 2 && fields[0] == r.ID && fields[1] == string(r.Severity) {
				found = true
			}
		}
		if !found {
			t.Errorf("doc.go has no line %q", r.ID+" "+string(r.Severity))
		}
	}
	// The README's table lists the same rules.
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Rules {
		if row := "| `" + r.ID + "` | " + string(r.Severity) + " | "; !strings.Contains(string(readme), row) {
			t.Errorf("README.md has no row starting %q", row)
		}
	}
}

func TestInversions(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for n := range 60 {
		ranks := rng.Perm(n)
		spans := make([]Span, n)
		for i, r := range ranks {
			spans[i] = Span{r, r}
		}
		var want int64
		for i := range ranks {
			for j := i + 1; j < len(ranks); j++ {
				if ranks[i] > ranks[j] {
					want++
				}
			}
		}
		if got := InvertedPairs(spans, n); got != want {
			t.Fatalf("InvertedPairs(%v) = %d, want %d", ranks, got, want)
		}
		moved := Moved(spans, n)
		last, kept := -1, 0
		for i, m := range moved {
			if !m {
				if ranks[i] < last {
					t.Fatalf("Moved(%v) keeps a decreasing pair", ranks)
				}
				last = ranks[i]
				kept++
			}
		}
		if kept != lis(ranks) {
			t.Fatalf("Moved(%v) keeps %d, longest increasing run is %d", ranks, kept, lis(ranks))
		}
	}
}

// TestSpans checks InvertedPairs and Moved on bubbles of several activities against brute force:
// the places are split at random among up to 12 bubbles, shown in a random order.
func TestSpans(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for range 3000 {
		n := 1 + rng.Intn(30)
		m := 1 + rng.Intn(min(n, 12))
		groups := make([][]int, m)
		for k, place := range rng.Perm(n) {
			g := k
			if k >= m {
				g = rng.Intn(m)
			}
			groups[g] = append(groups[g], place)
		}
		spans := make([]Span, m)
		for g, places := range groups {
			spans[g] = Span{slices.Min(places), slices.Max(places)}
		}
		var want int64
		for i := range spans {
			for j := i + 1; j < m; j++ {
				if spans[j].Last < spans[i].First {
					want++
				}
			}
		}
		if got := InvertedPairs(spans, n); got != want {
			t.Fatalf("InvertedPairs(%v) = %d, want %d", spans, got, want)
		}
		best := 0
		for set := 0; set < 1<<m; set++ {
			if keepsOrder(spans, func(i int) bool { return set&(1<<i) != 0 }) {
				best = max(best, bits.OnesCount(uint(set)))
			}
		}
		moved := Moved(spans, n)
		kept := 0
		for _, mv := range moved {
			if !mv {
				kept++
			}
		}
		if !keepsOrder(spans, func(i int) bool { return !moved[i] }) || kept != best {
			t.Fatalf("Moved(%v) = %v keeps %d, the longest run keeping the order has %d", spans, moved, kept, best)
		}
	}
}

// keepsOrder reports whether no two spans in is are inverted.
func keepsOrder(spans []Span, in func(int) bool) bool {
	for i := range spans {
		for j := i + 1; j < len(spans); j++ {
			if in(i) && in(j) && spans[j].Last < spans[i].First {
				return false
			}
		}
	}
	return true
}

func lis(a []int) int {
	best := make([]int, len(a))
	m := 0
	for i := range a {
		best[i] = 1
		for j := 0; j < i; j++ {
			if a[j] < a[i] && best[j]+1 > best[i] {
				best[i] = best[j] + 1
			}
		}
		m = max(m, best[i])
	}
	return m
}

func TestParseTimestamp(t *testing.T) {
	for _, tc := range []struct {
		s  string
		ok bool
	}{
		{"2024-05-01T10:00:00.000Z", true},
		{"2024-05-01T10:00:00Z", true},
		{"2000-01-23T12:34:56.12345Z", true},
		{"2025-01-01T09:00:02.000+09:00", true},
		{"2024-05-01", true},
		{"2024-05-01T10:00", true},
		{"Wed, 01 May 2024 10:00:00 GMT", true},
		// As V8 reads them: lowercase t and z, a day rolling over into the next month.
		{"2025-01-01t00:00:03.000z", true},
		{"2025-02-30T10:00:00Z", true},
		{"2025-01-01T00:00:05 GMT", false},
		{"", false},
		{"garbage", false},
		{"not-a-date", false},
		{"2025-02-30T25:61:00Z", false},
		{"2025-13-45T99:99:99Z", false},
	} {
		if _, ok := parseTimestamp(tc.s); ok != tc.ok {
			t.Errorf("parseTimestamp(%q) ok = %v, want %v", tc.s, ok, tc.ok)
		}
	}
	a, _ := parseTimestamp("2025-01-01T09:00:02.000+09:00")
	b, _ := parseTimestamp("2025-01-01T00:00:02.000Z")
	if !a.Equal(b) {
		t.Errorf("offset not applied: %v vs %v", a, b)
	}
}

func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"2024-05-01T10:00:00.000Z", "2024-05-01T10:00:00+09:00", "garbage", "2024-13"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkServiceShape(t, s) })
}

func FuzzCheck(f *testing.F) {
	f.Add(`{"type":"message","id":"a","timestamp":"2024-05-01T10:00:00.000Z","channelData":{"webchat:sequence-id":1}}`)
	f.Add(`{"type":"typing","id":"s","channelData":{"streamType":"final","streamSequence":"x"},"entities":[{"type":"https://schema.org/Message","@id":"","@type":"Message","isPartOf":[{"@id":3}],"position":[]}]}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, js string) {
		rep := Check([]sortkeys.Event{in(js), in(js)}, Options{UserID: userID})
		if rep.Summary.Findings < len(rep.Findings) {
			t.Fatalf("summary %d < %d findings", rep.Summary.Findings, len(rep.Findings))
		}
	})
}

func TestEveryProfileCountsInversions(t *testing.T) {
	log := events(
		ts("a", `"2024-05-01T10:00:10.000Z"`),
		ts("b", `"2024-05-01T10:00:05.000Z"`),
		ts("c", `"2024-05-01T10:00:01.000Z"`),
		ts("d", `"2024-05-01T10:00:20.000Z"`),
	)
	for _, p := range []sortkeys.Profile{sortkeys.GenA, sortkeys.GenB, sortkeys.GenC} {
		rep := Check(log, Options{Profile: p})
		// Shown c, b, a, d: the pairs (a,b), (a,c), (b,c) are reversed.
		if rep.Summary.InvertedPairs != 3 || rep.Summary.Moved != 2 || rep.Summary.Profile != p {
			t.Errorf("%s: summary %+v", p, rep.Summary)
		}
		moved := 0
		for _, pl := range rep.Service {
			if pl.Moved {
				moved++
			}
		}
		if moved != 2 || rep.Service[3].Display != 3 {
			t.Errorf("%s: placements %+v", p, rep.Service)
		}
	}
}

// TestInversionsFollowTheScreen: the count and DL070 compare the service's order with the
// bubbles on screen, each standing for the earliest delivered activity among its revisions.
func TestInversionsFollowTheScreen(t *testing.T) {
	echo, echoUser := loadEvents(t, "outgoing-echo-without-user-role.json")
	event := in(`{"type":"event","id":"e","name":"x","timestamp":"2024-05-01T10:00:10.000Z","from":{"id":"bot","role":"bot"}}`)
	livestream := events(interim("r1", "", 1, "1"), bot("x", 2, ""), interim("r2", "r1", 3, "2"))
	finalized := events(interim("r1", "", 1, "1"), bot("x", 2, ""), final("f", "r1", 3))
	cases := []struct {
		name    string
		profile sortkeys.Profile
		events  []sortkeys.Event
		userID  string
		pairs   int64
		// moved are the ids DL070 reports; screen is Report.ScreenService.
		moved  []string
		screen []int
	}{
		// The echo joins its pending post's bubble, above the bot message delivered before it.
		{"echo at its post's place", sortkeys.GenC, echo, echoUser, 1, []string{"u-00001"}, []int{1, 0}},
		// One bubble for r1 and r2, at r1's place: x is below it, as delivered.
		{"livestream around a message", sortkeys.GenC, livestream, userID, 0, nil, []int{0, 1}},
		{"livestream around a message (gen-b)", sortkeys.GenB, livestream, userID, 0, nil, []int{0, 1}},
		{"livestream around a message (gen-a)", sortkeys.GenA, livestream, userID, 0, nil, []int{0, 1}},
		// gen-c moves a finalized session to its final's place, below x; gen-a keeps it at r1's.
		// Either place is in the service's order: the bubble spans r1 to f.
		{"finalized livestream around a message", sortkeys.GenC, finalized, userID, 0, nil, []int{1, 0}},
		{"finalized livestream around a message (gen-a)", sortkeys.GenA, finalized, userID, 0, nil, []int{0, 1}},
		// Sent as positions 3, 1, 2, shown 1, 2, 3.
		{"HowTo parts in position order", sortkeys.GenC, events(
			part("p1", 1, "_:g", "3"), part("p2", 2, "_:g", "1"), part("p3", 3, "_:g", "2"), bot("m", 4, ""),
		), userID, 2, []string{"p1"}, []int{1, 2, 0, 3}},
		// The update of a moves its bubble below b, where the service delivered it: a's bubble
		// spans both its deliveries, so it is not out of order.
		{"update reusing an id", sortkeys.GenC, events(
			ts("a", `"2024-05-01T10:00:01.000Z"`), ts("b", `"2024-05-01T10:00:02.000Z"`), ts("a", `"2024-05-01T10:00:03.000Z"`),
		), userID, 0, nil, []int{1, 0}},
		// An update delivered before b that still moves a below b is.
		{"update moved past a later activity", sortkeys.GenC, events(
			ts("a", `"2024-05-01T10:00:01.000Z"`), ts("a", `"2024-05-01T10:00:03.000Z"`), ts("b", `"2024-05-01T10:00:02.000Z"`),
		), userID, 1, []string{"b"}, []int{1, 0}},
		// The event is in state.activities after a but is not on screen.
		{"hidden activity", sortkeys.GenC, events(event, ts("a", `"2024-05-01T10:00:05.000Z"`)), userID, 0, nil, []int{1}},
		// A pending post has no delivered revision: its bubble stands for nothing.
		{"pending post", sortkeys.GenC, events(bot("b0", 1, ""), posted(postC1), bot("b1", 3, "")), userID, 0, nil, []int{0, -1, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(tc.events, Options{Profile: tc.profile, UserID: tc.userID})
			var moved []string
			for _, f := range rep.Findings {
				if f.Rule == OrderInverted {
					moved = append(moved, f.ActivityID)
					if !strings.Contains(f.Message, "of Web Chat's screen") || strings.Contains(f.Message, "out of the service's order") {
						t.Errorf("message %q", f.Message)
					}
				}
			}
			if rep.Summary.InvertedPairs != tc.pairs || rep.Summary.Moved != len(tc.moved) || !slices.Equal(moved, tc.moved) {
				t.Errorf("%d pairs, %d moved, DL070 on %v; want %d, %v", rep.Summary.InvertedPairs, rep.Summary.Moved, moved, tc.pairs, tc.moved)
			}
			if !slices.Equal(rep.ScreenService, tc.screen) {
				t.Errorf("ScreenService %v, want %v", rep.ScreenService, tc.screen)
			}
			for pos, k := range rep.ScreenService {
				if k >= 0 && rep.Service[k].Display != pos {
					t.Errorf("%s is at place %d of the screen, its Display is %d", rep.Service[k].Name, pos, rep.Service[k].Display)
				}
			}
		})
	}
}

// TestMovedBubblesOnRandomLogs checks the count and DL070 on random logs of bot messages,
// livestreams and HowTo parts whose sequence ids arrive out of order, with every profile: the
// count is the number of inverted pairs of the bubbles' spans, the bubbles left in place keep the
// service's order, and each DL070 names the bubble it is inverted with.
func TestMovedBubblesOnRandomLogs(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for range 300 {
		seqs := rng.Perm(59)
		next := func() int { s := seqs[0] + 1; seqs = seqs[1:]; return s }
		var evs []sortkeys.Event
		for k := 0; len(seqs) > 8; k++ {
			switch rng.Intn(3) {
			case 0:
				evs = append(evs, bot(fmt.Sprint("m", k), next(), ""))
			case 1:
				sid := fmt.Sprint("r", k)
				evs = append(evs, interim(sid, "", next(), "1"))
				for j := range rng.Intn(3) {
					evs = append(evs, interim(fmt.Sprint(sid, "-", j), sid, next(), fmt.Sprint(j+2)))
				}
				if rng.Intn(2) == 0 {
					evs = append(evs, final(sid+"-f", sid, next()))
				}
			default:
				evs = append(evs, part(fmt.Sprint("p", k), next(), fmt.Sprint("_:g", k%2), fmt.Sprint(rng.Intn(5))))
			}
		}
		rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		for _, p := range []sortkeys.Profile{sortkeys.GenA, sortkeys.GenB, sortkeys.GenC} {
			rep := Check(evs, Options{Profile: p, UserID: userID})
			var spans []Span
			var kept []bool
			for pos, k := range rep.ScreenService {
				if k < 0 {
					continue
				}
				s := Span{First: k, Last: k}
				for x, pl := range rep.Service {
					if pl.Display == pos {
						s.First, s.Last = min(s.First, x), max(s.Last, x)
					}
				}
				spans = append(spans, s)
				kept = append(kept, !rep.Service[k].Moved)
			}
			var pairs int64
			moved := 0
			for i := range spans {
				if !kept[i] {
					moved++
				}
				for j := i + 1; j < len(spans); j++ {
					if spans[j].Last < spans[i].First {
						pairs++
					}
				}
			}
			if !keepsOrder(spans, func(i int) bool { return kept[i] }) || pairs != rep.Summary.InvertedPairs || moved != rep.Summary.Moved {
				t.Fatalf("%s: spans %v kept %v: %d pairs, %d moved; summary %+v", p, spans, kept, pairs, moved, rep.Summary)
			}
			n := 0
			for _, f := range rep.Findings {
				if f.Rule == OrderInverted {
					n++
					if strings.Contains(f.Message, "out of the service's order") {
						t.Fatalf("%s: DL070 names no bubble: %q", p, f.Message)
					}
				}
			}
			if n != moved {
				t.Fatalf("%s: %d DL070 findings for %d moved bubbles", p, n, moved)
			}
		}
	}
}

// TestActivityCountedOnce: when two bubbles would stand for one activity, the first on screen
// keeps it. No replay produced such a screen, so the checker is given one.
func TestActivityCountedOnce(t *testing.T) {
	c := newChecker(Options{}, nil)
	for i, id := range []string{"a", "b"} {
		c.byID[id] = len(c.deliveries)
		c.deliveries = append(c.deliveries, delivered{index: i, id: id, name: id, first: true})
		c.firsts++
	}
	rep := Report{Screen: []sortkeys.Bubble{{Name: "b", IDs: []string{"b"}}, {Name: "a", IDs: []string{"a"}}, {Name: "a2", IDs: []string{"a"}}}}
	c.order(&rep)
	if !slices.Equal(rep.ScreenService, []int{1, 0, -1}) || rep.Summary.InvertedPairs != 1 || rep.Service[0].Display != 1 {
		t.Errorf("ScreenService %v, %d pairs, placements %+v", rep.ScreenService, rep.Summary.InvertedPairs, rep.Service)
	}
}

// checkServiceShape: the shortcut for the services' timestamp shape answers as the regular
// expression does, and parseTimestamp reads s as the replay does.
func checkServiceShape(t *testing.T, s string) {
	t.Helper()
	got, gotOK := parseTimestamp(s)
	if v := sortkeys.DateParse(s); gotOK == math.IsNaN(v) || (gotOK && got.UnixMilli() != int64(v)) {
		t.Fatalf("parseTimestamp(%q) = %v %v, the replay reads %v", s, got, gotOK, v)
	}
	digits, iso := isoFraction(s)
	m := rfc3339.FindStringSubmatch(s)
	if iso != (m != nil && inRange(s)) || (m != nil && digits != len(m[1])) {
		t.Fatalf("isoFraction(%q) = %d %v, expression %q", s, digits, iso, m)
	}
}

func TestServiceShapeMatchesGeneralPath(t *testing.T) {
	for _, s := range []string{
		"2024-05-01T10:00:00.000Z", "2024-02-29T23:59:59.999Z", "2023-02-29T10:00:00.000Z",
		"2024-04-31T10:00:00.000Z", "2024-13-01T10:00:00.000Z", "2024-00-10T10:00:00.000Z",
		"2024-05-00T10:00:00.000Z", "2024-05-01T24:00:00.000Z", "2024-05-01T10:60:00.000Z",
		"2024-05-01T10:00:60.000Z", "0000-01-01T00:00:00.000Z", "1900-02-29T00:00:00.000Z",
		"2000-02-29T00:00:00.000Z", "2024-05-01T10:00:00.000+00:00", "2024-05-01T10:00:00.00Z",
		"2024-05-01T10:00:00.0000Z", "2024-05-01 10:00:00.000Z", "2024-05-01T10:00:00,000Z",
		"2024-05-01T1a:00:00.000Z", "２024-05-01T10:00:00.000Z",
	} {
		checkServiceShape(t, s)
	}
}

// TestMessagesSayWhatJavaScriptSees: where two different texts read as one value in JavaScript,
// the message says so.
func TestMessagesSayWhatJavaScriptSees(t *testing.T) {
	for _, tc := range []struct {
		rule string
		log  []sortkeys.Event
		want string
	}{
		{TimestampNotIncreasing, events(ts("a", `"2024-05-01T10:00:00.1231Z"`), ts("b", `"2024-05-01T10:00:00.1234999Z"`)), "same millisecond as 2024-05-01T10:00:00.1231Z of a"},
		{SequenceIDDuplicate, events(bot("a", 1, ""), in(`{"type":"message","id":"b","timestamp":"2024-05-01T10:00:02.000Z","from":{"id":"bot"},"text":"x","channelData":{"webchat:sequence-id":1.0}}`)), "webchat:sequence-id 1.0 is also on a"},
		{SequenceIDDuplicate, events(in(`{"type":"message","id":"a","timestamp":"2024-05-01T10:00:01.000Z","from":{"id":"bot"},"text":"x","channelData":{"webchat:sequence-id":9007199254740992}}`), in(`{"type":"message","id":"b","timestamp":"2024-05-01T10:00:02.000Z","from":{"id":"bot"},"text":"x","channelData":{"webchat:sequence-id":9007199254740993}}`)), "9007199254740993 (9007199254740992 in JavaScript) is also on a"},
	} {
		f, ok := find(Check(tc.log, Options{UserID: userID}), tc.rule)
		if !ok || !strings.Contains(f.Message, tc.want) {
			t.Errorf("%s: finding %+v (found: %v), want a message with %q", tc.rule, f, ok, tc.want)
		}
	}
}

// TestTimestampFieldsInRange: an RFC 3339 shape is ISO only with every field in range (RFC 3339
// §5.7), whichever path reads it; a lower-case t or z is allowed (§5.6).
func TestTimestampFieldsInRange(t *testing.T) {
	for s, want := range map[string]bool{
		"2024-02-29T23:59:59.999Z": true, "2023-02-29T10:00:00.000Z": false, "2024-02-30T10:00:00.000Z": false,
		"2024-04-31T10:00:00.000Z": false, "2024-12-31T10:00:00.000Z": true, "2024-13-01T10:00:00.000Z": false,
		"2024-00-10T10:00:00.000Z": false, "2024-05-00T10:00:00.000Z": false, "2024-03-01T24:00:00.000Z": false,
		"2024-05-01T10:60:00.000Z": false, "2016-12-31T23:59:60.000Z": true, "2024-05-01T10:00:61.000Z": false,
		"1900-02-29T00:00:00.000Z": false, "2000-02-29T00:00:00.000Z": true, "2024-05-01t10:00:00.100z": true,
		"2024-05-01T10:00:00.000+23:59": true, "2024-05-01T10:00:00.000+24:00": false, "2024-05-01T10:00:00-05:60": false,
		"2024-05-01T10:00:00.1234567Z": true,
	} {
		if _, iso := isoFraction(s); iso != want {
			t.Errorf("isoFraction(%q) is ISO: %v, want %v", s, iso, want)
		}
	}
}

// TestEchoWithoutClientActivityIDNamesEarliestPending: among posts with the same text, an echo
// without clientActivityID is taken for the earliest one still pending, every time.
func TestEchoWithoutClientActivityIDNamesEarliestPending(t *testing.T) {
	postC2 := strings.Replace(postC1, `"c1"`, `"c2"`, 1)
	postC3 := strings.Replace(postC1, `"c1"`, `"c3"`, 1)
	log := events(
		posted(postC1),                 // 0
		posted(postC2),                 // 1
		posted(postC3),                 // 2
		posted(postC1),                 // 3: c1 again, so the post at 0 no longer pends
		in(echoC1("", "u1", postedLT)), // 4: taken for the post at 1, which is echoed next
		fulfilled("c2", echoC1("c2", "u2", postedLT)), // 5
		in(echoC1("", "u3", postedLT)),                // 6: taken for the post at 2, never echoed
	)
	for range 20 {
		var got []string
		for _, f := range Check(log, Options{}).Findings {
			if f.Rule == EchoWithoutClientActivityID {
				got = append(got, fmt.Sprintf("%d: %s", f.Index, f.Message))
			}
		}
		want := []string{
			"6: looks like the echo of the post with clientActivityID \"c3\" (same text), which is never echoed, but has no channelData.clientActivityID",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("findings %q, want %q", got, want)
		}
	}
}

// TestEchoWithoutClientActivityIDSkipsTheSendersEchoedPosts: when the earliest pending post is
// another sender's, an echo without clientActivityID is taken for its own sender's earliest post
// still pending, not for one of theirs already echoed.
func TestEchoWithoutClientActivityIDSkipsTheSendersEchoedPosts(t *testing.T) {
	other := func(js string) string { return strings.Replace(js, `"id":"u-user"`, `"id":"u-other"`, 1) }
	postC2 := strings.Replace(postC1, `"c1"`, `"c2"`, 1)
	postC3 := strings.Replace(postC1, `"c1"`, `"c3"`, 1)
	log := events(
		posted(other(postC1)), // 0: another sender's, never echoed
		posted(postC2),        // 1
		fulfilled("c2", echoC1("c2", "u2", postedLT)), // 2
		posted(postC3),                 // 3: never echoed
		in(echoC1("", "u3", postedLT)), // 4: taken for the post at 3
	)
	var got []string
	for _, f := range Check(log, Options{}).Findings {
		if f.Rule == EchoWithoutClientActivityID {
			got = append(got, fmt.Sprintf("%d: %s", f.Index, f.Message))
		}
	}
	want := []string{
		"4: looks like the echo of the post with clientActivityID \"c3\" (same text), which is never echoed, but has no channelData.clientActivityID",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("findings %q, want %q", got, want)
	}
}

// TestSameTextIsNoEchoWhenThePostIsEchoed: a user activity with a pending post's text is the
// post's echo without its clientActivityID (DL030) or under another (DL033) only if the post is
// never echoed, and only if it comes from the same sender: the same user may send the same text
// from two tabs, and another user may send it too.
func TestSameTextIsNoEchoWhenThePostIsEchoed(t *testing.T) {
	otherTab := in(echoC1("tab2-1", "u0", "2024-05-01T10:00:01.000+02:00"))
	otherUser := in(strings.Replace(echoC1("", "u0", postedLT), `"id":"u-user"`, `"id":"u-other"`, 1))
	for _, tc := range []struct {
		name string
		log  []sortkeys.Event
		want bool
	}{
		{"another tab, then the echo", events(posted(postC1), otherTab, in(echoC1("c1", "u1", postedLT))), false},
		{"another tab, the post never echoed", events(posted(postC1), otherTab), true},
		{"another user, the post never echoed", events(posted(postC1), otherUser), false},
	} {
		rep := Check(tc.log, Options{UserID: userID})
		_, got33 := find(rep, EchoClientActivityIDChanged)
		_, got30 := find(rep, EchoWithoutClientActivityID)
		if got33 != tc.want || got30 {
			t.Errorf("%s: DL033 %v, DL030 %v; want DL033 %v and no DL030", tc.name, got33, got30, tc.want)
		}
	}
}

// TestLivestreamRulesFollowTheProfile: gen-a and gen-b replace an activity delivered again under
// its id, so an interim delivered twice is no fault there; gen-a has no sealing, so a revision
// after the final is shown, not dropped.
func TestLivestreamRulesFollowTheProfile(t *testing.T) {
	twice := events(interim("s1", "", 1, "1"), interim("s2", "s1", 2, "2"), interim("s2", "s1", 2, "2"))
	late := events(interim("s1", "", 1, "1"), final("f1", "s1", 2), interim("s2", "s1", 3, "2"))
	for _, tc := range []struct {
		profile   sortkeys.Profile
		twiceDL43 bool
		lateMsg   string
	}{
		{sortkeys.GenA, false, "4.18 (gen-a, checked here) shows it in place of the final"},
		{sortkeys.GenB, false, "Web Chat drops it"},
		{sortkeys.GenC, true, "Web Chat drops it"},
	} {
		if _, got := find(Check(twice, Options{Profile: tc.profile, UserID: userID}), LivestreamRevisionIDReused); got != tc.twiceDL43 {
			t.Errorf("%s: DL043 on an interim delivered twice: %v, want %v", tc.profile, got, tc.twiceDL43)
		}
		if f, ok := find(Check(late, Options{Profile: tc.profile, UserID: userID}), LivestreamAfterFinal); !ok || !strings.HasSuffix(f.Message, tc.lateMsg) {
			t.Errorf("%s: DL040 %+v (found: %v), want a message ending %q", tc.profile, f, ok, tc.lateMsg)
		}
	}
}

// TestLocalTimestampMissingOnce: a post without localTimestamp whose echo returns it as posted
// (without one) is one fault, reported on the post.
func TestLocalTimestampMissingOnce(t *testing.T) {
	post := strings.Replace(postC1, `"localTimestamp":"2024-05-01T10:00:02.000+02:00",`, "", 1)
	rep := Check(events(posted(post), fulfilled("c1", echoC1("c1", "u1", ""))), Options{UserID: userID})
	var at []int
	for _, f := range rep.Findings {
		if f.Rule == LocalTimestampMissing {
			at = append(at, f.Index)
		}
	}
	if !slices.Equal(at, []int{0}) {
		t.Errorf("DL020 at %v, want only at the post (0)", at)
	}
}

// TestEchoNotFromUserSaysWhy: DL032 says what in from made Web Chat take the echo for another
// sender's.
func TestEchoNotFromUserSaysWhy(t *testing.T) {
	from := `"from":{"id":"u-user","role":"user"},`
	for _, tc := range []struct{ from, want string }{
		{`"from":{"id":"u-user","role":"bot"},`, `a bot's activity: from.role "bot"`},
		{`"from":{"id":"dl_other"},`, `a bot's activity: no from.role, and from.id "dl_other" is not the user id "u-user"`},
		{``, `a channel's activity: from has neither id nor role`},
	} {
		echo := strings.Replace(echoC1("c1", "u1", postedLT), from, tc.from, 1)
		rep := Check(events(posted(postC1), in(echo)), Options{UserID: userID})
		found := false
		for _, f := range rep.Findings {
			found = found || f.Rule == EchoNotFromUser && strings.Contains(f.Message, tc.want)
		}
		if !found {
			t.Errorf("%s: no DL032 saying %q in %+v", echo, tc.want, rep.Findings)
		}
	}
}

// TestGroupingMessagesFollowTheProfile: DL050 and DL051 say what the generation checked does with
// the part, besides what Web Chat main does.
func TestGroupingMessagesFollowTheProfile(t *testing.T) {
	log := events(part("a", 1, "h-00001", `"2"`))
	for _, tc := range []struct {
		profile sortkeys.Profile
		says    string
	}{
		{sortkeys.GenC, "does not group the activity"},
		{sortkeys.GenB, "the gen-b prerelease checked here still does"},
		{sortkeys.GenA, "4.18 (gen-a, checked here) groups no activity"},
	} {
		rep := Check(log, Options{Profile: tc.profile, UserID: userID})
		for _, rule := range []string{PartOfIDInvalid, PositionNotNumber} {
			var msg string
			for _, f := range rep.Findings {
				if f.Rule == rule {
					msg = f.Message
				}
			}
			if !strings.HasSuffix(msg, tc.says) {
				t.Errorf("%s %s: %q, want it to end %q", tc.profile, rule, msg, tc.says)
			}
		}
	}
}
