package sortkeys

import (
	"math"
	"testing"
)

func TestNumberString(t *testing.T) {
	tenth, fifth := 0.1, 0.2 // variables: a constant 0.1 + 0.2 would be exactly 0.3
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{1, "1"}, {-1, "-1"}, {1735689603000, "1735689603000"}, {1.5, "1.5"}, {math.Copysign(0, -1), "0"},
		{0.1, "0.1"}, {0.000001, "0.000001"}, {1e-7, "1e-7"}, {2.5e-8, "2.5e-8"}, {123e18, "123000000000000000000"},
		{1e21, "1e+21"}, {1.25e22, "1.25e+22"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"},
		{math.NaN(), "NaN"}, {9007199254740993, "9007199254740992"}, {tenth + fifth, "0.30000000000000004"},
	} {
		if got := NumberString(tc.f); got != tc.want {
			t.Errorf("NumberString(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}
