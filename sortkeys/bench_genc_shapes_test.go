package sortkeys

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The logs below each repeat one gen-c shape that once cost time per event growing with the
// log. Each has n events.

// shapeMsg is a bot message with the given id and timestamp second; extra is spliced into the
// object (leading comma included).
func shapeMsg(id string, sec int, extra string) Event {
	return in(fmt.Sprintf(`{"type":"message","id":%q,"text":"hi","from":{"id":"bot"},`+
		`"timestamp":"2025-01-01T%02d:%02d:%02d.000Z"%s}`, id, sec/3600%24, sec/60%60, sec%60, extra))
}

// consecutiveDeletesLog delivers n/2 messages and then deletes them oldest first (interleaved:
// delivers one message, then pairs of a message and its delete), so that each ghost is anchored
// after the one before it.
func consecutiveDeletesLog(n int, interleaved bool) []Event {
	events := make([]Event, 0, n)
	if interleaved {
		events = append(events, shapeMsg("a0", 0, ""))
		for i := 1; len(events) < n; i++ {
			id := fmt.Sprint("b", i)
			events = append(events, shapeMsg(id, i, ""), Event{Op: OpDelete, ActivityID: id})
		}
		return events[:n]
	}
	for i := range n / 2 {
		events = append(events, shapeMsg(fmt.Sprint("a", i), i, ""))
	}
	for i := 0; len(events) < n; i++ {
		events = append(events, Event{Op: OpDelete, ActivityID: fmt.Sprint("a", i)})
	}
	return events
}

// streamRevision is a revision of livestream session s1 with the given streamSequence, its
// first (which opens the session) when first.
func streamRevision(i, seq int, first bool) Event {
	id, stream := "s1", ""
	if !first {
		id, stream = fmt.Sprint("r", i), `,"streamId":"s1"`
	}
	return in(fmt.Sprintf(`{"type":"typing","id":%q,"text":"part %d","from":{"id":"bot"},`+
		`"timestamp":"2025-01-01T00:00:00.000Z","channelData":{"streamType":"streaming","streamSequence":%d%s}}`,
		id, seq, seq, stream))
}

// fallingStreamLog is one livestream session of n revisions whose streamSequence falls from n
// to 1 (shuffled: takes every value from 1 to n in a random order).
func fallingStreamLog(n int, shuffled bool) []Event {
	seqs := make([]int, n)
	for i := range seqs {
		seqs[i] = n - i
	}
	if shuffled {
		rng := rand.New(rand.NewPCG(20251202, 1))
		rng.Shuffle(n, func(i, j int) { seqs[i], seqs[j] = seqs[j], seqs[i] })
	}
	events := make([]Event, n)
	for i, seq := range seqs {
		events[i] = streamRevision(i, seq, i == 0)
	}
	return events
}

// howToPart is HowTo part id of grouping group, at position pos (0: none).
func howToPart(id, group string, pos, sec int) Event {
	p := ""
	if pos > 0 {
		p = fmt.Sprintf(`,"position":%d`, pos)
	}
	return shapeMsg(id, sec, partOfEntities(group, p))
}

// partOfEntities is the entities member that makes an activity a part of HowTo grouping group; extra is
// spliced into the entity.
func partOfEntities(group, extra string) string {
	return fmt.Sprintf(`,"entities":[{"@context":"https://schema.org","@id":"",`+
		`"@type":"Message","type":"https://schema.org/Message","isPartOf":{"@id":%q,"@type":"HowTo"}%s}]`, group, extra)
}

// partUpdatesLog delivers n/2 parts of one HowTo grouping at increasing positions and then
// updates random parts, each keeping its position and taking a later timestamp.
func partUpdatesLog(n int) []Event {
	parts := n / 2
	events := make([]Event, 0, n)
	for i := range parts {
		events = append(events, howToPart(fmt.Sprint("p", i), "_:h1", i+1, i))
	}
	rng := rand.New(rand.NewPCG(20251202, 3))
	for i := parts; len(events) < n; i++ {
		k := rng.IntN(parts)
		events = append(events, howToPart(fmt.Sprint("p", k), "_:h1", k+1, i))
	}
	return events
}

// regroupLog delivers one id n times, each time as a part of a new HowTo grouping.
func regroupLog(n int) []Event {
	events := make([]Event, n)
	for i := range events {
		events[i] = howToPart("x", fmt.Sprint("_:g", i), 0, i)
	}
	return events
}

