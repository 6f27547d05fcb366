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
