package sortkeys

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// benchLog returns the first n events of the benchmark log (the same seed, so smaller logs are
// prefixes of larger ones); recent is recentLog's (0: the log of BenchmarkReplay). Only the last
// log asked for is kept: a replay's garbage collections then scan its own log, as they would in
// a process replaying one log, and not a larger log kept for later cases, whose size would
// decide how often they run.
func benchLog(n, recent int) []Event {
	if benchLogs.n != n || benchLogs.recent != recent {
		benchLogs.events = nil
		runtime.GC()
		benchLogs.n, benchLogs.recent = n, recent
		benchLogs.events = recentLog(20251124, n, false, recent)[:n]
	}
	return benchLogs.events
}

var benchLogs struct {
	n, recent int
	events    []Event
}

// height is the number of levels of the main list's B-tree: an insertion, removal or search
// scans one node per level, so it shows the O(log n) cost apart from cache effects.
func height(r *Replay) float64 {
	var list unitList
	switch e := r.st.eng.(type) {
	case *genC:
		list = e.list
	case *genAB:
		list = e.list
	}
	h := 0
	for nd := list.(*btreeList).root; nd != nil; nd = nd.kids[0] {
		h++
		if nd.leaf {
			break
		}
	}
	return float64(h)
}

// BenchmarkReplay replays a log that mixes plain messages, updates, livestreams, HowTo groupings
// (some with livestream parts), sends with echoes and restored user messages, then reads the
// order once. The 10k and 100k logs are prefixes of the 1M log, generated before the timer
// starts (one size at a time); decoding the activities is part of the replay. Besides wall time
// it reports the process's CPU time per event (cpu-ns/event), which waiting for a shared
// machine's cores does not inflate, the page faults per event (faults/event): first touches
// of memory the kernel hands the process, which BenchmarkFreshPages prices, and the garbage
// collection cycles that ended during a replay (gcs/op): the log is live throughout, so a replay
// that allocates about as much as the log holds gets one, which marks the log and the replay's
// state while the replay waits or pays write barriers.
func BenchmarkReplay(b *testing.B) {
	for _, c := range benchSizes {
		for _, p := range []Profile{GenC, GenA} {
			name := c.name
			if p != GenC {
				name += "/" + string(p)
			}
			b.Run(name, func(b *testing.B) { benchReplay(b, benchLog(c.n, 0), p) })
		}
	}
}

// BenchmarkReplayRecent is BenchmarkReplay's gen-c case on logs whose updates, livestream
// revisions, HowTo parts and echoes refer to one of the last 1,000 candidates of their kind
// (recentLog) instead of to any since the log began. The state those events touch then stays
// about the same size however long the log, which shows what of BenchmarkReplay's growth per
// event comes from touching a working set that grows with the log.
func BenchmarkReplayRecent(b *testing.B) {
	for _, c := range benchSizes {
		b.Run(c.name, func(b *testing.B) { benchReplay(b, benchLog(c.n, 1000), GenC) })
	}
}

var benchSizes = []struct {
	name string
	n    int
}{{"10k", 10_000}, {"100k", 100_000}, {"1M", 1_000_000}}

func benchReplay(b *testing.B, events []Event, p Profile) {
	b.ReportAllocs()
	var r *Replay
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gc0 := ms.NumGC
	cpu0, cpuOK := processCPU()
	faults0, faultsOK := processFaults()
	for b.Loop() {
		r = New(Options{Profile: p, UserID: "u-user"})
		for _, ev := range events {
			if err := r.Apply(ev); err != nil {
				b.Fatal(err)
			}
		}
		if r.Len() == 0 {
			b.Fatal("empty replay")
		}
	}
	perEvent := float64(b.N) * float64(len(events))
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/perEvent, "cpu-ns/event")
	}
	if faults1, ok := processFaults(); ok && faultsOK {
		b.ReportMetric(float64(faults1-faults0)/perEvent, "faults/event")
	}
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.NumGC-gc0)/float64(b.N), "gcs/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perEvent, "ns/event")
	b.ReportMetric(height(r), "height")
}

