package findings

import (
	"math"
	"regexp"
	"time"

	"github.com/directline-go/directline/sortkeys"
)

// rfc3339 is what the rules call ISO: a full date-time with seconds and a UTC offset. RFC 3339
// §5.6 allows a lower-case t and z, which Date.parse reads alike.
var rfc3339 = regexp.MustCompile(`^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(?:\.(\d+))?(?:[Zz]|[+-]\d\d:\d\d)$`)

// parseTimestamp is Date.parse as the replay computes it (sortkeys.DateParse): ok is false where
// it gives NaN, so the timestamp rules and the predicted screen read every timestamp alike.
func parseTimestamp(s string) (t time.Time, ok bool) {
	v := sortkeys.DateParse(s)
	if math.IsNaN(v) {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(v)).UTC(), true
}

// isoFraction reports whether s is an RFC 3339 date-time, and how many fractional digits it has.
// Its fields must be in range (RFC 3339 §5.7): a day the month has, hours to 23, minutes to 59,
// seconds to 60 (a leap second), offsets to 23:59.
func isoFraction(s string) (digits int, ok bool) {
	if serviceShape(s) {
		return 3, inRange(s)
	}
	m := rfc3339.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	return len(m[1]), inRange(s)
}

// inRange checks the fields of s, which has an RFC 3339 shape: the date and time at their fixed
// places, the offset (if not Z) in the last six bytes.
func inRange(s string) bool {
	n := func(i int) int { return int(s[i]-'0')*10 + int(s[i+1]-'0') }
	year, month, day := n(0)*100+n(2), n(5), n(8)
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) ||
		n(11) > 23 || n(14) > 59 || n(17) > 60 {
		return false
	}
	if end := s[len(s)-1]; end != 'Z' && end != 'z' {
		return n(len(s)-5) <= 23 && n(len(s)-2) <= 59
	}
	return true
}

// daysIn is the number of days of month (1 to 12) in the proleptic Gregorian year.
func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// serviceShape reports whether s has the shape services send, YYYY-MM-DDTHH:MM:SS.sssZ (digits
// where the layout has them), which rfc3339 matches. Checking it directly
// spares them for nearly every timestamp of a log.
func serviceShape(s string) bool {
	const layout = "dddd-dd-ddTdd:dd:dd.dddZ"
	if len(s) != len(layout) {
		return false
	}
	for i := 0; i < len(layout); i++ {
		if layout[i] == 'd' {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		} else if s[i] != layout[i] {
			return false
		}
	}
	return true
}
