package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// reservoirSize bounds the samples one latency keeps: beyond it, samples are replaced at random
// (reservoir sampling) so percentiles stay unbiased and memory stays flat on long runs. Count,
// mean and max stay exact.
const reservoirSize = 100_000

// latency collects durations and summarises them in milliseconds.
type latency struct {
	mu      sync.Mutex
	samples []float64
	count   int64
	sum     float64
	max     float64
	rng     *rand.Rand
}

func newLatency() *latency {
	return &latency{rng: rand.New(rand.NewPCG(1, 2))}
}

func (l *latency) add(d time.Duration) {
	ms := float64(d) / float64(time.Millisecond)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	l.sum += ms
	l.max = max(l.max, ms)
	if len(l.samples) < reservoirSize {
		l.samples = append(l.samples, ms)
		return
	}
	if i := l.rng.Int64N(l.count); i < reservoirSize {
		l.samples[i] = ms
	}
}

// Summary is a latency summary in milliseconds (JSON: latency_ms.<name>).
type Summary struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

func (l *latency) summary() Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return Summary{}
	}
	s := slices.Clone(l.samples)
	slices.Sort(s)
	return Summary{
		Count: l.count,
		Mean:  round(l.sum / float64(l.count)),
		P50:   round(rank(s, 0.50)),
		P95:   round(rank(s, 0.95)),
		P99:   round(rank(s, 0.99)),
		Max:   round(l.max),
	}
}

// rank is the nearest-rank percentile of sorted samples.
func rank(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// round keeps three decimals (microseconds).
func round(ms float64) float64 { return math.Round(ms*1000) / 1000 }
