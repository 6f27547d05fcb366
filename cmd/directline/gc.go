package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The collector's target is tuned to the live heap. A percentage well above GOGC's default saves
// CPU while the live heap is small (tens of MB under a message load, which allocates per
// message), but applied to a large live heap (thousands of idle streams) it would multiply the
// memory held for garbage too. So the heap may grow between collections by GCPercent of the live
// heap, but by no more than GCGrowth bytes, and always by at least the live heap's size (GOGC=100).

// gcPercentFor is the percentage for a live heap (with stacks and globals) of live bytes:
// maxPercent while that much growth stays within growth bytes, less as live grows, never below
// 100.
func gcPercentFor(live, growth uint64, maxPercent int) int {
	p := uint64(maxPercent)
	if hundredth := live / 100; hundredth > 0 && p*hundredth > growth {
		p = growth / hundredth
	}
	return max(int(p), 100)
}

// gcTuner sets the collector's percentage after each collection from the live heap it found.
type gcTuner struct {
	growth     uint64
	maxPercent int
	sample     []metrics.Sample
	// tuned counts the tune calls, stopped ends the tuning at the next collection (tests).
	tuned   atomic.Int64
	stopped atomic.Bool
}

// startGCTuner sets the percentage now and again after every collection, for the life of the
// process. maxPercent must be above 100.
func startGCTuner(growth uint64, maxPercent int) *gcTuner {
	t := &gcTuner{growth: growth, maxPercent: maxPercent, sample: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
	}}
	t.tune()
	t.arm()
	return t
}

// gcSentinel is allocated for its finalizer, which runs once a collection has found it garbage.
// It is 16 bytes so that it gets an allocation of its own: the finalizer of a smaller object
// without pointers may never run, as the tiny allocator packs such objects together.
type gcSentinel struct{ _ [16]byte }

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		if t.stopped.Load() {
			return
		}
		t.tune()
		t.arm()
	})
}

func (t *gcTuner) tune() {
	// The percentage applies to the live heap plus the stacks and globals the collector scanned
	// (GOGC's definition since Go 1.18); thousands of streams hold megabytes of stack.
	metrics.Read(t.sample)
	var base uint64
	for _, s := range t.sample {
		if s.Value.Kind() == metrics.KindUint64 {
			base += s.Value.Uint64()
		}
	}
	debug.SetGCPercent(gcPercentFor(base, t.growth, t.maxPercent))
	t.tuned.Add(1)
}
