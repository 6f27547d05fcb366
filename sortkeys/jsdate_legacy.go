package sortkeys

import (
	"math"
	"unicode/utf16"
)

// legacyDate is Date.parse(s) as V8 (Chrome, Edge, Node) computes it, for the strings parseDate's
// ISO reader refuses. V8 reads the ES5 date-time form as far as it goes and continues with its
// legacy forms: "Tue, 01 Jan 2025 00:00:00 GMT", "Wed Jan 01 2025 00:00:00 GMT+0000 (…)",
// "2025/01/01 10:00", "1/2/2025", "Jan 1, 2025 10:00 pm", "2025-1-1". Local time is UTC, as in
// parseDate. The rules are those of V8's src/date/dateparser (tokens, then a day, a time and a
// time zone composed from them); TestLegacyDateMatchesV8 compares with Node.
func legacyDate(s string) float64 {
	units := utf16.Encode([]rune(s))
	// V8 reads a NUL as the end of the string.
	for i, u := range units {
		if u == 0 {
			units = units[:i]
			break
		}
	}
	sc := dateScanner{s: units}
	sc.next = sc.scan()
	var day dayParts
	var tm timeParts
	tz := zoneParts{sign: none, hour: none, minute: none}
	if !parseLegacy(&sc, &day, &tm, &tz) {
		return math.NaN()
	}
	return composeDate(&day, &tm, &tz)
}

// none marks a part not read (V8's kNone).
const none = math.MaxInt32

type tokKind int8

const (
	tokInvalid tokKind = iota
	tokUnknown
	tokSpace
	tokNumber
	tokSymbol
	tokEnd
	tokWord
)

type wordKind int8

const (
	wordOther wordKind = iota
	wordMonth
	wordZone
	wordTimeSep
	wordAMPM
)

// dateToken is one token of a date string: a number (value, its digit count in n), a symbol
// (value), a word (its kind, value and length in n) or whitespace, unknown, end or invalid.
type dateToken struct {
	kind  tokKind
	word  wordKind
	n     int
	value int
}

func (t dateToken) isSymbol(c byte) bool  { return t.kind == tokSymbol && t.value == int(c) }
func (t dateToken) isSign() bool          { return t.isSymbol('+') || t.isSymbol('-') }
func (t dateToken) sign() int             { return 44 - t.value } // '+' is 43, '-' is 45
func (t dateToken) isNumberOf(n int) bool { return t.kind == tokNumber && t.n == n }
func (t dateToken) isZ() bool {
	return t.kind == tokWord && t.word == wordZone && t.n == 1 && t.value == 0
}

// dateWords are the words V8 knows by their first three letters (shorter ones padded with 0): a
// word longer than its entry matches only month names.
var dateWords = []struct {
	prefix [3]uint16
	kind   wordKind
	value  int
}{
	{[3]uint16{'j', 'a', 'n'}, wordMonth, 1}, {[3]uint16{'f', 'e', 'b'}, wordMonth, 2},
	{[3]uint16{'m', 'a', 'r'}, wordMonth, 3}, {[3]uint16{'a', 'p', 'r'}, wordMonth, 4},
	{[3]uint16{'m', 'a', 'y'}, wordMonth, 5}, {[3]uint16{'j', 'u', 'n'}, wordMonth, 6},
	{[3]uint16{'j', 'u', 'l'}, wordMonth, 7}, {[3]uint16{'a', 'u', 'g'}, wordMonth, 8},
	{[3]uint16{'s', 'e', 'p'}, wordMonth, 9}, {[3]uint16{'o', 'c', 't'}, wordMonth, 10},
	{[3]uint16{'n', 'o', 'v'}, wordMonth, 11}, {[3]uint16{'d', 'e', 'c'}, wordMonth, 12},
	{[3]uint16{'a', 'm'}, wordAMPM, 0}, {[3]uint16{'p', 'm'}, wordAMPM, 12},
	{[3]uint16{'u', 't'}, wordZone, 0}, {[3]uint16{'u', 't', 'c'}, wordZone, 0},
	{[3]uint16{'z'}, wordZone, 0}, {[3]uint16{'g', 'm', 't'}, wordZone, 0},
	{[3]uint16{'c', 'd', 't'}, wordZone, -5}, {[3]uint16{'c', 's', 't'}, wordZone, -6},
	{[3]uint16{'e', 'd', 't'}, wordZone, -4}, {[3]uint16{'e', 's', 't'}, wordZone, -5},
	{[3]uint16{'m', 'd', 't'}, wordZone, -6}, {[3]uint16{'m', 's', 't'}, wordZone, -7},
	{[3]uint16{'p', 'd', 't'}, wordZone, -7}, {[3]uint16{'p', 's', 't'}, wordZone, -8},
	{[3]uint16{'t'}, wordTimeSep, 0},
}

