package sortkeys

import (
	"bytes"
	"encoding/json"
	"testing"
)

// yardstickLog is the activities of the first 100k events of the replay log and their total size
// in bytes, for the yardsticks below.
func yardstickLog() (raws []json.RawMessage, size int) {
	for _, ev := range benchLog(100_000) {
		if len(ev.Activity) > 0 {
			raws = append(raws, ev.Activity)
			size += len(ev.Activity)
		}
	}
	return raws, size
}

// runYardstick times read over every activity of yardstickLog, one after another, and reports
// cpu-ns/activity and ns/activity, the units BenchmarkReplay's per-event figures compare with.
func runYardstick(b *testing.B, read func([]byte) bool) {
	raws, size := yardstickLog()
	b.SetBytes(int64(size))
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		for _, raw := range raws {
			if !read(raw) {
				b.Fatal("the benchmark log's activity does not read as expected")
			}
		}
	}
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N*len(raws)), "cpu-ns/activity")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(raws)), "ns/activity")
}

// BenchmarkValidLog runs encoding/json's Valid over each activity: not part of the replay, but a
// yardstick for the machine it runs on. Reading a log means at least reading its JSON, so the
// replay's cpu-ns/event divided by this benchmark's cpu-ns/activity says how a replay compares
// with the standard library merely checking the same bytes, whatever the machine
// (docs/BENCHMARKS.md).
func BenchmarkValidLog(b *testing.B) {
	runYardstick(b, json.Valid)
}

// BenchmarkQuotesLog finds every quote in each activity with bytes.IndexByte: the least any JSON
// reader does, since it must know where each string begins and ends to tell a key or a bracket
// from text. A floor for the machine, not a reader: it checks nothing.
func BenchmarkQuotesLog(b *testing.B) {
	runYardstick(b, func(raw []byte) bool {
		quotes := 0
		for i := 0; ; quotes++ {
			k := bytes.IndexByte(raw[i:], '"')
			if k < 0 {
				break
			}
			i += k + 1
		}
		return quotes > 0
	})
}
