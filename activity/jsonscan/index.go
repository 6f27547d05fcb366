package jsonscan

import (
	"encoding/binary"
	"math/bits"
)

// The string scans look for the next byte of a few kinds from d[i] on: indexQuote for a quote or
// a backslash (where a string ends or an escape begins), indexNotPlain also for a control
// character or a byte outside ASCII (where PlainString must look closer). Both return len(d)
// when there is none, and for i >= len(d). amd64 compares sixteen bytes at a time
// (index_amd64.s); the portable forms below compare eight.

func indexQuoteWords(d []byte, i int) int {
	for ; i+8 <= len(d); i += 8 {
		if m := quoteOrBackslash(binary.LittleEndian.Uint64(d[i : i+8])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(d); i++ {
		if c := d[i]; c == '"' || c == '\\' {
			return i
		}
	}
	return len(d)
}

func indexNotPlainWords(d []byte, i int) int {
	for ; i+8 <= len(d); i += 8 {
		x := binary.LittleEndian.Uint64(d[i : i+8])
		if m := quoteOrBackslash(x) | (x-controls)&^x&highBits | x&highBits; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(d); i++ {
		if c := d[i]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			return i
		}
	}
	return len(d)
}

// compactKey reads the member key at d[i] (after the ',' at d[i] when begun) as Next would, for
// compact JSON: a plain key, a colon right after it and a value right after that. It returns the
// key's bounds and the index of its value; value is -1 for the closing brace at d[i], and 0 for
// any other input, which Next then reads the general way. With values, vend is the index after
// the value when it is a string PlainString would hand out the inside of, and 0 otherwise.
func compactKeyWords(d []byte, i int, begun, values bool) (start, end, value, vend int) {
	if i < len(d) && d[i] == '}' {
		return 0, 0, -1, 0
	}
	if begun {
		if i >= len(d) || d[i] != ',' {
			return 0, 0, 0, 0
		}
		i++
	}
	if i >= len(d) || d[i] != '"' {
		return 0, 0, 0, 0
	}
	start = i + 1
	end = indexQuoteWords(d, start)
	if end+2 >= len(d) || d[end] != '"' || d[end+1] != ':' || d[end+2] <= ' ' {
		return 0, 0, 0, 0
	}
	value = end + 2
	if values && d[value] == '"' {
		if j := indexNotPlainWords(d, value+1); j < len(d) && d[j] == '"' {
			vend = j + 1
		}
	}
	return start, end, value, vend
}

// compactRunWords is Object.MemberRun for compact JSON: it reads members from o.i as
// compactKeyWords does with values, one after another, into run, and stops after a member whose
// value is not a plain string (its end is 0), at the closing brace (done, with o past it), once
// run is full, or where compactKeyWords reads nothing. o is left as Member and SkipTo would
// leave it after the members read, unchanged when there is none.
func compactRunWords(o *Object, run []Span) (n int, done bool) {
	d, i, begun := o.d, o.i, o.begun
	for n < len(run) {
		start, end, v, vend := compactKeyWords(d, i, begun, true)
		if v < 0 {
			if n > 0 {
				o.begun, o.escaped = true, false
			}
			o.i = i + 1
			return n, true
		}
		if v == 0 {
			break
		}
		run[n] = Span{KeyStart: start, KeyEnd: end, Value: v, End: vend}
		n++
		begun = true
		if vend == 0 {
			i = v
			break
		}
		i = vend
	}
	if n > 0 {
		o.begun, o.escaped = true, false
		o.SkipTo(i)
	}
	return n, false
}
