package sortkeys

import (
	"math"
	"strconv"
	"strings"
)

// NumberString is JavaScript's String(f) (ECMA-262 Number::toString): the shortest digits that
// read back as f, without an exponent from 1e-7 up to 1e21; NaN, Infinity and -Infinity by name.
func NumberString(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// f is 0.digits × 10^n.
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, _ := strconv.Atoi(exp)
	n, k := e+1, len(digits)
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	if k > 1 {
		mant = digits[:1] + "." + digits[1:]
	}
	if e > 0 {
		exp = "+" + strconv.Itoa(e)
	} else {
		exp = strconv.Itoa(e)
	}
	return sign + mant + "e" + exp
}
