package jsonscan

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func refIndex(d []byte, i int, special func(c byte) bool) int {
	for ; i < len(d); i++ {
		if special(d[i]) {
			return i
		}
	}
	return len(d)
}

func isQuoteOrBackslash(c byte) bool { return c == '"' || c == '\\' }

func isNotPlain(c byte) bool { return c == '"' || c == '\\' || c < 0x20 || c >= 0x80 }

// checkIndex compares the string scans, the platform's and the portable ones, with a byte at a
// time reference from every start in d and past its end.
func checkIndex(t *testing.T, d []byte) {
	t.Helper()
	for i := 0; i <= len(d)+2; i++ {
		want := refIndex(d, i, isQuoteOrBackslash)
		if got, gotw := indexQuote(d, i), indexQuoteWords(d, i); got != want || gotw != want {
			t.Fatalf("indexQuote(%q, %d) = %d, words %d; want %d", d, i, got, gotw, want)
		}
		want = refIndex(d, i, isNotPlain)
		if got, gotw := indexNotPlain(d, i), indexNotPlainWords(d, i); got != want || gotw != want {
			t.Fatalf("indexNotPlain(%q, %d) = %d, words %d; want %d", d, i, got, gotw, want)
		}
	}
}

// TestIndexEveryOffset puts each kind of byte the scans tell apart, and its neighbours in value,
// at every offset of inputs shorter and longer than the sixteen and eight bytes they compare at a
// time, and looks from every start.
func TestIndexEveryOffset(t *testing.T) {
	kinds := []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7e, 0x7f, 0x80, 0xa2, 0xdc, 0xff}
	for n := 0; n <= 40; n++ {
		checkIndex(t, bytes.Repeat([]byte("a"), n))
		for pos := 0; pos < n; pos++ {
			for _, k := range kinds {
				d := bytes.Repeat([]byte("a"), n)
				d[pos] = k
				checkIndex(t, d)
				// A second one further on.
				if pos+5 < n {
					d[pos+5] = '"'
					checkIndex(t, d)
				}
			}
		}
	}
}