// BenchmarkReplayKinds replays BenchmarkReplay's gen-c logs timing each event on its own, and
// reports the mean per event of each kind (ns/<kind>, clock reads included): which events a
// replay's time goes to, and which of them grow dearer as the log, and so the state their
// references land in, grows. A log of events of the cheapest kind alone would be about as fast
// as its figure says. The log's count and share of the time of each kind are logged.
func BenchmarkReplayKinds(b *testing.B) {
	for _, c := range benchSizes {
		b.Run(c.name, func(b *testing.B) {
			events := benchLog(c.n, 0)
			kinds := eventKinds(b, events)
			var spent [len(kindNames)]time.Duration
			var count [len(kindNames)]int
			for b.Loop() {
				r := New(Options{UserID: "u-user"})
				for i, ev := range events {
					t0 := time.Now()
					if err := r.Apply(ev); err != nil {
						b.Fatal(err)
					}
					spent[kinds[i]] += time.Since(t0)
					count[kinds[i]]++
				}
			}
			var total time.Duration
			for _, d := range spent {
				total += d
			}
			var shares []string
			for k, name := range kindNames {
				if count[k] == 0 {
					continue
				}
				b.ReportMetric(float64(spent[k].Nanoseconds())/float64(count[k]), "ns/"+name)
				shares = append(shares, fmt.Sprintf("%s %d (%.1f%%)", name, count[k]/b.N, 100*float64(spent[k])/float64(total)))
			}
			b.Logf("events of each kind per replay (share of the time): %s", strings.Join(shares, ", "))
		})
	}
}

// The kinds of event that eventKinds tells apart, indices into kindNames.
const (
	kindMessage = iota
	kindUpdate
	kindOther
	kindPart
	kindStreamStart
	kindStreamStartPart
	kindStreamRev
	kindStreamRevPart
	kindEcho
	kindRestored
	kindPost
	kindFulfilled
)

var kindNames = [...]string{"message", "update", "other", "part", "stream-start", "stream-start-part",
	"stream-rev", "stream-rev-part", "echo", "restored", "post", "fulfilled"}

// eventKinds gives the kind of each event from its op and activity: a bot's new message or its
// update (an id delivered before), another type, a HowTo part, the first revision of a livestream
// or a later one (each also in a grouping), a user's activity delivered with a role (an echo) or
// without (restored from history), a post and its fulfilment.
func eventKinds(tb testing.TB, events []Event) []int {
	seen := map[string]bool{}
	out := make([]int, len(events))
	for i, ev := range events {
		switch ev.Op {
		case OpPost:
			out[i] = kindPost
			continue
		case OpFulfilled:
			out[i] = kindFulfilled
			continue
		}
		var a struct {
			ID, Type string
			From     struct{ ID, Role string }
			Entities []struct {
				IsPartOf json.RawMessage `json:"isPartOf"`
			}
			ChannelData struct {
				StreamID   string `json:"streamId"`
				StreamType string `json:"streamType"`
			}
		}
		if err := json.Unmarshal(ev.Activity, &a); err != nil {
			tb.Fatalf("event %d: %v", i, err)
		}
		part := len(a.Entities) > 0 && a.Entities[0].IsPartOf != nil
		// Each stream kind is followed by its kind in a grouping.
		inGrouping := 0
		if part {
			inGrouping = 1
		}
		switch {
		case a.ChannelData.StreamID != "":
			out[i] = kindStreamRev + inGrouping
		case a.ChannelData.StreamType != "":
			out[i] = kindStreamStart + inGrouping
		case a.From.Role == "user":
			out[i] = kindEcho
		case a.From.ID == "u-user":
			out[i] = kindRestored
		case part:
			out[i] = kindPart
		case seen[a.ID]:
			out[i] = kindUpdate
		case a.Type != "message":
			out[i] = kindOther
		default:
			out[i] = kindMessage
		}
		seen[a.ID] = true
	}
	return out
}

// BenchmarkDecode reads the activities of the first 10k events of the replay log as Apply does,
// without the reducers: the part of ns/event that no ordered structure can save. cpu-ns/op is the
// process's CPU time per activity, which waiting for a shared machine's cores does not inflate.
func BenchmarkDecode(b *testing.B) {
	var raws []json.RawMessage
	for _, ev := range randomLog(20251124, 10_000, false) {
		if len(ev.Activity) > 0 {
			raws = append(raws, ev.Activity)
		}
	}
	var mem decodeArenas
	b.ReportAllocs()
	i := 0
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		if _, err := decodeRecord(raws[i%len(raws)], "u-user", &mem, false); err != nil {
			b.Fatal(err)
		}
		i++
		if i%len(raws) == 0 {
			mem = decodeArenas{}
		}
	}
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkCollectorCycle times full garbage collections (runtime.GC, ns/op) with the 1M
// benchmark log live: alone (log), and with a finished gen-c replay of it (log+replay). The
// difference is what marking the replay's state adds to a cycle, and so the most that a replay
// state holding no pointers could save on each cycle that runs during a replay.
func BenchmarkCollectorCycle(b *testing.B) {
	events := benchLog(1_000_000, 0)
	for _, replay := range []bool{false, true} {
		name := "log"
		if replay {
			name = "log+replay"
		}
		b.Run(name, func(b *testing.B) {
			var r *Replay
			if replay {
				r = New(Options{Profile: GenC, UserID: "u-user"})
				for _, ev := range events {
					if err := r.Apply(ev); err != nil {
						b.Fatal(err)
					}
				}
			}
			runtime.GC()
			for b.Loop() {
				runtime.GC()
			}
			runtime.KeepAlive(r)
		})
	}
}

