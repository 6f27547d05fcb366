package sortkeys

import (
	"fmt"
	"testing"
)

// The logs below each repeat one gen-a or gen-b shape that once cost time per event growing with
// the log. Each has n events.

// typingIndicator is a typing activity without text or channelData at the given second: in gen-a
// every such activity is a member of one livestream group, that of an undefined streamId.
func typingIndicator(id string, sec int) Event {
	return in(fmt.Sprintf(`{"type":"typing","id":%q,"from":{"id":"bot"},"timestamp":"2025-01-01T%02d:%02d:%02d.000Z"}`,
		id, sec/3600%24, sec/60%60, sec%60))
}

// typingLog delivers n/4 typing indicators each followed by a message. Then, with starts, come
// pairs of a livestream's first revision (no streamId) and its delete; without, the typing
// indicators are delivered again, oldest first.
func typingLog(n int, starts bool) []Event {
	events := make([]Event, 0, n)
	for i := range n / 4 {
		events = append(events, typingIndicator(fmt.Sprint("t", i), 2*i), shapeMsg(fmt.Sprint("m", i), 2*i+1, ""))
	}
	for i := 0; len(events) < n; i++ {
		if !starts {
			events = append(events, typingIndicator(fmt.Sprint("t", i%(n/4)), 2*(i%(n/4))))
			continue
		}
		id := fmt.Sprint("l", i)
		events = append(events, in(fmt.Sprintf(`{"type":"typing","id":%q,"text":"x","from":{"id":"bot"},`+
			`"timestamp":"2025-01-02T00:00:00.000Z","channelData":{"streamType":"streaming","streamSequence":1}}`, id)),
			Event{Op: OpDelete, ActivityID: id})
	}
	return events[:n]
}

// BenchmarkReplayGenABShapes replays, with gen-a and gen-b, logs of one shape each at 10k and
// 100k events: ns/event should stay roughly level from 10k to 100k.
func BenchmarkReplayGenABShapes(b *testing.B) {
	for _, c := range []struct {
		name     string
		log      func(n int) []Event
		profiles []Profile
	}{
		{"typing-starts", func(n int) []Event { return typingLog(n, true) }, []Profile{GenA, GenB}},
		{"typing-redelivered", func(n int) []Event { return typingLog(n, false) }, []Profile{GenA, GenB}},
		// gen-a has no part groupings: only gen-b's are at stake.
		{"part-updates", partUpdatesLog, []Profile{GenB}},
	} {
		for _, p := range c.profiles {
			for _, n := range []int{10_000, 100_000} {
				b.Run(fmt.Sprintf("%s/%s/%dk", c.name, p, n/1000), func(b *testing.B) {
					events := c.log(n)
					b.ReportAllocs()
					cpu0, cpuOK := processCPU()
					for b.Loop() {
						r := New(Options{Profile: p, UserID: "u-user"})
						for _, ev := range events {
							if err := r.Apply(ev); err != nil {
								b.Fatal(err)
							}
						}
						if r.Len() == 0 {
							b.Fatal("empty replay")
						}
					}
					perEvent := float64(b.N) * float64(n)
					if cpu1, ok := processCPU(); ok && cpuOK {
						b.ReportMetric(float64(cpu1-cpu0)/perEvent, "cpu-ns/event")
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perEvent, "ns/event")
				})
			}
		}
	}
}