// TestIndexSubslice: the scans look only within len(d), whatever lies beyond it in memory.
func TestIndexSubslice(t *testing.T) {
	buf := bytes.Repeat([]byte(`"\`), 64)
	for n := 0; n <= 40; n++ {
		d := bytes.Repeat([]byte("b"), n)
		copy(buf, d)
		sub := buf[:n:n]
		for i := 0; i <= n; i++ {
			if got := indexQuote(sub, i); got != n {
				t.Fatalf("indexQuote(%q, %d) = %d, want %d", sub, i, got, n)
			}
			if got := indexNotPlain(sub, i); got != n {
				t.Fatalf("indexNotPlain(%q, %d) = %d, want %d", sub, i, got, n)
			}
		}
	}
}

// TestIndexPastLen: for a d shorter than sixteen bytes whose capacity holds more, the bytes past
// len(d), of every kind the scans look for, change nothing, from every start and with every
// capacity.
func TestIndexPastLen(t *testing.T) {
	junk := []byte{'"', '\\', 0x00, 0x1f, 0x80, 0xff}
	for n := 0; n <= 20; n++ {
		for _, j := range junk {
			for extra := 0; extra <= 20; extra++ {
				buf := bytes.Repeat([]byte{j}, n+extra)
				copy(buf, bytes.Repeat([]byte("c"), n))
				if n > 2 {
					buf[n/2] = 0x7f
				}
				d := buf[: n : n+extra]
				for i := 0; i <= n+1; i++ {
					if got, want := indexNotPlain(d, i), refIndex(d, i, isNotPlain); got != want {
						t.Fatalf("indexNotPlain(%q (cap %d, then %q), %d) = %d, want %d", d, cap(d), j, i, got, want)
					}
					if got, want := indexQuote(d, i), refIndex(d, i, isQuoteOrBackslash); got != want {
						t.Fatalf("indexQuote(%q (cap %d, then %q), %d) = %d, want %d", d, cap(d), j, i, got, want)
					}
				}
				// And with a byte the scans stop at inside d.
				for pos := 0; pos < n; pos++ {
					e := slices.Clone(buf)
					e[pos] = 0x01
					d := e[: n : n+extra]
					for i := 0; i <= n; i++ {
						if got, want := indexNotPlain(d, i), refIndex(d, i, isNotPlain); got != want {
							t.Fatalf("indexNotPlain(%q (cap %d), %d) = %d, want %d", d, cap(d), i, got, want)
						}
					}
				}
			}
		}
	}
}

// checkCompactKey checks, from every index of d, that whenever compactKey (or its portable form)
// reads a key, Next's general way reads the same key and value index.
func checkCompactKey(t *testing.T, d []byte) {
	t.Helper()
	for i := 0; i <= len(d); i++ {
		for _, begun := range []bool{false, true} {
			for _, f := range []func([]byte, int, bool, bool) (int, int, int, int){compactKey, compactKeyWords} {
				start, end, v, vend := f(d, i, begun, true)
				if s2, e2, v2, vend2 := f(d, i, begun, false); s2 != start || e2 != end || v2 != v || vend2 != 0 {
					t.Fatalf("compactKey(%q, %d, %v) without values = %d, %d, %d, %d", d, i, begun, s2, e2, v2, vend2)
				}
				o := Object{d: d, i: i, begun: begun}
				key, value, done, err := o.next()
				if v <= 0 {
					if vend != 0 || (v < 0) != (done && err == nil && o.i == i+1) {
						t.Fatalf("compactKey(%q, %d, %v) = %d, value end %d; general way %v, %v, at %d", d, i, begun, v, vend, done, err, o.i)
					}
					continue
				}
				if err != nil || done || value != v || len(key) != end-start || (len(key) > 0 && &key[0] != &d[start]) {
					t.Fatalf("compactKey(%q, %d, %v) = %d, %d, %d; general way %q, %d, %v, %v", d, i, begun, start, end, v, key, value, done, err)
				}
				if vend == 0 {
					continue
				}
				// A plain string value: skipped as SkipValue skips it, and PlainString reads it.
				wend, werr := SkipValue(d, v)
				if _, plain := PlainString(d[v:vend]); werr != nil || wend != vend || !plain {
					t.Fatalf("compactKey(%q, %d, %v) value end %d; SkipValue %d, %v, plain %v", d, i, begun, vend, wend, werr, plain)
				}
			}
		}
	}
}

// TestCompactKey: keys of every length around the sixteen bytes compared at a time, followed by
// what may come after a key, with and without the separator before it.
func TestCompactKey(t *testing.T) {
	afters := []string{`:1}`, `:"v"}`, `: 1}`, `:`, `:}`, ` :1}`, `:{"a":1}}`, "\x00", `:` + "\x1f", `:` + "\x7f",
		`:"v\"w"}`, `:"é"}`, `:"` + "\x01" + `"}`, `:"v`, `:""}`}
	for n := 0; n <= 34; n++ {
		for _, p := range []string{"", `\"`, "é", "\x1f", "\x7f"} {
			afters = append(afters, `:"`+strings.Repeat("v", n)+p+`"}`)
		}
	}
	for n := 0; n <= 18; n++ {
		for _, p := range []string{"", `\"`, `\\`, `é`, "\x00"} {
			for _, after := range afters {
				key := strings.Repeat("k", n) + p
				for _, in := range []string{`{"` + key + `"` + after, `{"a":1,"` + key + `"` + after, `,"` + key + `"` + after} {
					checkCompactKey(t, []byte(in))
					checkCompactKey(t, []byte(in+strings.Repeat(" ", 20)))
				}
			}
		}
	}
}

// checkMember walks d as an object with Member and with Next and SkipValue: the same members,
// values and errors, and Member's value ends are those of plain strings.
func checkMember(t *testing.T, d []byte) {
	t.Helper()
	om, errm := OpenObject(d, 0)
	on, errn := OpenObject(d, 0)
	if (errm == nil) != (errn == nil) {
		t.Fatalf("OpenObject(%q) = %v, %v", d, errm, errn)
	}
	if errm != nil {
		return
	}
	for {
		km, vm, endm, donem, errm := om.Member()
		kn, vn, donen, errn := on.Next()
		if string(km) != string(kn) || vm != vn || donem != donen || (errm == nil) != (errn == nil) {
			t.Fatalf("Member on %q = %q, %d, %v, %v; Next %q, %d, %v, %v", d, km, vm, donem, errm, kn, vn, donen, errn)
		}
		if donem || errm != nil {
			if om.Pos() != on.Pos() {
				t.Fatalf("Member on %q ends at %d, Next at %d", d, om.Pos(), on.Pos())
			}
			return
		}
		end, err := SkipValue(d, vn)
		if endm != 0 {
			if _, plain := PlainString(d[vm:endm]); err != nil || end != endm || !plain {
				t.Fatalf("Member on %q: value %d to %d; SkipValue %d, %v, plain %v", d, vm, endm, end, err, plain)
			}
		}
		if err != nil {
			return
		}
		om.SkipTo(end)
		on.SkipTo(end)
	}
}

