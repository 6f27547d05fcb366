package sortkeys

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"testing"
)

// yardstickLog is the activities of the first 100k events of the replay log and their total size
// in bytes, for the yardsticks below.
func yardstickLog() (raws []json.RawMessage, size int) {
	for _, ev := range benchLog(100_000, 0) {
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

// BenchmarkQuotesLog finds every quote in each activity and does nothing else, two ways: one
// bytes.IndexByte call per quote, and eight bytes at a time with word arithmetic. Any JSON reader
// locates the strings, since it must tell a key or a bracket from text, so each figure is what
// that part alone costs on the machine at hand done that way; neither checks anything.
func BenchmarkQuotesLog(b *testing.B) {
	for _, c := range []struct {
		name string
		find func([]byte) (n, sum int)
	}{{"IndexByte", quotesByIndex}, {"words", quotesByWords}} {
		b.Run(c.name, func(b *testing.B) {
			runYardstick(b, func(raw []byte) bool {
				n, _ := c.find(raw)
				return n > 0
			})
		})
	}
}

// quotesByIndex finds the quotes of d with one bytes.IndexByte call per quote. It returns how
// many there are and the sum of their positions.
func quotesByIndex(d []byte) (n, sum int) {
	for i := 0; ; n++ {
		k := bytes.IndexByte(d[i:], '"')
		if k < 0 {
			return n, sum
		}
		sum += i + k
		i += k + 1
	}
}

// quotesByWords is quotesByIndex eight bytes at a time. A byte of x is zero where d holds a quote;
// adding 0x7f to its low seven bits sets its top bit unless it is zero, so the mask is exact (no
// carry crosses into the next byte).
func quotesByWords(d []byte) (n, sum int) {
	const lows, highs = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	i := 0
	for ; i+8 <= len(d); i += 8 {
		x := binary.LittleEndian.Uint64(d[i:]) ^ 0x2222222222222222
		for m := ^((x&lows + lows) | x) & highs; m != 0; m &= m - 1 {
			sum += i + bits.TrailingZeros64(m)>>3
			n++
		}
	}
	for ; i < len(d); i++ {
		if d[i] == '"' {
			sum += i
			n++
		}
	}
	return n, sum
}

// TestQuoteFindersAgree checks the two ways of BenchmarkQuotesLog against each other, on the
// benchmark's kind of activities and on inputs where the word arithmetic could go wrong: a quote
// at every offset of a word, bytes next to '"' in value (0x21, 0x23, 0xa2), zero bytes and no
// quotes at all.
func TestQuoteFindersAgree(t *testing.T) {
	inputs := [][]byte{nil, []byte(`"`), []byte("!#\xa2\xa2#!"), []byte("\x00\xff\x22\x22\xa2\x22\x00")}
	for k := 0; k < 17; k++ {
		d := bytes.Repeat([]byte{'#'}, 17)
		d[k] = '"'
		inputs = append(inputs, d, bytes.Repeat([]byte(`"!`), k))
	}
	for _, ev := range randomLog(7, 2000, true) {
		inputs = append(inputs, ev.Activity)
	}
	for _, d := range inputs {
		n, sum := quotesByIndex(d)
		wn, wsum := quotesByWords(d)
		if n != wn || sum != wsum || n != bytes.Count(d, []byte(`"`)) {
			t.Fatalf("%q: IndexByte finds %d quotes (positions summing to %d), words %d (%d)", d, n, sum, wn, wsum)
		}
	}
}
