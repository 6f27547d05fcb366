package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// refSkipString is skipString one byte at a time.
func refSkipString(d []byte, i int) (int, bool, error) {
	esc := false
	for i++; i < len(d); i++ {
		switch d[i] {
		case '\\':
			esc = true
			i++
		case '"':
			return i + 1, esc, nil
		}
	}
	return 0, false, ErrSyntax
}

// TestSkipStringWordAtATime puts quotes, escapes and the end of the input at every offset around
// the eight-byte words the scanner reads.
func TestSkipStringWordAtATime(t *testing.T) {
	pieces := []string{`\"`, `\\`, `"`, `\u0022`, "é", "\x00", "\xff", `\`}
	for n := 0; n < 20; n++ {
		for _, p := range pieces {
			for tail := 0; tail < 10; tail++ {
				for _, end := range []string{`"`, `"x`, ``} {
					in := []byte(`"` + strings.Repeat("a", n) + p + strings.Repeat("b", tail) + end)
					gi, ge, gerr := skipString(in, 0)
					wi, we, werr := refSkipString(in, 0)
					if gi != wi || ge != we || (gerr == nil) != (werr == nil) {
						t.Errorf("skipString(%q) = %d, %v, %v; want %d, %v, %v", in, gi, ge, gerr, wi, we, werr)
					}
				}
			}
		}
	}
}

// refPlainString is PlainString one byte at a time.
func refPlainString(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c < 0x20 || c == '"' || c == '\\' {
			return nil, false
		}
	}
	if !utf8.Valid(inner) {
		return nil, false
	}
	return inner, true
}

// TestPlainStringWordAtATime puts every kind of byte PlainString tells apart at every offset
// around the eight-byte words it reads.
func TestPlainStringWordAtATime(t *testing.T) {
	pieces := []string{"\"", `\\`, "\x00", "\x1f", " ", "~", "\x7f", "é", "\xff", "\xe2\x82"}
	for n := 0; n < 20; n++ {
		for _, p := range pieces {
			for tail := 0; tail < 10; tail++ {
				in := []byte(`"` + strings.Repeat("a", n) + p + strings.Repeat("b", tail) + `"`)
				gi, gok := PlainString(in)
				wi, wok := refPlainString(in)
				if string(gi) != string(wi) || gok != wok {
					t.Errorf("PlainString(%q) = %q, %v; want %q, %v", in, gi, gok, wi, wok)
				}
			}
		}
	}
}

