package sortkeys

import (
	"strings"
	"testing"
)

// refSkipString is skipString one byte at a time.
func refSkipString(d []byte, i int) (int, bool, error) {
	esc := false
	for i++; i < len(d); i++ {
		switch d[i] {
		case '\\':
			esc = true
			i++
		case '"':
			return i + 1, esc, nil
		}
	}
	return 0, false, errSyntax
}

// TestSkipStringWordAtATime puts quotes, escapes and the end of the input at every offset around
// the eight-byte words the scanner reads.
func TestSkipStringWordAtATime(t *testing.T) {
	pieces := []string{`\"`, `\\`, `"`, `\u0022`, "é", "\x00", "\xff", `\`}
	for n := 0; n < 20; n++ {
		for _, p := range pieces {
			for tail := 0; tail < 10; tail++ {
				for _, end := range []string{`"`, `"x`, ``} {
					in := []byte(`"` + strings.Repeat("a", n) + p + strings.Repeat("b", tail) + end)
					gi, ge, gerr := skipString(in, 0)
					wi, we, werr := refSkipString(in, 0)
					if gi != wi || ge != we || (gerr == nil) != (werr == nil) {
						t.Errorf("skipString(%q) = %d, %v, %v; want %d, %v, %v", in, gi, ge, gerr, wi, we, werr)
					}
				}
			}
		}
	}
}