// dateScanner splits a date string into tokens, one ahead (next).
type dateScanner struct {
	s    []uint16
	i    int
	next dateToken
}

func (sc *dateScanner) ch() uint16 {
	if sc.i < len(sc.s) {
		return sc.s[sc.i]
	}
	return 0
}

func (sc *dateScanner) take() dateToken {
	t := sc.next
	sc.next = sc.scan()
	return t
}

func (sc *dateScanner) skipSymbol(c byte) bool {
	if sc.next.isSymbol(c) {
		sc.next = sc.scan()
		return true
	}
	return false
}

func (sc *dateScanner) scan() dateToken {
	c := sc.ch()
	switch {
	case c == 0:
		return dateToken{kind: tokEnd}
	case c >= '0' && c <= '9':
		// Nine significant digits at most, after the leading zeros; every digit counts in the
		// length.
		start := sc.i
		for sc.ch() == '0' {
			sc.i++
		}
		v, sig := 0, 0
		for c := sc.ch(); c >= '0' && c <= '9'; c = sc.ch() {
			if sig < 9 {
				v = v*10 + int(c-'0')
			}
			sig++
			sc.i++
		}
		return dateToken{kind: tokNumber, n: sc.i - start, value: v}
	case c == ':' || c == '-' || c == '+' || c == '.' || c == ')':
		sc.i++
		return dateToken{kind: tokSymbol, n: 1, value: int(c)}
	case c >= 'A' && !isDateSpace(c):
		var prefix [3]uint16
		n := 0
		for c := sc.ch(); c >= 'A' && !isDateSpace(c); c = sc.ch() {
			if n < 3 {
				prefix[n] = c | 0x20
			}
			n++
			sc.i++
		}
		for _, w := range dateWords {
			if w.prefix == prefix && (n <= 3 || w.kind == wordMonth) {
				return dateToken{kind: tokWord, word: w.kind, n: n, value: w.value}
			}
		}
		return dateToken{kind: tokWord, word: wordOther, n: n}
	case isDateSpace(c) || isLineTerminator(c):
		sc.i++
		return dateToken{kind: tokSpace, n: 1}
	case c == '(':
		depth := 0
		for {
			switch sc.ch() {
			case ')':
				depth--
			case '(':
				depth++
			}
			sc.i++
			if depth <= 0 || sc.ch() == 0 {
				break
			}
		}
		return dateToken{kind: tokUnknown, n: 1}
	}
	sc.i++
	return dateToken{kind: tokUnknown, n: 1}
}

// isDateSpace is ECMAScript's WhiteSpace; isLineTerminator its LineTerminator.
func isDateSpace(c uint16) bool {
	switch c {
	case '\t', '\v', '\f', ' ', 0xa0, 0xfeff, 0x1680, 0x202f, 0x205f, 0x3000:
		return true
	}
	return c >= 0x2000 && c <= 0x200a
}

func isLineTerminator(c uint16) bool { return c == '\n' || c == '\r' || c == 0x2028 || c == 0x2029 }

// dayParts collects up to three date numbers and a named month.
type dayParts struct {
	comp  [3]int
	n     int
	month int // named month, 0 for none
	iso   bool
}

func (d *dayParts) add(v int) bool { return push(d.comp[:], &d.n, v) }

// push sets comp[*n] to v and advances *n, or reports false when comp is full.
func push(comp []int, n *int, v int) bool {
	if *n == len(comp) {
		return false
	}
	comp[*n] = v
	*n++
	return true
}

// timeParts collects hour, minute, second and millisecond; ampm is 0 or 12 after AM or PM.
type timeParts struct {
	comp [4]int
	n    int
	ampm int
	has  bool // ampm was read
}

func (t *timeParts) add(v int) bool { return push(t.comp[:], &t.n, v) }

func (t *timeParts) addFinal(v int) bool {
	if !t.add(v) {
		return false
	}
	for t.n < len(t.comp) {
		t.comp[t.n] = 0
		t.n++
	}
	return true
}

func (t *timeParts) expecting(v int) bool {
	return (t.n == 1 && isMinute(v)) || (t.n == 2 && isMinute(v)) || (t.n == 3 && v >= 0 && v <= 999)
}

// zoneParts is a UTC offset; none in sign means local time.
type zoneParts struct{ sign, hour, minute int }

func (z *zoneParts) set(hours int) {
	z.sign = 1
	if hours < 0 {
		z.sign = -1
	}
	z.hour, z.minute = hours*z.sign, 0
}