// BenchmarkReplayGenCShapes replays, with gen-c, logs of one shape each at 10k and 100k events.
// Each must cost about what an insertion does: ns/event stays roughly level from 10k to 100k.
// cpu-ns/event is the process's CPU time per event, which waiting for a shared machine's cores
// does not inflate.
func BenchmarkReplayGenCShapes(b *testing.B) {
	for _, c := range []struct {
		name string
		log  func(n int) []Event
		// skipLen: the log deletes every activity it shows, or shows its session in every one of
		// its groupings, a list that grows with the square of the log.
		skipLen bool
	}{
		{"deletes", func(n int) []Event { return consecutiveDeletesLog(n, false) }, true},
		{"deletes-interleaved", func(n int) []Event { return consecutiveDeletesLog(n, true) }, false},
		{"stream-falling", func(n int) []Event { return fallingStreamLog(n, false) }, false},
		{"stream-shuffled", func(n int) []Event { return fallingStreamLog(n, true) }, false},
		{"part-updates", partUpdatesLog, false},
		{"regroup", regroupLog, false},
		{"stream-deletes", streamDeletesLog, true},
		{"stream-regroup", streamRegroupLog, true},
		{"silent-units", silentUnitsLog, true},
		{"dead-entries", deadEntriesLog, true},
	} {
		for _, n := range []int{10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/%dk", c.name, n/1000), func(b *testing.B) {
				events := c.log(n)
				b.ReportAllocs()
				cpu0, cpuOK := processCPU()
				for b.Loop() {
					r := New(Options{UserID: "u-user"})
					for _, ev := range events {
						if err := r.Apply(ev); err != nil {
							b.Fatal(err)
						}
					}
					if !c.skipLen && r.Len() == 0 {
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

// sessionRevision is revision id of livestream session sid with the given streamSequence and
// timestamp second; extra is spliced into the object.
func sessionRevision(id, sid string, seq, sec int, extra string) Event {
	stream := ""
	if id != sid {
		stream = fmt.Sprintf(`,"streamId":%q`, sid)
	}
	return in(fmt.Sprintf(`{"type":"typing","id":%q,"text":"part %d","from":{"id":"bot"},`+
		`"timestamp":"2025-01-01T%02d:%02d:%02d.000Z","channelData":{"streamType":"streaming","streamSequence":%d%s}%s}`,
		id, seq, sec/3600%24, sec/60%60, sec%60, seq, stream, extra))
}

// streamDeletesLog is one livestream session of n/2 revisions, then deletes of them newest first.
func streamDeletesLog(n int) []Event {
	events := make([]Event, 0, n)
	for i := range n / 2 {
		events = append(events, sessionRevision(fmt.Sprint("r", i), "r0", i+1, 0, ""))
	}
	for i := n/2 - 1; len(events) < n; i-- {
		events = append(events, Event{Op: OpDelete, ActivityID: fmt.Sprint("r", i)})
	}
	return events
}

// streamRegroupLog is one livestream session whose every revision is a part of a new HowTo
// grouping.
func streamRegroupLog(n int) []Event {
	events := make([]Event, n)
	for i := range events {
		events[i] = sessionRevision(fmt.Sprint("r", i), "r0", i+1, i, partOfEntities(fmt.Sprint("_:g", i), ""))
	}
	return events
}

// silentUnitsLog repeats, at later and later times: a livestream session whose one revision is
// delivered twice and then deleted, which leaves the session in the list with an entry of a
// deleted activity and nothing to show; then a message and its delete.
func silentUnitsLog(n int) []Event {
	events := make([]Event, 0, n+4)
	for i := 0; len(events) < n; i++ {
		sid, m := fmt.Sprint("s", i), fmt.Sprint("m", i)
		events = append(events, sessionRevision(sid, sid, 1, 2*i, ""), sessionRevision(sid, sid, 1, 2*i, ""),
			Event{Op: OpDelete, ActivityID: sid}, shapeMsg(m, 2*i+1, ""), Event{Op: OpDelete, ActivityID: m})
	}
	return events[:n]
}

// deadEntriesLog delivers one revision of a livestream session n/4 times and deletes it, which
// leaves n/4 entries of a deleted activity; then pairs of a later revision and its delete.
func deadEntriesLog(n int) []Event {
	events := make([]Event, 0, n)
	for range n / 4 {
		events = append(events, sessionRevision("r0", "r0", 1, 0, ""))
	}
	events = append(events, Event{Op: OpDelete, ActivityID: "r0"})
	for i := 1; len(events) < n; i++ {
		id := fmt.Sprint("r", i)
		events = append(events, sessionRevision(id, "r0", i+1, 0, ""), Event{Op: OpDelete, ActivityID: id})
	}
	return events[:n]
}