// TestTrimSpace: only the four characters JSON allows around a value are removed.
func TestTrimSpace(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""}, {" \t\r\n", ""}, {" 1 ", "1"}, {"\n{}\r\n", "{}"},
		{"\v1", "\v1"}, {"1\f", "1\f"}, {"\u00a0null", "\u00a0null"}, {" \u0085x\u0085 ", "\u0085x\u0085"},
		{"\x00 1", "\x00 1"}, {"! ", "!"},
	} {
		if got := string(TrimSpace([]byte(tc.in))); got != tc.want {
			t.Errorf("TrimSpace(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSkipValue: where a value ends for the bracket-matching skip and for the strict one, which
// also ends a literal at a quote or an opening bracket; -1 is ErrSyntax.
func TestSkipValue(t *testing.T) {
	for _, tc := range []struct {
		in           string
		plain, there int
	}{
		{`"abc",`, 5, 5},
		{`"a\"b"]`, 6, 6},
		{`"a\\"b"`, 5, 5},
		{`"unterminated`, -1, -1},
		{`"ends in an escape\"`, -1, -1},
		{`{"a":[1,"]}"],"b":{}} `, 21, 21},
		{`[1,[2,[3]]]x`, 11, 11},
		{`{"a":1`, -1, -1},
		{`{"a":"}`, -1, -1},
		{`true}`, 4, 4},
		{"12\t", 2, 2},
		{`nul"l"`, 6, 3},
		{`1{}`, 2, 1},
		{`1[]`, 2, 1},
		{`,`, -1, -1},
		{`}`, -1, -1},
		{` 1`, -1, -1},
		{``, -1, -1},
	} {
		for _, skip := range []struct {
			name string
			f    func([]byte, int) (int, error)
			want int
		}{{"SkipValue", SkipValue, tc.plain}, {"SkipValueStrict", SkipValueStrict, tc.there}} {
			end, err := skip.f([]byte(tc.in), 0)
			if skip.want < 0 {
				if !errors.Is(err, ErrSyntax) {
					t.Errorf("%s(%q) = %d, %v; want ErrSyntax", skip.name, tc.in, end, err)
				}
				continue
			}
			if end != skip.want || err != nil {
				t.Errorf("%s(%q) = %d, %v; want %d", skip.name, tc.in, end, err, skip.want)
			}
		}
	}
}

// bracketSkip is SkipValue's bracket matching with every string skipped by skipString.
func bracketSkip(d []byte, i int) (int, error) {
	if i >= len(d) || (d[i] != '{' && d[i] != '[') {
		return SkipValue(d, i)
	}
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
			if depth--; depth == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, ErrSyntax
}

// TestSkipValueStrings: objects and arrays whose strings end at their first quote, hold escapes
// or are cut, skipped from every index as skipString alone skips their strings.
func TestSkipValueStrings(t *testing.T) {
	for _, in := range []string{
		`{"a":"b","c":["d",{"e":"f"}]}`, `{"a\"b":"\\","c":"\"}"}`, `["]","[",{"}":"{"}]`, `{"a":"b`,
		`{"a":"b\`, `["\\\""]`, `{"` + strings.Repeat("x", 20) + `":"` + strings.Repeat("\\y", 9) + `"}`,
		`[{"a":"é"},"` + "" + `"]`, `{"a":[}`, `{{"a":"b"}}`,
	} {
		for n := 0; n <= len(in); n++ {
			d := []byte(in[:n])
			for i := 0; i <= n; i++ {
				end, err := SkipValue(d, i)
				wend, werr := bracketSkip(d, i)
				if end != wend || (err == nil) != (werr == nil) {
					t.Fatalf("SkipValue(%q, %d) = %d, %v; skipString alone %d, %v", d, i, end, err, wend, werr)
				}
			}
		}
	}
}

type member struct{ Key, Val string }

// walkStrict reads the object d as a reader that enters it does: Object with SkipValueStrict.
func walkStrict(d []byte) ([]member, bool, error) {
	o, err := OpenObject(d, 0)
	if err != nil {
		return nil, false, err
	}
	var got []member
	escaped := false
	for {
		key, i, done, err := o.Next()
		if err != nil {
			return got, escaped, err
		}
		if done {
			break
		}
		escaped = escaped || o.Escaped()
		end, err := SkipValueStrict(d, i)
		if err != nil {
			return got, escaped, err
		}
		got = append(got, member{string(key), string(d[i:end])})
		o.SkipTo(end)
	}
	if SkipSpace(d, o.Pos()) != len(d) {
		return got, escaped, ErrSyntax
	}
	return got, escaped, nil
}

func members(d []byte) ([]member, error) {
	var got []member
	err := Members(d, func(k, v []byte) { got = append(got, member{string(k), string(v)}) })
	return got, err
}

// TestMembers: the members handed out, and what fails, for Members and for an entered walk.
func TestMembers(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []member
		ok      bool
		strict  bool // the entered walk succeeds too, with the same members
		escaped bool
	}{
		{`{}`, nil, true, true, false},
		{" \t{ }\r\n", nil, true, true, false},
		{`{"a":1,"b":"x","c":{"d":[1,2]},"e":[],"a":null}`,
			[]member{{"a", "1"}, {"b", `"x"`}, {"c", `{"d":[1,2]}`}, {"e", `[]`}, {"a", "null"}}, true, true, false},
		{`{ "a" : 1 , "b" : true }`, []member{{"a", "1"}, {"b", "true"}}, true, true, false},
		{`{"t\u0079pe":"m","q\"k":2}`, []member{{"type", `"m"`}, {`q"k`, "2"}}, true, true, true},
		{"{\"\xff\":1}", []member{{"\xff", "1"}}, true, true, false},
		{`{"a":tru}`, []member{{"a", "tru"}}, true, true, false},
		{`{"a":1"b":2}`, []member{{"a", `1"b":2`}}, true, false, false},
		{`{"a":1[2}`, []member{{"a", `1[2`}}, true, false, false},
		{`{"a":1} x`, []member{{"a", "1"}}, false, false, false},
		{`{"a":1}}`, []member{{"a", "1"}}, false, false, false},
		{`{"a":1,}`, []member{{"a", "1"}}, false, false, false},
		{`{,"a":1}`, nil, false, false, false},
		{`{"a" 1}`, nil, false, false, false},
		{`{"a":}`, nil, false, false, false},
		{`{"a":1`, []member{{"a", "1"}}, false, false, false},
		{`{"\ud8":1}`, nil, false, false, false},
		{`{a:1}`, nil, false, false, false},
		{`[1]`, nil, false, false, false},
		{``, nil, false, false, false},
	} {
		got, err := members([]byte(tc.in))
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrSyntax)) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Members(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		sgot, escaped, serr := walkStrict([]byte(tc.in))
		if (serr == nil) != tc.strict || (serr != nil && !errors.Is(serr, ErrSyntax)) {
			t.Errorf("entered walk of %q: %v; want ok %v", tc.in, serr, tc.strict)
		}
		if serr == nil && (!reflect.DeepEqual(sgot, tc.want) || escaped != tc.escaped) {
			t.Errorf("entered walk of %q = %q, escaped %v; want %q, %v", tc.in, sgot, escaped, tc.want, tc.escaped)
		}
	}
}

// TestObjectNested: an Object opened inside a larger input stops at its own closing brace.
func TestObjectNested(t *testing.T) {
	d := []byte(`[1, { "a" : {"b":2} } , 3]`)
	o, err := OpenObject(d, 3)
	if err != nil {
		t.Fatal(err)
	}
	key, i, done, err := o.Next()
	if string(key) != "a" || done || err != nil || d[i] != '{' {
		t.Fatalf("Next = %q, %d, %v, %v", key, i, done, err)
	}
	end, err := SkipValue(d, i)
	if err != nil || string(d[i:end]) != `{"b":2}` {
		t.Fatalf("SkipValue = %d, %v", end, err)
	}
	o.SkipTo(end)
	if _, _, done, err = o.Next(); !done || err != nil || o.Pos() != 21 {
		t.Fatalf("Next at the end: done %v, %v, Pos %d; want 21", done, err, o.Pos())
	}
	if _, err := OpenObject(d, 0); !errors.Is(err, ErrSyntax) {
		t.Errorf("OpenObject at '[': %v", err)
	}
}

// TestElements: the elements handed out, and what fails.
func TestElements(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{`[]`, nil, true},
		{" [ ] ", nil, true},
		{`[1,"a",{"b":[2]},[],null]`, []string{"1", `"a"`, `{"b":[2]}`, `[]`, "null"}, true},
		{"[ 1 ,\n2 ]", []string{"1", "2"}, true},
		{`[1,]`, []string{"1"}, false},
		{`[,1]`, nil, false},
		{`[1 2]`, []string{"1"}, false},
		{`[1]]`, []string{"1"}, false},
		{`[1`, []string{"1"}, false},
		{`{}`, nil, false},
	} {
		var got []string
		err := Elements([]byte(tc.in), func(v []byte) { got = append(got, string(v)) })
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrSyntax)) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Elements(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestPlainString: the strings that decode to their own bytes.
func TestPlainString(t *testing.T) {
	for _, tc := range []struct {
		in    string
		inner string
		ok    bool
	}{
		{`""`, "", true},
		{`"abc"`, "abc", true},
		{`"café"`, "café", true},
		{`"a\"b"`, "", false},
		{`"a\nb"`, "", false},
		{"\"a\tb\"", "", false},
		{"\"\xff\"", "", false},
		{`"a"b"`, "", false},
		{`"abc`, "", false},
		{`"`, "", false},
		{` "a"`, "", false},
		{`1`, "", false},
	} {
		inner, ok := PlainString([]byte(tc.in))
		if string(inner) != tc.inner || ok != tc.ok {
			t.Errorf("PlainString(%q) = %q, %v; want %q, %v", tc.in, inner, ok, tc.inner, tc.ok)
		}
	}
}

// seeds are values whose reading has edges: escapes, invalid UTF-8, control characters,
// whitespace outside JSON's four, repeated members, and malformed JSON a structural scan accepts.
var seeds = []string{
	`"plain"`, `"esc\"aped"`, `"\u0068i"`, `"\ud800"`, "\"bad\xffutf8\"", "\"ctl\x01\"", `"unterminated`,
	`"a"b"`, ` "spaced" `, `""`, `1`, `true`, `null`, `[1,2]`, `[ 1 , {"b" : 2} ,"c" ]`, `[]`, `{}`,
	`{"type":"streaminfo","streamId":"s","streamSequence":1}`,
	`{"type":"streaminfo","streamId":"s","streamSequence":tru}`,
	`{"\u0074ype":"streaminfo","t\"":[{"x":"}"}]}`,
	`{"a":1,"a":2}`, "{\"\xff\":1}", `{"a":1"b":2}`, `{"a":[1}`, `{"a":1}}`, `{"a":1,}`,
	"\v\"s\"", "\"s\"\f", "\u0085 1", "\t\r\n[2]\n", "\v{}",
}

// refStringValue decodes raw with encoding/json.
func refStringValue(raw []byte) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// refMembers lists the members of a valid JSON object in order, as encoding/json decodes them;
// ok is false for any other value.
func refMembers(t *testing.T, in []byte) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(in))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("valid %q: %v", in, err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("valid %q: %v", in, err)
		}
		out = append(out, member{tok.(string), string(v)})
	}
	return out, true
}