func (z *zoneParts) expecting(v int) bool { return z.hour != none && z.minute == none && isMinute(v) }
func (z *zoneParts) isUTC() bool          { return z.hour == 0 && z.minute == 0 }

func isMinute(v int) bool { return v >= 0 && v <= 59 }
func isDay(v int) bool    { return v >= 1 && v <= 31 }

// millisOf is the first three significant digits of a fraction token, as milliseconds.
func millisOf(t dateToken) int {
	v, n := t.value, min(t.n, 9)
	switch {
	case n == 1:
		return v * 100
	case n == 2:
		return v * 10
	}
	for ; n > 3; n-- {
		v /= 10
	}
	return v
}

// parseISOPart reads the ES5 form as far as it goes: it returns the token the legacy reader goes
// on with, an end token when the whole string was the ES5 form, or ok false when the string
// cannot be a date.
func parseISOPart(sc *dateScanner, day *dayParts, tm *timeParts, tz *zoneParts) (next dateToken, ok bool) {
	switch {
	case sc.next.isSign():
		sign := sc.take()
		if !sc.next.isNumberOf(6) {
			return sign, true
		}
		year := sc.take().value
		if sign.sign() < 0 && year == 0 {
			return sign, true
		}
		day.add(sign.sign() * year)
	case sc.next.isNumberOf(4):
		day.add(sc.take().value)
	default:
		return sc.take(), true
	}
	if sc.skipSymbol('-') {
		if !sc.next.isNumberOf(2) || sc.next.value < 1 || sc.next.value > 12 {
			return sc.take(), true
		}
		day.add(sc.take().value)
		if sc.skipSymbol('-') {
			if !sc.next.isNumberOf(2) || !isDay(sc.next.value) {
				return sc.take(), true
			}
			day.add(sc.take().value)
		}
	}
	if sc.next.kind != tokWord || sc.next.word != wordTimeSep {
		if sc.next.kind != tokEnd {
			return sc.take(), true
		}
	} else {
		sc.take()
		if !sc.next.isNumberOf(2) || sc.next.value > 24 {
			return dateToken{}, false
		}
		hour24 := sc.next.value == 24
		tm.add(sc.take().value)
		if !sc.skipSymbol(':') {
			return dateToken{}, false
		}
		if !sc.next.isNumberOf(2) || !isMinute(sc.next.value) || (hour24 && sc.next.value > 0) {
			return dateToken{}, false
		}
		tm.add(sc.take().value)
		if sc.skipSymbol(':') {
			if !sc.next.isNumberOf(2) || !isMinute(sc.next.value) || (hour24 && sc.next.value > 0) {
				return dateToken{}, false
			}
			tm.add(sc.take().value)
			if sc.skipSymbol('.') {
				if sc.next.kind != tokNumber || (hour24 && sc.next.value > 0) {
					return dateToken{}, false
				}
				tm.add(millisOf(sc.take()))
			}
		}
		switch {
		case sc.next.isZ():
			sc.take()
			tz.set(0)
		case sc.next.isSign():
			tz.sign = sc.take().sign()
			if sc.next.isNumberOf(4) {
				hm := sc.take().value
				if hm/100 > 23 || !isMinute(hm%100) {
					return dateToken{}, false
				}
				tz.hour, tz.minute = hm/100, hm%100
			} else {
				if !sc.next.isNumberOf(2) || sc.next.value > 23 {
					return dateToken{}, false
				}
				tz.hour = sc.take().value
				if !sc.skipSymbol(':') || !sc.next.isNumberOf(2) || !isMinute(sc.next.value) {
					return dateToken{}, false
				}
				tz.minute = sc.take().value
			}
		}
		if sc.next.kind != tokEnd {
			return dateToken{}, false
		}
	}
	// A date-only form is UTC; a date-time without an offset is local time.
	if tz.hour == none && tm.n == 0 {
		tz.set(0)
	}
	day.iso = true
	return dateToken{kind: tokEnd}, true
}

