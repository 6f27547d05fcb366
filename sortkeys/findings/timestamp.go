package findings

import (
	"regexp"
	"strings"
	"time"
)

// isoDateTime is ECMAScript's Date Time String Format as V8 reads it (any number of fractional
// digits; the offset optional, and then the time is local). Expanded years (+002024) and 24:00 are
// not recognised, which errs towards reporting a timestamp as unparseable.
var isoDateTime = regexp.MustCompile(`^\d{4}-\d\d(?:-\d\d(?:T\d\d:\d\d(?::\d\d(?:\.(\d+))?)?(Z|[+-]\d\d:\d\d)?)?)?$`)

// rfc3339 is what the rules call ISO: a full date-time with seconds and a UTC offset.
var rfc3339 = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(\d+))?(?:Z|[+-]\d\d:\d\d)$`)

// legacyLayouts are non-ISO forms JavaScript engines also accept through their fallback parser
// (RFC 1123 / toUTCString, toString, common US forms).
var legacyLayouts = []string{
	time.RFC1123, time.RFC1123Z, time.RFC850, time.ANSIC, time.UnixDate, time.RubyDate,
	"Mon Jan 02 2006 15:04:05 GMT-0700", "Mon Jan 02 2006 15:04:05 GMT-0700 (MST)",
	"2006/01/02", "2006/01/02 15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04:05Z07:00",
	"January 2, 2006", "Jan 2, 2006", "January 2, 2006 15:04:05", "Jan 2, 2006 15:04:05",
	"1/2/2006", "1/2/2006 15:04:05",
}

// parseTimestamp approximates JavaScript's Date.parse: ok is false where it gives NaN. The
// returned time is used only to compare timestamps of one log, so a missing offset counts as UTC.
func parseTimestamp(s string) (t time.Time, ok bool) {
	if t, ok := parseServiceShape(s); ok {
		return t, true
	}
	if isoDateTime.MatchString(s) {
		return parseISO(s)
	}
	for _, layout := range legacyLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// parseISO validates the ranges of a string matching isoDateTime (month 1-12, a real day of the
// month, hour 0-23, minute and second 0-59).
func parseISO(s string) (time.Time, bool) {
	body := s
	zone := ""
	if i := strings.IndexByte(s, 'T'); i >= 0 {
		rest := s[i:]
		if strings.HasSuffix(rest, "Z") {
			zone, body = "Z", s[:len(s)-1]
		} else if j := strings.LastIndexAny(rest, "+-"); j >= 0 {
			zone, body = rest[j:], s[:i+j]
		}
	}
	layouts := []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02", "2006-01"}
	for _, layout := range layouts {
		t, err := time.Parse(layout, body)
		if err != nil {
			continue
		}
		switch {
		case zone == "" || zone == "Z":
			return t, true
		default:
			off, err := time.Parse("-07:00", zone)
			if err != nil {
				return time.Time{}, false
			}
			_, secs := off.Zone()
			return t.Add(-time.Duration(secs) * time.Second), true
		}
	}
	return time.Time{}, false
}

// isoFraction reports whether s is an RFC 3339 date-time, and how many fractional digits it has.
func isoFraction(s string) (digits int, ok bool) {
	if serviceShape(s) {
		return 3, true
	}
	m := rfc3339.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	return len(m[1]), true
}

// serviceShape reports whether s has the shape services send, YYYY-MM-DDTHH:MM:SS.sssZ (digits
// where the layout has them), which the two expressions above both match. Checking it directly
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

// parseServiceShape is parseISO for a timestamp of serviceShape; ok is false for any other
// string and for fields out of range, which parseISO rejects as well.
func parseServiceShape(s string) (time.Time, bool) {
	if !serviceShape(s) {
		return time.Time{}, false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d := num(0, 4), num(5, 2), num(8, 2)
	h, mi, sec, ms := num(11, 2), num(14, 2), num(17, 2), num(20, 3)
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(time.Month(mo), y) || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(mo), d, h, mi, sec, ms*int(time.Millisecond), time.UTC), true
}

// daysIn is the number of days of month m in year y (proleptic Gregorian calendar).
func daysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
