package sortkeys

import (
	"sync"
	"testing"
)

var benchLog = sync.OnceValue(func() []Event { return randomLog(20251124, 1_000_000, false) })

// BenchmarkReplay replays a log that mixes plain messages, updates, livestreams, HowTo groupings
// (some with livestream parts), sends with echoes and restored user messages, then reads the
// order once. The 10k and 100k logs are prefixes of the 1M log.
func BenchmarkReplay(b *testing.B) {
	all := benchLog()
	for _, c := range []struct {
		name string
		n    int
	}{{"10k", 10_000}, {"100k", 100_000}, {"1M", 1_000_000}} {
		events := all[:c.n]
		for _, p := range []Profile{GenC, GenA} {
			name := c.name
			if p != GenC {
				name += "/" + string(p)
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
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
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(events)), "ns/event")
			})
		}
	}
}
