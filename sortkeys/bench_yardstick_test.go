package sortkeys

import (
	"encoding/json"
	"testing"
)

// BenchmarkValidLog runs encoding/json's Valid over every activity of the first 100k events of the
// replay log, one after another: not part of the replay, but a yardstick for the machine it runs
// on. Reading a log means at least reading its JSON, so the replay's cpu-ns/event divided by
// this benchmark's cpu-ns/activity says how a replay compares with the standard library merely
// checking the same bytes, whatever the machine (docs/BENCHMARKS.md).
func BenchmarkValidLog(b *testing.B) {
	var raws []json.RawMessage
	size := 0
	for _, ev := range benchLog(100_000) {
		if len(ev.Activity) > 0 {
			raws = append(raws, ev.Activity)
			size += len(ev.Activity)
		}
	}
	b.SetBytes(int64(size))
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		for _, raw := range raws {
			if !json.Valid(raw) {
				b.Fatal("invalid activity in the benchmark log")
			}
		}
	}
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N*len(raws)), "cpu-ns/activity")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(raws)), "ns/activity")
}