// parseLegacy reads the whole string into day, tm and tz; false is NaN.
func parseLegacy(sc *dateScanner, day *dayParts, tm *timeParts, tz *zoneParts) bool {
	tok, ok := parseISOPart(sc, day, tm, tz)
	if !ok {
		return false
	}
	hasNumber := day.n > 0
	for ; tok.kind != tokEnd; tok = sc.take() {
		switch {
		case tok.kind == tokNumber:
			hasNumber = true
			v := tok.value
			switch {
			case sc.skipSymbol(':'):
				if sc.skipSymbol(':') {
					if tm.n != 0 {
						return false
					}
					tm.add(v)
					tm.add(0)
				} else {
					if !tm.add(v) {
						return false
					}
					if sc.next.isSymbol('.') {
						sc.take()
					}
				}
			case sc.skipSymbol('.') && tm.expecting(v):
				tm.add(v)
				if sc.next.kind != tokNumber {
					return false
				}
				tm.addFinal(millisOf(sc.take()))
			case tz.expecting(v):
				tz.minute = v
			case tm.expecting(v):
				tm.addFinal(v)
				// The time must end here: the string, a space, Z or an offset follows.
				if p := sc.next; p.kind != tokEnd && p.kind != tokSpace && !p.isZ() && !p.isSign() {
					return false
				}
			default:
				if !day.add(v) {
					return false
				}
				sc.skipSymbol('-')
			}
		case tok.kind == tokWord:
			switch {
			case tok.word == wordAMPM && tm.n != 0:
				tm.ampm, tm.has = tok.value, true
			case tok.word == wordMonth:
				day.month = tok.value
				sc.skipSymbol('-')
			case tok.word == wordZone && hasNumber:
				tz.set(tok.value)
			default:
				// Words before the first number are ignored, unless a number follows at once.
				if hasNumber || sc.next.kind == tokNumber {
					return false
				}
			}
		case tok.isSign() && (tz.isUTC() || tm.n != 0):
			tz.sign = tok.sign()
			v, n := 0, 0
			if sc.next.kind == tokNumber {
				t := sc.take()
				v, n = t.value, t.n
			}
			hasNumber = true
			switch {
			case sc.next.isSymbol(':'):
				tz.hour, tz.minute = v, none
			case n == 1 || n == 2:
				tz.hour, tz.minute = v, 0
			case n == 3 || n == 4:
				tz.hour, tz.minute = v/100, v%100
			default:
				return false
			}
		case (tok.isSign() || tok.isSymbol(')')) && hasNumber:
			return false
		}
	}
	return true
}

// composeDate is the time value of the parts, or NaN where V8's composers refuse them.
func composeDate(day *dayParts, tm *timeParts, tz *zoneParts) float64 {
	if day.n < 1 {
		return math.NaN()
	}
	for day.n < len(day.comp) {
		day.comp[day.n] = 1
		day.n++
	}
	var year, month, dom int
	switch {
	case day.month == 0 && (day.iso || !isDay(day.comp[0])):
		year, month, dom = day.comp[0], day.comp[1], day.comp[2]
	case day.month == 0:
		month, dom, year = day.comp[0], day.comp[1], day.comp[2]
	case !isDay(day.comp[0]):
		month, year, dom = day.month, day.comp[0], day.comp[1]
	default:
		month, dom, year = day.month, day.comp[0], day.comp[1]
	}
	if !day.iso {
		switch {
		case year >= 0 && year <= 49:
			year += 2000
		case year >= 50 && year <= 99:
			year += 1900
		}
	}
	if month < 1 || month > 12 || !isDay(dom) {
		return math.NaN()
	}
	for tm.n < len(tm.comp) {
		tm.comp[tm.n] = 0
		tm.n++
	}
	hour, minute, sec, ms := tm.comp[0], tm.comp[1], tm.comp[2], tm.comp[3]
	if tm.has {
		if hour < 0 || hour > 12 {
			return math.NaN()
		}
		hour = hour%12 + tm.ampm
	}
	if hour < 0 || hour > 23 || !isMinute(minute) || !isMinute(sec) || ms < 0 || ms > 999 {
		if hour != 24 || minute != 0 || sec != 0 || ms != 0 {
			return math.NaN()
		}
	}
	t := float64(daysFromCivil(year, month, 1)+int64(dom-1))*86400000 +
		float64(hour)*3600000 + float64(minute)*60000 + float64(sec)*1000 + float64(ms)
	if tz.sign == none {
		// Local time, which is UTC here; V8 refuses a local time more than ten days past the
		// range before converting it.
		if math.Abs(t) > maxTimeValue+864000000 {
			return math.NaN()
		}
	} else {
		h, m := tz.hour, tz.minute
		if h == none {
			h = 0
		}
		if m == none {
			m = 0
		}
		// V8 adds up the offset's seconds in unsigned 32-bit arithmetic and refuses a sum above
		// the largest small integer.
		secs := uint32(h)*3600 + uint32(m)*60
		if secs > math.MaxInt32 {
			return math.NaN()
		}
		off := int(secs)
		if tz.sign < 0 {
			off = -off
		}
		t -= float64(off) * 1000
	}
	if math.Abs(t) > maxTimeValue {
		return math.NaN()
	}
	return t
}
