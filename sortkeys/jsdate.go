package sortkeys

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/directline-go/directline/activity/jsonscan"
)

// jsNum is a JavaScript value that is either undefined or a number (NaN included).
type jsNum struct {
	def bool
	v   float64
}

var undef = jsNum{}

func num(v float64) jsNum { return jsNum{def: true, v: v} }

// isNumber reports a defined, non-NaN value: the only kind a ">" comparison can succeed on.
func (n jsNum) isNumber() bool { return n.def && !math.IsNaN(n.v) }

// maxTimeValue is ECMAScript's TimeClip bound (±8.64e15 ms).
const maxTimeValue = 8.64e15

// parseDate returns Date.parse(s) as V8 computes it. The ISO 8601 forms are read here: YYYY,
// YYYY-MM, YYYY-MM-DD, optionally followed by T (or t) HH:mm[:ss[.fraction]] and Z or
// ±HH:MM / ±HHMM; six-digit signed years too. Like V8 it accepts any day 1–31 in any month
// (rolling over) and 24:00:00 as the next midnight. A date-time without an offset is read as UTC
// (the zone of the environment the vectors were recorded in). Any other string goes to
// legacyDate, V8's reading of its legacy forms.
func parseDate[T string | []byte](s T) float64 {
	if len(s) == 24 {
		if v, ok := parseUTCMillis([]byte(s)); ok {
			return v
		}
	}
	p := dateParser[T]{s: s}
	v, ok := p.parse()
	if !ok {
		return legacyDate(string(s))
	}
	if math.Abs(v) > maxTimeValue {
		return math.NaN()
	}
	return v
}

type dateParser[T string | []byte] struct {
	s T
	i int
}

func (p *dateParser[T]) digits(n int) (int, bool) {
	if p.i+n > len(p.s) {
		return 0, false
	}
	v := 0
	for k := 0; k < n; k++ {
		c := p.s[p.i+k]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	p.i += n
	return v, true
}

func (p *dateParser[T]) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *dateParser[T]) parse() (float64, bool) {
	year := 0
	if p.i < len(p.s) && (p.s[0] == '+' || p.s[0] == '-') {
		neg := p.s[0] == '-'
		p.i++
		y, ok := p.digits(6)
		if !ok || (neg && y == 0) {
			return 0, false
		}
		year = y
		if neg {
			year = -y
		}
	} else {
		y, ok := p.digits(4)
		if !ok {
			return 0, false
		}
		year = y
	}
	month, day := 1, 1
	if p.eat('-') {
		m, ok := p.digits(2)
		if !ok || m < 1 || m > 12 {
			return 0, false
		}
		month = m
		if p.eat('-') {
			d, ok := p.digits(2)
			if !ok || d < 1 || d > 31 {
				return 0, false
			}
			day = d
		}
	}
	var hour, minute, sec, ms int
	offset := 0
	if p.i < len(p.s) {
		// A space is legacyDate's: V8 reads the rest as a legacy date, where years below 100
		// are 19xx or 20xx.
		c := p.s[p.i]
		if c != 'T' && c != 't' {
			return 0, false
		}
		p.i++
		var ok bool
		if hour, ok = p.digits(2); !ok || !p.eat(':') {
			return 0, false
		}
		if minute, ok = p.digits(2); !ok {
			return 0, false
		}
		if p.eat(':') {
			if sec, ok = p.digits(2); !ok {
				return 0, false
			}
			if p.eat('.') {
				start := p.i
				frac := 0
				for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
					if p.i-start < 3 {
						frac = frac*10 + int(p.s[p.i]-'0')
					}
					p.i++
				}
				n := p.i - start
				if n == 0 {
					return 0, false
				}
				for ; n < 3; n++ {
					frac *= 10
				}
				ms = frac
			}
		}
		if hour > 24 || minute > 59 || sec > 59 || (hour == 24 && (minute > 0 || sec > 0 || ms > 0)) {
			return 0, false
		}
		if p.i < len(p.s) {
			switch p.s[p.i] {
			case 'Z', 'z':
				p.i++
			case '+', '-':
				sign := 1
				if p.s[p.i] == '-' {
					sign = -1
				}
				p.i++
				oh, ok := p.digits(2)
				if !ok {
					return 0, false
				}
				p.eat(':')
				om, ok := p.digits(2)
				if !ok || oh > 23 || om > 59 {
					return 0, false
				}
				offset = sign * (oh*60 + om)
			default:
				return 0, false
			}
		}
	}
	if p.i != len(p.s) {
		return 0, false
	}
	days := daysFromCivil(year, month, 1) + int64(day-1)
	t := float64(days)*86400000 + float64(hour)*3600000 + float64(minute)*60000 + float64(sec)*1000 + float64(ms)
	return t - float64(offset)*60000, true
}

