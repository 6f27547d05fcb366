package jsonscan

import (
	"bytes"
	"testing"
)

func refIndex(d []byte, i int, special func(c byte) bool) int {
	for ; i < len(d); i++ {
		if special(d[i]) {
			return i
		}
	}
	return len(d)
}

func isQuoteOrBackslash(c byte) bool { return c == '"' || c == '\\' }

func isNotPlain(c byte) bool { return c == '"' || c == '\\' || c < 0x20 || c >= 0x80 }

// checkIndex compares the string scans, the platform's and the portable ones, with a byte at a
// time reference from every start in d and past its end.
func checkIndex(t *testing.T, d []byte) {
	t.Helper()
	for i := 0; i <= len(d)+2; i++ {
		want := refIndex(d, i, isQuoteOrBackslash)
		if got, gotw := indexQuote(d, i), indexQuoteWords(d, i); got != want || gotw != want {
			t.Fatalf("indexQuote(%q, %d) = %d, words %d; want %d", d, i, got, gotw, want)
		}
		want = refIndex(d, i, isNotPlain)
		if got, gotw := indexNotPlain(d, i), indexNotPlainWords(d, i); got != want || gotw != want {
			t.Fatalf("indexNotPlain(%q, %d) = %d, words %d; want %d", d, i, got, gotw, want)
		}
	}
}

// TestIndexEveryOffset puts each kind of byte the scans tell apart, and its neighbours in value,
// at every offset of inputs shorter and longer than the sixteen and eight bytes they compare at a
// time, and looks from every start.
func TestIndexEveryOffset(t *testing.T) {
	kinds := []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7e, 0x7f, 0x80, 0xa2, 0xdc, 0xff}
	for n := 0; n <= 40; n++ {
		checkIndex(t, bytes.Repeat([]byte("a"), n))
		for pos := 0; pos < n; pos++ {
			for _, k := range kinds {
				d := bytes.Repeat([]byte("a"), n)
				d[pos] = k
				checkIndex(t, d)
				// A second one further on.
				if pos+5 < n {
					d[pos+5] = '"'
					checkIndex(t, d)
				}
			}
		}
	}
}

// TestIndexSubslice: the scans look only within len(d), whatever lies beyond it in memory.
func TestIndexSubslice(t *testing.T) {
	buf := bytes.Repeat([]byte(`"\`), 64)
	for n := 0; n <= 40; n++ {
		d := bytes.Repeat([]byte("b"), n)
		copy(buf, d)
		sub := buf[:n:n]
		for i := 0; i <= n; i++ {
			if got := indexQuote(sub, i); got != n {
				t.Fatalf("indexQuote(%q, %d) = %d, want %d", sub, i, got, n)
			}
			if got := indexNotPlain(sub, i); got != n {
				t.Fatalf("indexNotPlain(%q, %d) = %d, want %d", sub, i, got, n)
			}
		}
	}
}