// BenchmarkReplayDeletes replays wild logs where one event in five deletes an id delivered
// before (deleteLog), with gen-c, whose deletes keep a ghost of each deleted revision in place
// on the screen. A delete must cost about what an insertion does: ns/event stays roughly level
// from 10k to 100k events.
func BenchmarkReplayDeletes(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		events := deleteLog(20251201, n)[:n]
		b.Run(fmt.Sprint(n/1000, "k"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := New(Options{UserID: "u-user"})
				for _, ev := range events {
					if err := r.Apply(ev); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*float64(n)), "ns/event")
		})
	}
}

// BenchmarkReplayHowTo replays one HowTo part grouping of n parts (gen-c and gen-b), without
// positions and with increasing ones: a new part must not scan the parts before it, so ns/event
// stays roughly level from 10k to 100k parts.
func BenchmarkReplayHowTo(b *testing.B) {
	for _, c := range []struct {
		p         Profile
		positions bool
	}{{GenC, false}, {GenC, true}, {GenB, true}} {
		positions := c.positions
		for _, n := range []int{10_000, 100_000} {
			events := make([]Event, n)
			for i := range events {
				pos := ""
				if positions {
					pos = fmt.Sprintf(`,"position":%d`, i+1)
				}
				events[i] = in(fmt.Sprintf(`{"type":"message","id":"p%d","text":"step","from":{"id":"bot"},`+
					`"timestamp":"2025-01-01T00:00:00.000Z","entities":[{"@context":"https://schema.org","@id":"",`+
					`"@type":"Message","type":"https://schema.org/Message","isPartOf":{"@id":"_:h1","@type":"HowTo"}%s}]}`, i, pos))
			}
			name := fmt.Sprintf("positions=%v/%dk", positions, n/1000)
			if c.p != GenC {
				name += "/" + string(c.p)
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r := New(Options{Profile: c.p})
					for _, ev := range events {
						if err := r.Apply(ev); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*float64(n)), "ns/event")
			})
		}
	}
}

// BenchmarkReplayLivestream replays one livestream of n revisions (typing activities naming the
// first one's id as their channelData streamId, streamSequence rising). gen-a and gen-b look for a new revision's neighbours among the
// earlier ones (findBeforeAfter); that must not walk them all, so ns/event stays roughly level
// from 10k to 100k events.
func BenchmarkReplayLivestream(b *testing.B) {
	for _, p := range []Profile{GenA, GenB, GenC} {
		for _, n := range []int{10_000, 100_000} {
			events := livestreamLog(n)
			b.Run(fmt.Sprintf("%s/%dk", p, n/1000), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r := New(Options{Profile: p})
					for _, ev := range events {
						if err := r.Apply(ev); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*float64(n)), "ns/event")
			})
		}
	}
}

// livestreamLog is BenchmarkReplayLivestream's log of n events.
func livestreamLog(n int) []Event {
	events := make([]Event, n)
	for i := range events {
		ts := fmt.Sprintf("2025-01-01T%02d:%02d:%02d.%03dZ", i/3600000%24, i/60000%60, i/1000%60, i%1000)
		switch {
		case i == 0:
			events[i] = in(`{"type":"typing","id":"s1","text":"part 1","from":{"id":"bot","role":"bot"},"timestamp":"` + ts +
				`","channelData":{"streamType":"streaming","streamSequence":1}}`)
		default:
			events[i] = in(fmt.Sprintf(`{"type":"typing","id":"r%d","text":"part %d","from":{"id":"bot","role":"bot"},"timestamp":"%s",`+
				`"channelData":{"streamId":"s1","streamType":"streaming","streamSequence":%d}}`, i, i, ts, i+1))
		}
	}
	return events
}