// parseUTCMillis reads the form nearly every timestamp takes, YYYY-MM-DDTHH:mm:ss.sssZ, with
// fixed offsets instead of the general parser's steps; ok is false for any other form or for a
// field out of range, which the general parser then judges. The value is computed as the general
// parser computes it (TestParseUTCMillisMatchesParser).
func parseUTCMillis(s []byte) (float64, bool) {
	if len(s) != 24 {
		return 0, false
	}
	// Three words: "YYYY-MM-", "DDTHH:mm", ":ss.sssZ". The separators are compared under a mask;
	// the digits, with '0' taken from each, must all be at most 9 (a byte below '0' borrows to
	// 0x80 or more; one above '9' reaches 0x80 once 0x76 is added).
	w0, w1, w2 := binary.LittleEndian.Uint64(s[0:8]), binary.LittleEndian.Uint64(s[8:16]), binary.LittleEndian.Uint64(s[16:24])
	if w0&sepMask0 != sepWant0 || w1&sepMask1 != sepWant1 || w2&sepMask2 != sepWant2 {
		return 0, false
	}
	d0, d1, d2 := w0&^sepMask0|sepMask0&zeros-zeros, w1&^sepMask1|sepMask1&zeros-zeros, w2&^sepMask2|sepMask2&zeros-zeros
	if (d0|(d0+nines)|d1|(d1+nines)|d2|(d2+nines))&highs != 0 {
		return 0, false
	}
	// Byte k of p is the two-digit number starting at digit k.
	p0, p1, p2 := d0*10+d0>>8, d1*10+d1>>8, d2*10+d2>>8
	at := func(p uint64, k int) int { return int(p >> (8 * k) & 0xff) }
	year, month, day := at(p0, 0)*100+at(p0, 2), at(p0, 5), at(p1, 0)
	hour, minute, sec, ms := at(p1, 3), at(p1, 6), at(p2, 1), at(p2, 4)*10+at(d2, 6)
	if month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	if year < 1970 || year > 2099 {
		// Outside monthStart's years: the general parser counts the days.
		return 0, false
	}
	// Every term and partial sum is an integer below 2^53, so the sum in int64 converts to the
	// float64 the general parser adds up.
	days := monthStart(year, month) + int64(day-1)
	return float64(days*86400000 + int64(hour*3600000+minute*60000+sec*1000+ms)), true
}

// monthStart is daysFromCivil(y, m, 1) for the years from 1970 to 2099, where every fourth year is
// a leap year: counted without the general calendar's divisions, small enough to inline.
func monthStart(y, m int) int64 {
	return int64(365*(y-1970) + (y-1969)/4 + int(daysBeforeMonth[min(y%4, 1)][m-1]))
}

// daysBeforeMonth counts the days before each month of a leap year ([0]) and of a common year.
var daysBeforeMonth = [2][12]uint16{
	{0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335},
	{0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334},
}

// The separators of YYYY-MM-DDTHH:mm:ss.sssZ in its three words, little-endian, and the masks
// that pick them out; zeros, nines and highs repeat '0', 0x76 and 0x80 in every byte.
const (
	sepMask0 = 0xff<<32 | 0xff<<56
	sepWant0 = '-'<<32 | '-'<<56
	sepMask1 = 0xff<<16 | 0xff<<40
	sepWant1 = 'T'<<16 | ':'<<40
	sepMask2 = 0xff | 0xff<<24 | 0xff<<56
	sepWant2 = ':' | '.'<<24 | 'Z'<<56
	zeros    = 0x3030303030303030
	nines    = 0x7676767676767676
	highs    = 0x8080808080808080
)

// daysFromCivil counts days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// jsDateValue is +new Date(v) for a JSON value v: strings are parsed, numbers are time values,
// null is 0, booleans are 0 or 1, an array is parsed as the string it joins to (ToPrimitive),
// and an object is NaN.
func jsDateValue(raw json.RawMessage) float64 {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 {
		return math.NaN()
	}
	switch t[0] {
	case '"':
		if len(t) == 26 && t[25] == '"' {
			// The fixed form holds no escape or control character: its inside is the string.
			if v, ok := parseUTCMillis(t[1:25]); ok {
				return v
			}
		}
		if inner, ok := jsonscan.PlainString(t); ok {
			return parseDate(inner)
		}
		s, ok := jsonscan.StringValue(t)
		if !ok {
			return math.NaN()
		}
		return parseDate(s)
	case 'n':
		return 0
	case 't':
		return 1
	case 'f':
		return 0
	case '[':
		var b strings.Builder
		if !joinArray(&b, t) {
			return math.NaN()
		}
		return parseDate(b.String())
	case '{':
		return math.NaN()
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil || math.Abs(f) > maxTimeValue {
		return math.NaN()
	}
	return math.Trunc(f) + 0 // TimeClip truncates toward zero
}

// joinArray writes String(array) for the JSON array t: Array.prototype.join with ",", where null
// is "", an array joins in turn and an object is "[object Object]". ok is false when t is not an
// array.
func joinArray(b *strings.Builder, t []byte) bool {
	first := true
	return jsonscan.Elements(t, func(v []byte) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		v = jsonscan.TrimSpace(v)
		switch {
		case len(v) == 0 || string(v) == "null":
		case v[0] == '"':
			s, _ := jsonscan.StringValue(v)
			b.WriteString(s)
		case v[0] == '[':
			joinArray(b, v)
		case v[0] == '{':
			b.WriteString("[object Object]")
		case v[0] == 't' || v[0] == 'f':
			b.Write(v)
		default:
			f, _ := jsonNumber(v)
			b.WriteString(NumberString(f))
		}
	}) == nil
}
