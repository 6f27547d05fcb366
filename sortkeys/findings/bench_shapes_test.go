package findings

import (
	"fmt"
	"strings"
	"testing"

	"github.com/directline-go/directline/sortkeys"
)

// shapeTS is the timestamp of event i: one millisecond apart from the start of 2024-05-01.
func shapeTS(i int) string {
	return fmt.Sprintf("2024-05-01T%02d:%02d:%02d.%03dZ", i/3_600_000%24, i/60_000%60, i/1000%60, i%1000)
}

// shapePost is a post with clientActivityID c<i>, text and sender from.
func shapePost(i int, from, text string) sortkeys.Event {
	return posted(fmt.Sprintf(`{"type":"message","localTimestamp":%q,"from":{"id":%q,"role":"user"},"text":%q,"channelData":{"clientActivityID":"c%d"}}`, shapeTS(i), from, text, i))
}

// shapeUser is a user message e<i> from from, delivered without a clientActivityID, posted an
// event earlier.
func shapeUser(i int, from, text string) sortkeys.Event {
	return in(fmt.Sprintf(`{"type":"message","id":"e%d","timestamp":%q,"localTimestamp":%q,"from":{"id":%q,"role":"user"},"text":%q}`, i, shapeTS(i), shapeTS(i-1), from, text))
}

// shapeBot is a bot message with id and text; extra is appended to its members.
func shapeBot(i int, id, text, extra string) sortkeys.Event {
	return in(fmt.Sprintf(`{"type":"message","id":%q,"timestamp":%q,"from":{"id":"bot","role":"bot"},"text":%q%s}`, id, shapeTS(i), text, extra))
}

// A logShape names a generator of n events of one shape.
type logShape struct {
	name string
	gen  func(n int) []sortkeys.Event
}

// shapeLogs generate n events of the shapes that could make a rule scan a set growing with the
// log: each event, or the event that would scan, adds to the set.
var shapeLogs = []logShape{
	// The user sends "hi" again and again; the service returns each without its
	// clientActivityID, every other one under another from.id, so every post stays pending and
	// each echo under another id is compared with all of them (DL030 and DL033's text-matched
	// suspects).
	{"pending-posts", func(n int) []sortkeys.Event {
		evs := make([]sortkeys.Event, n)
		for i := range evs {
			switch i % 4 {
			case 0, 2:
				evs[i] = shapePost(i, userID, "hi")
			case 1:
				evs[i] = shapeUser(i, "dl_"+userID, "hi")
			default:
				evs[i] = shapeUser(i, userID, "hi")
			}
		}
		return evs
	}},
	// Bot messages replying to ids that never arrive (DL060).
	{"unknown-reply-to", func(n int) []sortkeys.Event {
		evs := make([]sortkeys.Event, n)
		for i := range evs {
			evs[i] = shapeBot(i, fmt.Sprintf("b%d", i), "r", fmt.Sprintf(`,"replyToId":"missing%d"`, i))
		}
		return evs
	}},
	// Livestream sessions of a first revision, an interim and a final each (DL040 to DL044).
	{"livestreams", func(n int) []sortkeys.Event {
		evs := make([]sortkeys.Event, n)
		for i := range evs {
			s := i / 3
			switch i % 3 {
			case 0:
				evs[i] = in(fmt.Sprintf(`{"type":"typing","id":"s%d","timestamp":%q,"from":{"id":"bot","role":"bot"},"text":"a","channelData":{"streamType":"streaming","streamSequence":1}}`, s, shapeTS(i)))
			case 1:
				evs[i] = in(fmt.Sprintf(`{"type":"typing","id":"s%d-2","timestamp":%q,"from":{"id":"bot","role":"bot"},"text":"ab","channelData":{"streamType":"streaming","streamSequence":2,"streamId":"s%d"}}`, s, shapeTS(i), s))
			default:
				evs[i] = in(fmt.Sprintf(`{"type":"message","id":"s%d-f","timestamp":%q,"from":{"id":"bot","role":"bot"},"text":"abc","channelData":{"streamType":"final","streamId":"s%d"}}`, s, shapeTS(i), s))
			}
		}
		return evs
	}},
	// HowTo groupings of ten parts each, every part updated once with another grouping (DL050 to
	// DL052).
	{"part-groupings", func(n int) []sortkeys.Event {
		evs := make([]sortkeys.Event, n)
		for i := range evs {
			part, g := i/2, i/20
			if i%2 == 1 {
				g++
			}
			evs[i] = shapeBot(i, fmt.Sprintf("p%d", part), "step", fmt.Sprintf(`,"entities":[{"type":"https://schema.org/Message","@type":"Message","@context":"https://schema.org","@id":"","isPartOf":{"@id":"_:g%d","@type":"HowTo"},"position":%d}]`, g, part%10+1))
		}
		return evs
	}},
	// A tenth as many ids as events, each delivered ten times, changed and unchanged, with
	// sequence ids reused across ids (DL013, DL043 and the updates' spans).
	{"duplicate-ids", func(n int) []sortkeys.Event {
		evs := make([]sortkeys.Event, n)
		ids := max(n/10, 1)
		for i := range evs {
			evs[i] = shapeBot(i, fmt.Sprintf("d%d", i%ids), fmt.Sprintf("v%d", i/ids/2), fmt.Sprintf(`,"channelData":{"webchat:sequence-id":%d}`, i%(ids/2+1)))
		}
		return evs
	}},
}