// refElements lists the elements of a valid JSON array, as encoding/json decodes them.
func refElements(in []byte) ([]string, bool) {
	var arr []json.RawMessage
	if json.Unmarshal(in, &arr) != nil || arr == nil {
		return nil, false
	}
	out := []string{}
	for _, v := range arr {
		out = append(out, string(v))
	}
	return out, true
}

// checkScan: on input json.Valid accepts, Members and Elements hand out what encoding/json decodes
// (keys with invalid UTF-8 and no escape come as sent); an entered walk that succeeds reads what
// Members reads; StringValue decodes as encoding/json on any input.
func checkScan(t *testing.T, in []byte) {
	t.Helper()
	gs, gok := StringValue(in)
	ws, wok := refStringValue(in)
	if gs != ws || gok != wok {
		t.Errorf("StringValue(%q) = %q, %v; encoding/json gives %q, %v", in, gs, gok, ws, wok)
	}
	checkMember(t, in)
	if len(in) <= 64 {
		checkIndex(t, in)
		checkCompactKey(t, in)
	}
	got, err := members(in)
	if sgot, _, serr := walkStrict(in); serr == nil && (err != nil || !reflect.DeepEqual(sgot, got)) {
		t.Errorf("entered walk of %q = %q; Members %q, %v", in, sgot, got, err)
	}
	elems := []string{}
	eerr := Elements(in, func(v []byte) { elems = append(elems, string(v)) })
	if !json.Valid(in) {
		return
	}
	want, isObject := refMembers(t, in)
	if (err == nil) != isObject || len(got) != len(want) {
		t.Fatalf("Members(%q) = %q, %v; encoding/json gives %q, object %v", in, got, err, want, isObject)
	}
	for i := range got {
		if got[i].Val != want[i].Val || (utf8.ValidString(got[i].Key) && got[i].Key != want[i].Key) {
			t.Errorf("Members(%q) member %d = %q; encoding/json gives %q", in, i, got[i], want[i])
		}
	}
	wantElems, isArray := refElements(in)
	if (eerr == nil) != isArray || (isArray && !reflect.DeepEqual(elems, wantElems)) {
		t.Errorf("Elements(%q) = %q, %v; encoding/json gives %q, array %v", in, elems, eerr, wantElems, isArray)
	}
}

// FuzzScanMatchesEncodingJSON runs checkScan on the seeds under go test, and on anything with
// -fuzz (which also finds any input that makes the scanner panic).
func FuzzScanMatchesEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkScan(t, in) })
}
