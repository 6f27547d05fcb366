package sortkeys

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

// A small JSON scanner: replaying a million activities must not pay for a full decode of each.
// It walks an object's members and hands out raw values; it checks structure (balanced brackets,
// terminated strings, ':' and ',') but leaves the inside of literals to whoever reads them.

var errSyntax = errors.New("sortkeys: malformed JSON")

// isSpace: the first test settles every byte of compact JSON.
func isSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r') }

func skipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string starting at d[i] == '"', and whether it holds
// an escape. It looks at eight bytes at a time for a quote or a backslash: the strings of an
// activity are most of its bytes.
func skipString(d []byte, i int) (int, bool, error) {
	esc := false
	for i++; i < len(d); {
		if i+8 <= len(d) {
			x := binary.LittleEndian.Uint64(d[i:])
			m := zeroBytes(x^quotes) | zeroBytes(x^backslashes)
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
		}
		switch d[i] {
		case '\\':
			esc = true
			i += 2
		case '"':
			return i + 1, esc, nil
		default:
			i++
		}
	}
	return 0, false, errSyntax
}

const (
	quotes      = 0x2222222222222222
	backslashes = 0x5c5c5c5c5c5c5c5c
	lowBits     = 0x0101010101010101
	highBits    = 0x8080808080808080
)

// zeroBytes sets the high bit of the lowest zero byte of x (and possibly of higher bytes), and of
// no byte below it.
func zeroBytes(x uint64) uint64 { return (x - lowBits) &^ x & highBits }

