package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// benchTS is the timestamp of event i, one millisecond apart from the start of 2024-05-01.
func benchTS(i int) string {
	return fmt.Sprintf("2024-05-01T%02d:%02d:%02d.%03dZ", i/3_600_000%24, i/60_000%60, i/1000%60, i%1000)
}

// benchBot is a bot message line with id, timestamp and text; extra is appended to its members.
func benchBot(id, ts, text, extra string) string {
	return fmt.Sprintf(`{"type":"message","id":%q,"timestamp":%q,"from":{"id":"bot","role":"bot"},"text":%q%s}`, id, ts, text, extra)
}

// runShapes generate n JSON Lines of shapes where the report (rows, findings' messages, the
// picture) could do work per activity that grows with the log.
var runShapes = []struct {
	name string
	gen  func(n int) []string
}{
	// Plain bot messages in order: the baseline.
	{"plain", func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = benchBot(fmt.Sprintf("a%d", i), benchTS(i), "hello", "")
		}
		return out
	}},
	// One livestream of n revisions: one bubble whose revisions are every activity.
	{"one-livestream", func(n int) []string {
		out := make([]string, n)
		for i := range out {
			switch {
			case i == 0:
				out[i] = fmt.Sprintf(`{"type":"typing","id":"s0","timestamp":%q,"from":{"id":"bot","role":"bot"},"text":"a","channelData":{"streamType":"streaming","streamSequence":1}}`, benchTS(i))
			case i == n-1:
				out[i] = fmt.Sprintf(`{"type":"message","id":"s-f","timestamp":%q,"from":{"id":"bot","role":"bot"},"text":"done","channelData":{"streamType":"final","streamId":"s0"}}`, benchTS(i))
			default:
				out[i] = fmt.Sprintf(`{"type":"typing","id":"s%d","timestamp":%q,"from":{"id":"bot","role":"bot"},"text":"more %d","channelData":{"streamType":"streaming","streamSequence":%d,"streamId":"s0"}}`, i, benchTS(i), i, i+1)
			}
		}
		return out
	}},
	// One HowTo grouping of n parts, delivered last part first.
	{"one-grouping", func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = benchBot(fmt.Sprintf("p%d", i), benchTS(i), "step", fmt.Sprintf(`,"entities":[{"type":"https://schema.org/Message","@type":"Message","@context":"https://schema.org","@id":"","isPartOf":{"@id":"_:g","@type":"HowTo"},"position":%d}]`, n-i))
		}
		return out
	}},
	// Timestamps decreasing: every bubble but one is moved (DL070), each named against a kept one.
	{"decreasing", func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = benchBot(fmt.Sprintf("a%d", i), benchTS(n-i), "back", "")
		}
		return out
	}},
	// Every timestamp equal (DL011 on each).
	{"equal-timestamps", func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = benchBot(fmt.Sprintf("a%d", i), benchTS(0), "same", "")
		}
		return out
	}},
	// Typing activities hidden from the screen, one message in ten shown: the picture's left
	// column describes why each is not shown.
	{"hidden", func(n int) []string {
		out := make([]string, n)
		for i := range out {
			if i%10 == 0 {
				out[i] = benchBot(fmt.Sprintf("a%d", i), benchTS(i), "shown", "")
			} else {
				out[i] = fmt.Sprintf(`{"type":"typing","id":"t%d","timestamp":%q,"from":{"id":"bot","role":"bot"}}`, i, benchTS(i))
			}
		}
		return out
	}},
	// Each message from its own sender, without a role, and a long text.
	{"senders-long-texts", func(n int) []string {
		text := strings.Repeat("long text ", 100)
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(`{"type":"message","id":"a%d","timestamp":%q,"from":{"id":"s%d"},"text":%q}`, i, benchTS(i), i, text)
		}
		return out
	}},
	// One post, then its echoes without an id, again and again (DL031 each, all naming the post).
	{"echoes-without-id", func(n int) []string {
		out := make([]string, n)
		out[0] = fmt.Sprintf(`{"op":"post","activity":{"type":"message","localTimestamp":%q,"from":{"id":"u-user","role":"user"},"text":"hi","channelData":{"clientActivityID":"c0"}}}`, benchTS(0))
		for i := 1; i < n; i++ {
			out[i] = fmt.Sprintf(`{"type":"message","timestamp":%q,"localTimestamp":%q,"from":{"id":"u-user","role":"user"},"text":"hi","channelData":{"clientActivityID":"c0"}}`, benchTS(i), benchTS(i))
		}
		return out
	}},
	// One long string that the findings of every later activity name, a quarter as many bytes as
	// the log has events: naming it in each finding would cost per event a share of the log's
	// length. First, an id whose sequence id every later activity reuses (DL013).
	{"seq-owner-long-id", func(n int) []string {
		out := make([]string, n)
		out[0] = benchBot(longName(n/4), benchTS(0), "x", `,"channelData":{"webchat:sequence-id":1}`)
		for i := 1; i < n; i++ {
			out[i] = benchBot(fmt.Sprintf("a%d", i), benchTS(i), "x", `,"channelData":{"webchat:sequence-id":1}`)
		}
		return out
	}},
	// The id of the highest sequence id, delivered first (DL012 on every later activity).
	{"seq-max-long-id", func(n int) []string {
		out := make([]string, n)
		out[0] = benchBot(longName(n/4), benchTS(0), "x", fmt.Sprintf(`,"channelData":{"webchat:sequence-id":%d}`, n))
		for i := 1; i < n; i++ {
			out[i] = benchBot(fmt.Sprintf("a%d", i), benchTS(i), "x", fmt.Sprintf(`,"channelData":{"webchat:sequence-id":%d}`, i))
		}
		return out
	}},
	// A post with a long clientActivityID, never echoed, and user messages of its text without
	// one (DL030's suspects, each naming the post).
	{"suspects-long-cid", func(n int) []string {
		out := make([]string, n)
		out[0] = fmt.Sprintf(`{"op":"post","activity":{"type":"message","localTimestamp":%q,"from":{"id":"u-user","role":"user"},"text":"hi","channelData":{"clientActivityID":%q}}}`, benchTS(0), longName(n/4))
		for i := 1; i < n; i++ {
			out[i] = fmt.Sprintf(`{"type":"message","id":"e%d","timestamp":%q,"localTimestamp":%q,"from":{"id":"u-user","role":"user"},"text":"hi"}`, i, benchTS(i), benchTS(i))
		}
		return out
	}},
	// A post with a long localTimestamp, then echoes without an id that change it (DL021 each,
	// quoting the posted one).
	{"echoes-long-localts", func(n int) []string {
		out := make([]string, n)
		out[0] = fmt.Sprintf(`{"op":"post","activity":{"type":"message","localTimestamp":%q,"from":{"id":"u-user","role":"user"},"text":"hi","channelData":{"clientActivityID":"c0"}}}`, longName(n/4))
		for i := 1; i < n; i++ {
			out[i] = fmt.Sprintf(`{"type":"message","timestamp":%q,"localTimestamp":%q,"from":{"id":"u-user","role":"user"},"text":"hi","channelData":{"clientActivityID":"c0"}}`, benchTS(i), benchTS(i))
		}
		return out
	}},
	// A livestream whose first revision names a HowTo grouping with a long id and whose later
	// revisions name another (DL052 each, quoting the first).
	{"livestream-long-partof", func(n int) []string {
		entity := func(group string) string {
			return fmt.Sprintf(`,"entities":[{"type":"https://schema.org/Message","@type":"Message","@context":"https://schema.org","@id":"","isPartOf":{"@id":%q,"@type":"HowTo"}}]`, group)
		}
		out := make([]string, n)
		out[0] = fmt.Sprintf(`{"type":"typing","id":"s0","timestamp":%q,"from":{"id":"bot","role":"bot"},"text":"a","channelData":{"streamType":"streaming","streamSequence":1}%s}`, benchTS(0), entity("_:"+longName(n/4)))
		for i := 1; i < n; i++ {
			out[i] = fmt.Sprintf(`{"type":"typing","id":"s%d","timestamp":%q,"from":{"id":"bot","role":"bot"},"text":"more","channelData":{"streamType":"streaming","streamSequence":%d,"streamId":"s0"}%s}`, i, benchTS(i), i+1, entity("_:g"))
		}
		return out
	}},
	// Messages and deletes of them, every other one deleted.
	{"deletes", func(n int) []string {
		out := make([]string, n)
		for i := range out {
			if i%3 == 2 {
				out[i] = fmt.Sprintf(`{"op":"delete","activityID":"a%d"}`, i-2)
			} else {
				out[i] = benchBot(fmt.Sprintf("a%d", i), benchTS(i), "x", "")
			}
		}
		return out
	}},
}

// longName is a name of n bytes.
func longName(n int) string { return "L" + strings.Repeat("x", n-1) }

// BenchmarkRunShapes runs sortcheck on logs of each shape at 10k and 100k events, writing the
// text report and the picture, then the JSON report. ns/event must stay about level from 10k
// to 100k.
func BenchmarkRunShapes(b *testing.B) {
	page := filepath.Join(b.TempDir(), "page.html")
	for _, shape := range runShapes {
		for _, n := range []int{10_000, 100_000} {
			log := strings.Join(shape.gen(n), "\n") + "\n"
			b.Run(fmt.Sprintf("%s/%dk", shape.name, n/1000), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					run([]string{"--profile", "gen-b", "--user-id", "u-user", "--html", page}, strings.NewReader(log), io.Discard, io.Discard)
					run([]string{"--profile", "gen-b", "--user-id", "u-user", "--json"}, strings.NewReader(log), io.Discard, io.Discard)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*float64(n)), "ns/event")
			})
		}
	}
}
