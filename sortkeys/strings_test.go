package sortkeys

import (
	"strconv"
	"testing"
)

// TestCommonValues checks that codeOf and commonValues are each other's inverse, that
// internedOf reads the common values without allocating, and that a record keeps any other type
// or role in full.
func TestCommonValues(t *testing.T) {
	for c, s := range commonValues {
		if got := codeOf(s); got != valueCode(c) {
			t.Errorf("codeOf(%q) = %d, want %d", s, got, c)
		}
		if got := codeOf([]byte(s)); got != valueCode(c) {
			t.Errorf("codeOf([]byte(%q)) = %d, want %d", s, got, c)
		}
		quoted := []byte(strconv.Quote(s))
		if got, ok := internedOf(quoted); got != s || !ok {
			t.Errorf("internedOf(%s) = %q, %v", quoted, got, ok)
		}
		if n := testing.AllocsPerRun(10, func() { internedOf(quoted) }); n != 0 {
			t.Errorf("internedOf(%s) allocates %v times", quoted, n)
		}
	}
	for _, s := range []string{"Message", "bot ", "skill", "\u00e9v\u00e9nement"} {
		if got := codeOf(s); got != valueOther {
			t.Errorf("codeOf(%q) = %d, want valueOther", s, got)
		}
		var r record
		r.setType(s)
		r.setRole(s + "!")
		if r.typ() != s || r.role() != s+"!" {
			t.Errorf("record keeps type %q and role %q, want %q and %q", r.typ(), r.role(), s, s+"!")
		}
	}
}
