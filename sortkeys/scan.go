package sortkeys

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/bits"
	"unicode/utf8"
)

// A small JSON scanner: replaying a million activities must not pay for a full decode of each.
// It walks an object's members and hands out raw values; it checks structure (balanced brackets,
// terminated strings, ':' and ',') but leaves the inside of literals to whoever reads them.

var errSyntax = errors.New("sortkeys: malformed JSON")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

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
