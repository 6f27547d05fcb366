// Package jsonscan is a structural scanner for raw JSON: it checks brackets, quotes, ':' and ','
// but not the inside of literals, for readers that want a few members of an object without
// decoding the rest. Values are handed out raw, as slices of the input without surrounding
// whitespace; encoding/json decodes what a reader keeps (escaped keys and strings).
//
// On input json.Valid accepts, the members and elements it hands out are the ones encoding/json
// decodes. On other input it may succeed (an invalid literal passes), so a reader that acts on a
// value it cannot check itself checks json.Valid first.
package jsonscan

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// ErrSyntax is the one error of the scanner: the input is not a well-formed object, array or
// value where one was expected.
var ErrSyntax = errors.New("jsonscan: malformed JSON")

// isSpace is JSON's whitespace (RFC 8259, section 2); the first test settles every byte of
// compact JSON, and one bit test the rest (TrimSpace stays small enough to inline).
func isSpace(c byte) bool { return c <= ' ' && spaces>>c&1 != 0 }

// spaces has bit c set for each whitespace byte c.
const spaces uint64 = 1<<' ' | 1<<'\t' | 1<<'\n' | 1<<'\r'

// SkipSpace returns the index of the first byte at or after d[i] that is not JSON whitespace
// (len(d) when there is none).
func SkipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// TrimSpace returns raw without the whitespace JSON allows around a value: space, tab, line feed
// and carriage return (RFC 8259, section 2). bytes.TrimSpace would also remove \v, \f and Unicode
// spaces, letting a value pass for JSON that encoding/json refuses.
func TrimSpace(raw []byte) []byte {
	i, j := 0, len(raw)
	for i < j && isSpace(raw[i]) {
		i++
	}
	for j > i && isSpace(raw[j-1]) {
		j--
	}
	return raw[i:j]
}

// skipString returns the index after the string starting at d[i] == '"', and whether it holds
// an escape. indexQuote finds each quote or backslash many bytes at a time: strings are most of
// the bytes of an activity.
func skipString(d []byte, i int) (int, bool, error) {
	esc := false
	for i++; ; i += 2 {
		if i = indexQuote(d, i); i >= len(d) {
			return 0, false, ErrSyntax
		}
		if d[i] == '"' {
			return i + 1, esc, nil
		}
		esc = true
	}
}

// quoteOrBackslash sets the high bit of the lowest byte of x that is a quote or a backslash (and
// possibly of higher bytes), and of no byte below it.
func quoteOrBackslash(x uint64) uint64 {
	q, b := x^quotes, x^backslashes
	return ((q-lowBits)&^q | (b-lowBits)&^b) & highBits
}

const (
	quotes      = 0x2222222222222222
	backslashes = 0x5c5c5c5c5c5c5c5c
	lowBits     = 0x0101010101010101
	highBits    = 0x8080808080808080
	// controls is 0x20 in every byte: x-controls borrows into the high bit of a byte below 0x20.
	controls = 0x2020202020202020
)