// BenchmarkCheckShapes checks logs of each shape at 10k and 100k events. No rule may scan a set
// that grows with the log for each event: ns/event must stay about level from 10k to 100k.
func BenchmarkCheckShapes(b *testing.B) { checkShapes(b, shapeLogs, Options{UserID: userID}) }

// checkShapes checks a log of each shape at 10k and 100k events with opts and reports ns/event.
func checkShapes(b *testing.B, shapes []logShape, opts Options) {
	for _, shape := range shapes {
		for _, n := range []int{10_000, 100_000} {
			evs := shape.gen(n)
			b.Run(fmt.Sprintf("%s/%dk", shape.name, n/1000), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					Check(evs, opts)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*float64(n)), "ns/event")
			})
		}
	}
}

// quotedLogs generate n events where the findings of every event after the first quote one string
// of n/4 bytes from the first: formatting each finding would copy it once per event.
var quotedLogs = []logShape{
	// Every message reuses the sequence id of the first, which has a long id (DL013).
	{"seq-owner-long-id", func(n int) []sortkeys.Event {
		evs := make([]sortkeys.Event, n)
		evs[0] = shapeBot(0, longName(n/4), "x", `,"channelData":{"webchat:sequence-id":1}`)
		for i := 1; i < n; i++ {
			evs[i] = shapeBot(i, fmt.Sprintf("a%d", i), "x", `,"channelData":{"webchat:sequence-id":1}`)
		}
		return evs
	}},
	// A post with a long clientActivityID, never echoed, then user messages of its text without
	// one (DL030's suspects).
	{"suspects-long-cid", func(n int) []sortkeys.Event {
		evs := make([]sortkeys.Event, n)
		evs[0] = posted(fmt.Sprintf(`{"type":"message","localTimestamp":%q,"from":{"id":%q,"role":"user"},"text":"hi","channelData":{"clientActivityID":%q}}`, shapeTS(0), userID, longName(n/4)))
		for i := 1; i < n; i++ {
			evs[i] = shapeUser(i, userID, "hi")
		}
		return evs
	}},
	// A post with a long localTimestamp, then echoes without an id that change it (DL021).
	{"echoes-long-localts", func(n int) []sortkeys.Event {
		evs := make([]sortkeys.Event, n)
		evs[0] = posted(fmt.Sprintf(`{"type":"message","localTimestamp":%q,"from":{"id":%q,"role":"user"},"text":"hi","channelData":{"clientActivityID":"c0"}}`, longName(n/4), userID))
		for i := 1; i < n; i++ {
			evs[i] = in(fmt.Sprintf(`{"type":"message","timestamp":%q,"localTimestamp":%q,"from":{"id":%q,"role":"user"},"text":"hi","channelData":{"clientActivityID":"c0"}}`, shapeTS(i), shapeTS(i), userID))
		}
		return evs
	}},
}

// longName is a name of n bytes.
func longName(n int) string { return "L" + strings.Repeat("x", n-1) }

// BenchmarkCheckQuotedShapes checks logs of each quoted shape at 10k and 100k events, keeping 50
// findings per rule as sortcheck does. ns/event must stay about level from 10k to 100k.
func BenchmarkCheckQuotedShapes(b *testing.B) {
	checkShapes(b, quotedLogs, Options{UserID: userID, MaxPerRule: 50})
}
