package findings

import (
	"math"
	"regexp"
	"time"

	"github.com/directline-go/directline/sortkeys"
)

// rfc3339 is what the rules call ISO: a full date-time with seconds and a UTC offset.
var rfc3339 = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(\d+))?(?:Z|[+-]\d\d:\d\d)$`)

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