// TestMember: objects of members around the sixteen bytes compared at a time, with every kind of
// value and separator Member reads the general way.
func TestMember(t *testing.T) {
	var members []string
	for n := 0; n <= 18; n++ {
		k := strings.Repeat("k", n)
		members = append(members, `"`+k+`":"`+strings.Repeat("v", 18-n)+`"`, `"`+k+`":1`, `"`+k+`":{"a":"b"}`,
			`"`+k+`":"v\"w"`, `"`+k+`":"é"`, `"`+k+`" :"v"`, `"`+k+`": "v"`, `"\u0041`+k+`":"v"`, `"`+k+`":null`,
			`"`+k+`":"v`+"\x01"+`w"`, `"`+k+`":"v`+"\xff"+`w"`, `"`+k+`":"`+"\xe2\x82"+`"`)
	}
	for a, m := range members {
		m2 := members[(a*7+3)%len(members)]
		m3 := members[(a*13+5)%len(members)]
		for _, sep := range []string{",", " ,", ", "} {
			for _, in := range []string{`{` + m + `}`, `{` + m + sep + m2 + `}`, `{` + m + `,` + m2 + sep + m3 + `}`,
				`{` + m + `,` + m2, `{ ` + m + ` }`, `{` + m + `,}`, `{` + m + `}x`} {
				checkMember(t, []byte(in))
			}
		}
	}
}

// runByKeys is compactRun spelled out as Member reads, one compactKey call per member, key being
// the platform's compactKey or its portable form; the run also ends at whitespace after a value.
func runByKeys(key func([]byte, int, bool, bool) (int, int, int, int), o *Object, run []Span) (n int, done bool) {
	for n < len(run) {
		start, end, v, vend := key(o.d, o.i, o.begun, true)
		if v < 0 {
			o.i++
			return n, true
		}
		if v == 0 {
			return n, false
		}
		run[n] = Span{start, end, v, vend}
		n++
		o.i, o.begun, o.escaped = v, true, false
		if vend == 0 {
			return n, false
		}
		if o.SkipTo(vend); o.i != vend {
			return n, false
		}
	}
	return n, false
}

// checkCompactRun compares, from every index of d, in every state and for every room in run,
// compactRun and its portable form with member-by-member reads of compactKey and its portable
// form: the members, the end, and the Object left behind.
func checkCompactRun(t *testing.T, d []byte) {
	t.Helper()
	pairs := []struct {
		name string
		run  func(*Object, []Span) (int, bool)
		key  func([]byte, int, bool, bool) (int, int, int, int)
	}{{"compactRun", compactRun, compactKey}, {"compactRunWords", compactRunWords, compactKeyWords}}
	for i := 0; i <= len(d)+1; i++ {
		for state := 0; state < 4; state++ {
			for room := 0; room <= 5; room++ {
				for _, p := range pairs {
					o := Object{d: d, i: i, begun: state&1 != 0, escaped: state&2 != 0}
					wo := o
					got, want := make([]Span, room), make([]Span, room)
					n, done := p.run(&o, got)
					wn, wdone := runByKeys(p.key, &wo, want)
					if n != wn || done != wdone || !slices.Equal(got, want) || o.i != wo.i || o.begun != wo.begun || o.escaped != wo.escaped {
						t.Fatalf("%s(%q at %d, state %d, room %d) = %d, %v, %v, left %+v; member by member %d, %v, %v, left %+v",
							p.name, d, i, state, room, n, done, got, o, wn, wdone, want, wo)
					}
				}
			}
		}
	}
}

// TestCompactRun: runs of members whose keys and string values cross the sixteen bytes compared
// at a time, ended by every kind of value and separator compactKey leaves to the general way.
func TestCompactRun(t *testing.T) {
	ends := []string{`}`, `,"z":1}`, ` }`, "\t,\"z\":\"v\"}", "\r\n}", ` `, `,"z":{"a":"b"}}`, ` ,"z":"v"}`, `, "z":"v"}`, `,"z" :"v"}`, `,"z": "v"}`,
		`,"z":"v\"w"}`, `,"z":"é"}`, `,"\u0041":"v"}`, `,"z":"v`, `,"z`, `,`, ``, `}x`, `,"z":null}`, "\x00"}
	for n := 0; n <= 18; n++ {
		k := strings.Repeat("k", n)
		v := strings.Repeat("v", 18-n)
		for _, end := range ends {
			for _, in := range []string{
				`{"` + k + `":"` + v + `"` + end,
				`{"` + k + `":"` + v + `","a":"","` + v + `":"` + k + `"` + end,
				`{"a":"b","` + k + `":` + `[1]` + end,
				`,"` + k + `":"` + v + `","b":"c"` + end,
			} {
				checkCompactRun(t, []byte(in))
				checkCompactRun(t, []byte(in+strings.Repeat(" ", 20)))
			}
		}
	}
}