// skipValue returns the index after the value starting at d[i].
func skipValue(d []byte, i int) (int, error) {
	if i >= len(d) {
		return 0, errSyntax
	}
	switch d[i] {
	case '"':
		end, _, err := skipString(d, i)
		return end, err
	case '{', '[':
		depth := 0
		for ; i < len(d); i++ {
			switch d[i] {
			case '"':
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
		return 0, errSyntax
	}
	start := i
	for i < len(d) && !isSpace(d[i]) && d[i] != ',' && d[i] != '}' && d[i] != ']' {
		i++
	}
	if i == start {
		return 0, errSyntax
	}
	return i, nil
}

// eachMember calls f for every member of the object d (which must start with '{' after
// whitespace). Keys are unescaped only when they contain an escape; f must not keep key.
func eachMember(d []byte, f func(key []byte, val []byte)) error {
	i := skipSpace(d, 0)
	if i >= len(d) || d[i] != '{' {
		return errSyntax
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == '}' {
		return trailing(d, i+1)
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return errSyntax
		}
		end, esc, err := skipString(d, i)
		if err != nil {
			return err
		}
		key := d[i+1 : end-1]
		if esc {
			var s string
			if json.Unmarshal(d[i:end], &s) != nil {
				return errSyntax
			}
			key = []byte(s)
		}
		i = skipSpace(d, end)
		if i >= len(d) || d[i] != ':' {
			return errSyntax
		}
		i = skipSpace(d, i+1)
		vend, err := skipValue(d, i)
		if err != nil {
			return err
		}
		f(key, d[i:vend])
		i = skipSpace(d, vend)
		if i >= len(d) {
			return errSyntax
		}
		if d[i] == '}' {
			return trailing(d, i+1)
		}
		if d[i] != ',' {
			return errSyntax
		}
		i = skipSpace(d, i+1)
	}
}

// eachElement calls f for every element of the array d.
func eachElement(d []byte, f func(val []byte)) error {
	i := skipSpace(d, 0)
	if i >= len(d) || d[i] != '[' {
		return errSyntax
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == ']' {
		return trailing(d, i+1)
	}
	for {
		end, err := skipValue(d, i)
		if err != nil {
			return err
		}
		f(d[i:end])
		i = skipSpace(d, end)
		if i >= len(d) {
			return errSyntax
		}
		if d[i] == ']' {
			return trailing(d, i+1)
		}
		if d[i] != ',' {
			return errSyntax
		}
		i = skipSpace(d, i+1)
	}
}

func trailing(d []byte, i int) error {
	if skipSpace(d, i) != len(d) {
		return errSyntax
	}
	return nil
}

// internedOf is stringOf for values that are usually one of the strings most activities share
// (types and roles): those are read without allocating, through a switch rather than a map.
func internedOf(v []byte) (string, bool) {
	if len(v) >= 2 && v[0] == '"' {
		switch string(v[1 : len(v)-1]) {
		case "message":
			return "message", true
		case "typing":
			return "typing", true
		case "event":
			return "event", true
		case "invoke":
			return "invoke", true
		case "conversationUpdate":
			return "conversationUpdate", true
		case "endOfConversation":
			return "endOfConversation", true
		case "trace":
			return "trace", true
		case "user":
			return "user", true
		case "bot":
			return "bot", true
		case "channel":
			return "channel", true
		}
	}
	return stringOf(v)
}

// stringOf decodes a JSON string value; ok is false for any other value.
func stringOf(v []byte) (string, bool) {
	if inner, ok := plainInner(v); ok {
		return string(inner), true
	}
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// plainInner returns the inside of the JSON string v when it decodes to its own bytes (no escape,
// no control character and valid UTF-8: encoding/json, like a browser decoding the bytes, reads
// invalid UTF-8 as replacement characters); ok is false otherwise, and for any other value.
func plainInner(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	inner := v[1 : len(v)-1]
	ascii := true
	for _, c := range inner {
		if c == '\\' || c < 0x20 {
			return nil, false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return inner, ascii || utf8.Valid(inner)
}

// objScan walks an object's members in place, for readers that enter some values instead of
// skipping them: next hands out a key and where its value starts, and skipTo takes the index
// after that value.
type objScan struct {
	d []byte
	// i is where the next member (or the closing brace, or a separator) is expected.
	i     int
	begun bool
	// escaped says the last key held an escape (it was unescaped into fresh storage).
	escaped bool
}

// openObject starts an objScan at the object at d[i] (after whitespace).
func openObject(d []byte, i int) (objScan, error) {
	i = skipSpace(d, i)
	if i >= len(d) || d[i] != '{' {
		return objScan{}, errSyntax
	}
	return objScan{d: d, i: skipSpace(d, i+1)}, nil
}

// next returns the next member's key and the index of its value; done is true once the closing
// brace is read, and o.i is then the index after it. Keys are unescaped only when they contain an
// escape; the caller must not keep key.
func (o *objScan) next() (key []byte, value int, done bool, err error) {
	d, i := o.d, o.i
	if i >= len(d) {
		return nil, 0, false, errSyntax
	}
	if d[i] == '}' {
		o.i = i + 1
		return nil, 0, true, nil
	}
	if o.begun {
		if d[i] != ',' {
			return nil, 0, false, errSyntax
		}
		i = skipSpace(d, i+1)
	}
	if i >= len(d) || d[i] != '"' {
		return nil, 0, false, errSyntax
	}
	end, esc, err := skipString(d, i)
	if err != nil {
		return nil, 0, false, err
	}
	key = d[i+1 : end-1]
	o.escaped = esc
	if esc {
		var s string
		if json.Unmarshal(d[i:end], &s) != nil {
			return nil, 0, false, errSyntax
		}
		key = []byte(s)
	}
	i = skipSpace(d, end)
	if i >= len(d) || d[i] != ':' {
		return nil, 0, false, errSyntax
	}
	o.begun = true
	o.i = i + 1
	return key, skipSpace(d, i+1), false, nil
}

// skipTo moves past a value that ends at end.
func (o *objScan) skipTo(end int) { o.i = skipSpace(o.d, end) }

// viewOf is stringOf without a copy for a string without escapes: the string shares the bytes of
// v, which must not change afterwards (a replay keeps every activity it was given as it was given).
func viewOf(v []byte) (string, bool) {
	if inner, ok := plainInner(v); ok {
		return unsafe.String(unsafe.SliceData(inner), len(inner)), true
	}
	return stringOf(v)
}

// skipStrict is skipValue for a value read inside an entered object or array: a literal also
// ends at a quote or an opening bracket, where the bracket-matching skip would see a string or a
// nested value begin.
func skipStrict(d []byte, i int) (int, error) {
	if i >= len(d) {
		return 0, errSyntax
	}
	switch d[i] {
	case '"', '{', '[':
		return skipValue(d, i)
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
		return 0, errSyntax
	}
	return i, nil
}