// SkipValue returns the index after the value starting at d[i]. Objects and arrays are skipped by
// matching brackets outside strings; a literal runs to the next whitespace, ',', '}' or ']'.
func SkipValue(d []byte, i int) (int, error) {
	if i >= len(d) {
		return 0, ErrSyntax
	}
	switch d[i] {
	case '"':
		return stringEnd(d, i)
	case '{', '[':
		depth := 0
		for ; i < len(d); i++ {
			switch d[i] {
			case '"':
				// Most strings end at the first quote or backslash; one that holds an escape is
				// skipped by skipString.
				if j := indexQuote(d, i+1); j < len(d) && d[j] == '"' {
					i = j
					continue
				}
				end, _, err := skipString(d, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, ErrSyntax
	}
	start := i
	for i < len(d) && !isSpace(d[i]) && d[i] != ',' && d[i] != '}' && d[i] != ']' {
		i++
	}
	if i == start {
		return 0, ErrSyntax
	}
	return i, nil
}

// stringEnd returns the index after the string at d[i] == '"'. A string without escapes, as most
// are, ends at the first quote or backslash found.
func stringEnd(d []byte, i int) (int, error) {
	if j := indexQuote(d, i+1); j < len(d) && d[j] == '"' {
		return j + 1, nil
	}
	end, _, err := skipString(d, i)
	return end, err
}

// SkipValueStrict is SkipValue for a value read inside an object or array a reader has entered
// with Object: a literal also ends at a quote or an opening bracket, where the bracket matching
// of SkipValue over the enclosing value would see a string or a nested value begin. Input on
// which the two could disagree then fails the entered read.
func SkipValueStrict(d []byte, i int) (int, error) {
	if i >= len(d) {
		return 0, ErrSyntax
	}
	switch d[i] {
	case '"', '{', '[':
		return SkipValue(d, i)
	}
	start := i
	for i < len(d) {
		c := d[i]
		if isSpace(c) || c == ',' || c == '}' || c == ']' || c == '"' || c == '{' || c == '[' {
			break
		}
		i++
	}
	if i == start {
		return 0, ErrSyntax
	}
	return i, nil
}

// Object walks an object's members in place, for readers that enter some values instead of
// skipping them: Next hands out a key and where its value starts, and SkipTo takes the index
// after that value.
type Object struct {
	d []byte
	// i is where the next member (or the closing brace, or a separator) is expected.
	i     int
	begun bool
	// escaped says the last key held an escape (it was unescaped into fresh storage).
	escaped bool
}

// OpenObject starts an Object at the object at d[i] (after whitespace); ErrSyntax when no '{'
// is there.
func OpenObject(d []byte, i int) (Object, error) {
	i = SkipSpace(d, i)
	if i >= len(d) || d[i] != '{' {
		return Object{}, ErrSyntax
	}
	// Whitespace before the first key is left to Next, which keeps OpenObject small enough to
	// be inlined.
	return Object{d: d, i: i + 1}, nil
}

// Next returns the next member's key and the index of its value; done is true once the closing
// brace is read, and Pos is then the index after it. Keys come as in Members; the caller must not
// keep key.
func (o *Object) Next() (key []byte, value int, done bool, err error) {
	start, end, v, _ := compactKey(o.d, o.i, o.begun, false)
	if v > 0 {
		o.i, o.begun, o.escaped = v, true, false
		return o.d[start:end], v, false, nil
	}
	if v < 0 {
		o.i++
		return nil, 0, true, nil
	}
	return o.next()
}

// Member is Next that also skips a plain string value where it stands: end is the index after
// the value when it is a string PlainString would hand out the inside of, found in the same pass
// as the key for compact JSON; otherwise end is 0, and the caller skips or enters the value as
// after Next. Either way the caller moves past the value with SkipTo.
func (o *Object) Member() (key []byte, value, end int, done bool, err error) {
	start, kend, v, vend := compactKey(o.d, o.i, o.begun, true)
	if v > 0 {
		o.i, o.begun, o.escaped = v, true, false
		return o.d[start:kend], v, vend, false, nil
	}
	if v < 0 {
		o.i++
		return nil, 0, 0, true, nil
	}
	key, value, done, err = o.next()
	return key, value, 0, done, err
}

// A Span is one member MemberRun read: the key is d[KeyStart:KeyEnd] and the value starts at
// d[Value]; End is the index after the value when it is a plain string (as Member's end), else 0.
type Span struct{ KeyStart, KeyEnd, Value, End int }

// MemberRun is Member for several members in one call, for compact JSON: it reads members into
// run as Member would return them, up to len(run), and stops after the first whose value is not
// a plain string (End 0), at the closing brace (done, and Pos is then the index after it), or
// before a member that is not written compactly (whitespace before it or around its colon, an
// escaped key), which Member then reads. The Object is left past every value that is a plain
// string; after a member with End 0, which only the last can be, the caller skips or enters the
// value and calls SkipTo as after Member. n is 0, and the Object unchanged, when the next member
// (or brace) is left to Member.
func (o *Object) MemberRun(run []Span) (n int, done bool) { return compactRun(o, run) }

// next is Next the general way: whitespace, escaped keys, the closing brace and errors.
func (o *Object) next() (key []byte, value int, done bool, err error) {
	d, i := o.d, o.i
	if !o.begun {
		i = SkipSpace(d, i)
	}
	if i >= len(d) {
		return nil, 0, false, ErrSyntax
	}
	c := d[i]
	if c == '}' {
		o.i = i + 1
		return nil, 0, true, nil
	}
	if o.begun {
		if c != ',' {
			return nil, 0, false, ErrSyntax
		}
		i = SkipSpace(d, i+1)
	}
	if i >= len(d) || d[i] != '"' {
		return nil, 0, false, ErrSyntax
	}
	// Keys are plain: the first quote or backslash is usually the quote that ends the key; a key
	// with a backslash is left to escapedKey.
	end := indexQuote(d, i+1)
	if end < len(d) && d[end] == '"' {
		key = d[i+1 : end]
		end++
		o.escaped = false
	} else if key, end, err = o.escapedKey(i); err != nil {
		return nil, 0, false, err
	}
	if end < len(d) && d[end] == ':' {
		// Compact JSON: the value follows the colon.
		end++
	} else if i = SkipSpace(d, end); i < len(d) && d[i] == ':' {
		end = i + 1
	} else {
		return nil, 0, false, ErrSyntax
	}
	o.begun = true
	o.i = end
	if end < len(d) && !isSpace(d[end]) {
		return key, end, false, nil
	}
	return key, SkipSpace(d, end), false, nil
}

// escapedKey reads the key starting at o.d[i] == '"' the general way: unescaped into fresh
// storage when it holds an escape.
func (o *Object) escapedKey(i int) (key []byte, end int, err error) {
	d := o.d
	end, esc, err := skipString(d, i)
	if err != nil {
		return nil, 0, err
	}
	key = d[i+1 : end-1]
	o.escaped = esc
	if esc {
		var s string
		if json.Unmarshal(d[i:end], &s) != nil {
			return nil, 0, ErrSyntax
		}
		key = []byte(s)
	}
	return key, end, nil
}

// SkipTo moves past a value that ends at end.
func (o *Object) SkipTo(end int) {
	if end < len(o.d) && !isSpace(o.d[end]) {
		// Compact JSON: the separator or the closing brace follows the value.
		o.i = end
		return
	}
	o.i = SkipSpace(o.d, end)
}

// Pos is the index after the closing brace once Next has reported done.
func (o *Object) Pos() int { return o.i }

// Escaped reports whether the key Next returned last held an escape.
func (o *Object) Escaped() bool { return o.escaped }

// Members calls f with the key and the raw value of each member of the object d, in order; only
// whitespace may surround the object. A key holding an escape is unescaped as encoding/json
// unescapes it, any other comes as sent (invalid UTF-8 included, which encoding/json would
// replace); f must not keep key. A repeated key is handed out each time.
func Members(d []byte, f func(key, val []byte)) error {
	o, err := OpenObject(d, 0)
	if err != nil {
		return err
	}
	for {
		key, i, done, err := o.Next()
		if err != nil {
			return err
		}
		if done {
			return trailing(d, o.i)
		}
		end, err := SkipValue(d, i)
		if err != nil {
			return err
		}
		f(key, d[i:end])
		o.SkipTo(end)
	}
}

// Elements calls f with the raw value of each element of the array d, in order; only whitespace
// may surround the array.
func Elements(d []byte, f func(val []byte)) error {
	i := SkipSpace(d, 0)
	if i >= len(d) || d[i] != '[' {
		return ErrSyntax
	}
	i = SkipSpace(d, i+1)
	if i < len(d) && d[i] == ']' {
		return trailing(d, i+1)
	}
	for {
		end, err := SkipValue(d, i)
		if err != nil {
			return err
		}
		f(d[i:end])
		i = SkipSpace(d, end)
		if i >= len(d) {
			return ErrSyntax
		}
		if d[i] == ']' {
			return trailing(d, i+1)
		}
		if d[i] != ',' {
			return ErrSyntax
		}
		i = SkipSpace(d, i+1)
	}
}

// trailing checks that only whitespace follows d[i].
func trailing(d []byte, i int) error {
	if SkipSpace(d, i) != len(d) {
		return ErrSyntax
	}
	return nil
}

// PlainString returns the inside of the JSON string v when it decodes to its own bytes: no
// escape, quote or control character, and valid UTF-8 (encoding/json, like a browser decoding the
// bytes, reads invalid UTF-8 as replacement characters). ok is false otherwise, and for any other
// value; v must come without surrounding whitespace.
func PlainString(v []byte) (inner []byte, ok bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	inner = v[1 : len(v)-1]
	// Printable ASCII other than a quote or a backslash, as most of an activity's ids and texts
	// are, is settled by indexNotPlain; the bytes from the first other one on are looked at one
	// by one.
	i := indexNotPlain(inner, 0)
	if i == len(inner) {
		return inner, true
	}
	ascii := true
	for _, c := range inner[i:] {
		if c < 0x20 || c == '"' || c == '\\' {
			return nil, false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(inner) {
		return nil, false
	}
	return inner, true
}

// StringValue decodes raw (whitespace around it allowed) as encoding/json decodes a JSON string
// into a Go string; ok is false for any other value. A PlainString is read without encoding/json.
func StringValue(raw []byte) (string, bool) {
	t := TrimSpace(raw)
	if inner, ok := PlainString(t); ok {
		return string(inner), true
	}
	if len(t) < 2 || t[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(t, &s) != nil {
		return "", false
	}
	return s, true
}