// checkMemberRun walks d as an object with MemberRun and with Member: the same members, value
// ends, errors and end position.
func checkMemberRun(t *testing.T, d []byte, room int) {
	t.Helper()
	or, errr := OpenObject(d, 0)
	om, _ := OpenObject(d, 0)
	if errr != nil {
		return
	}
	run := make([]Span, room)
	var pending []Span
	closed := false
	for {
		var key []byte
		var v, end int
		var done bool
		var err error
		fromRun := false
		if len(pending) == 0 && !closed {
			var n int
			n, closed = or.MemberRun(run)
			pending = run[:n]
		}
		switch {
		case len(pending) > 0:
			s := pending[0]
			pending = pending[1:]
			key, v, end, fromRun = d[s.KeyStart:s.KeyEnd], s.Value, s.End, true
		case closed:
			done = true
		default:
			key, v, end, done, err = or.Member()
		}
		km, vm, endm, donem, errm := om.Member()
		if string(key) != string(km) || v != vm || end != endm || done != donem || (err == nil) != (errm == nil) {
			t.Fatalf("MemberRun(%d) on %q = %q, %d, %d, %v, %v; Member %q, %d, %d, %v, %v", room, d, key, v, end, done, err, km, vm, endm, donem, errm)
		}
		if done || err != nil {
			if or.Pos() != om.Pos() && err == nil {
				t.Fatalf("MemberRun(%d) on %q ends at %d, Member at %d", room, d, or.Pos(), om.Pos())
			}
			return
		}
		if end == 0 {
			if end, err = SkipValue(d, v); err != nil {
				return
			}
			or.SkipTo(end)
		} else if !fromRun {
			or.SkipTo(end)
		}
		om.SkipTo(end)
	}
}

// TestMemberRun: the objects of TestMember and runs of plain members, read with every room.
func TestMemberRun(t *testing.T) {
	var members []string
	for n := 0; n <= 18; n++ {
		k := strings.Repeat("k", n)
		members = append(members, `"`+k+`":"`+strings.Repeat("v", 18-n)+`"`, `"`+k+`":1`, `"`+k+`":{"a":"b"}`,
			`"`+k+`":"v\"w"`, `"`+k+`":"é"`, `"`+k+`" :"v"`, `"`+k+`": "v"`, `"\u0041`+k+`":"v"`, `"`+k+`":null`,
			`"`+k+`":"`+k+`"`, `"`+k+`":""`)
	}
	for a, m := range members {
		m2 := members[(a*7+3)%len(members)]
		m3 := members[(a*13+5)%len(members)]
		for _, sep := range []string{",", " ,", ", "} {
			for _, in := range []string{`{` + m + `}`, `{` + m + sep + m2 + `}`, `{` + m + `,` + m2 + sep + m3 + `}`,
				`{` + m + `,` + m2 + `,` + m3 + `,` + m + `}`, `{` + m + `,` + m2, `{ ` + m + ` }`, `{` + m + `,}`, `{` + m + `}x`} {
				for room := 1; room <= 3; room++ {
					checkMemberRun(t, []byte(in), room)
				}
			}
		}
	}
}

// FuzzMemberRun checks compactRun and its portable form against member-by-member reads, and
// MemberRun against Member, on any input.
func FuzzMemberRun(f *testing.F) {
	for _, s := range []string{`{"a":"b","c":1,"d":{"e":"f"}}`, `{"id":"bot","name":"Bot","role":"bot"}`, `{ "a" : "b" }`,
		`{"a":"b\"","c":"é"}`, `,"k":"v"}`, `{"` + strings.Repeat("k", 20) + `":"` + strings.Repeat("v", 20) + `"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		if len(d) > 200 {
			return
		}
		checkCompactRun(t, d)
		for room := 1; room <= 3; room++ {
			checkMemberRun(t, d, room)
		}
	})
}
