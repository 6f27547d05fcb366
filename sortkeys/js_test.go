package sortkeys

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/directline-go/directline/activity/jsonscan"
)

// TestParseDate compares with Date.parse in Node 22 (V8); "nan" is NaN.
func TestParseDate(t *testing.T) {
	nan := math.NaN()
	cases := map[string]float64{
		"2025-01-01T00:00:05.000Z":      1735689605000,
		"2025-01-01T09:00:02.000+09:00": 1735689602000,
		"2024-05-01T10:00:00Z":          1714557600000,
		"2025-02-30T10:00:00Z":          1740909600000,
		"2025-02-30T25:61:00Z":          nan,
		"2025-13-45T99:99:99Z":          nan,
		"":                              nan,
		"garbage":                       nan,
		"not-a-date":                    nan,
		"2025-01-01T24:00:00Z":          1735776000000,
		"2025-01-01T24:00:01Z":          nan,
		"2000-01-23T12:34:56.12345Z":    948630896123,
		"2025":                          1735689600000,
		"2025-06":                       1748736000000,
		"2025-06-07":                    1749254400000,
		"2025-06-07T08:09Z":             1749283740000,
		"+002025-01-01T00:00:00Z":       1735689600000,
		"-000001-01-01T00:00:00Z":       -62198755200000,
		"-000000-01-01T00:00:00Z":       nan,
		"2025-01-01t00:00:05z":          1735689605000,
		"2025-01-01 00:00:05Z":          1735689605000,
		"2025-01-01T00:00:05.000+0530":  1735669805000,
		"2025-01-01T00:00:05.000-23:59": 1735775945000,
		"2025-01-01T00:00:05.000+24:00": nan,
		"2025-00-01":                    nan,
		"2025-01-32":                    nan,
		"2025-01-01T00:60Z":             nan,
		"2025-01-01T00:00:05.Z":         nan,
		"1970-01-01T00:00:00.000Z":      0,
		"+275760-09-13T00:00:00.000Z":   8640000000000000,
		"+275760-09-13T00:00:00.001Z":   nan,
		"0000-01-01T00:00:00Z":          -62167219200000,
		"1900-02-29T00:00:00Z":          -2203891200000,
	}
	for in, want := range cases {
		got := parseDate(in)
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("parseDate(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestJSDateValue(t *testing.T) {
	for raw, want := range map[string]float64{
		`"2025-01-01T00:00:05.000Z"`: 1735689605000, `1234.9`: 1234, `null`: 0, `true`: 1, `false`: 0,
		`{}`: math.NaN(), `[]`: math.NaN(), `"x"`: math.NaN(), `9e15`: math.NaN(),
		// An array is the string it joins to.
		`["2025-01-01T00:00:05.000Z"]`: 1735689605000, `[["2025-01-01T00:00:05.000Z"]]`: 1735689605000,
		`[null]`: math.NaN(), `[{}]`: math.NaN(), `["2025-01-01",null]`: 1735689600000,
	} {
		got := jsDateValue(json.RawMessage(raw))
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("jsDateValue(%s) = %v, want %v", raw, got, want)
		}
	}
}

// TestKeyOfValue: numbers and true are keys by value, as === compares them; what is falsy or an
// object (which === matches with nothing else) has none.
func TestKeyOfValue(t *testing.T) {
	for raw, want := range map[string]string{
		`5`: "\xff5", `5.0`: "\xff5", `5e0`: "\xff5", `-1.5`: "\xff-1.5", `1e400`: "\xffInfinity", `true`: "\xfftrue",
		`0`: "", `-0`: "", `false`: "", `null`: "", `"5"`: "", `[5]`: "", `{}`: "",
	} {
		if got := keyOfValue([]byte(raw)); got != want {
			t.Errorf("keyOfValue(%s) = %q, want %q", raw, got, want)
		}
	}
}

func TestToNumber(t *testing.T) {
	for raw, want := range map[string]float64{
		``: math.NaN(), `null`: 0, `true`: 1, `"  12 "`: 12, `""`: 0, `"0x10"`: 16, `"1e3"`: 1000,
		`"abc"`: math.NaN(), `[]`: 0, `[7]`: 7, `["8"]`: 8, `[1,2]`: math.NaN(), `{}`: math.NaN(), `2.5`: 2.5,
		`"Infinity"`: math.Inf(1), `"-Infinity"`: math.Inf(-1),
		// StringToNumber trims ECMAScript's white space and line terminators, not only ASCII's.
		`"\u00a012\u3000"`: 12, `"\ufeff7\u2028"`: 7, `["\u00a01"]`: 1, `"\u200b5"`: math.NaN(),
	} {
		got := toNumber(json.RawMessage(raw))
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("toNumber(%s) = %v, want %v", raw, got, want)
		}
	}
}

// generalParseDate is parseDate without the fixed-offset path.
func generalParseDate(s string) float64 {
	p := dateParser[string]{s: s}
	v, ok := p.parse()
	if !ok {
		return legacyDate(s)
	}
	if math.Abs(v) > maxTimeValue {
		return math.NaN()
	}
	return v
}

// TestParseUTCMillisMatchesParser compares the fixed-offset path with the general parser on
// strings of its shape whose fields are random digits, in range or not, and on near misses.
func TestParseUTCMillisMatchesParser(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	digit := func() byte { return byte('0' + rng.IntN(10)) }
	for n := 0; n < 200_000; n++ {
		b := []byte("0000-00-00T00:00:00.000Z")
		for i := range b {
			if b[i] == '0' {
				b[i] = digit()
			}
		}
		if n%4 == 0 {
			// Mostly valid fields, as real timestamps are.
			copy(b[5:7], fmt.Sprintf("%02d", 1+rng.IntN(12)))
			copy(b[8:10], fmt.Sprintf("%02d", 1+rng.IntN(31)))
			copy(b[11:13], fmt.Sprintf("%02d", rng.IntN(25)))
			copy(b[14:16], fmt.Sprintf("%02d", rng.IntN(60)))
			copy(b[17:19], fmt.Sprintf("%02d", rng.IntN(60)))
		}
		if n%7 == 0 {
			const odd = "TtZz :.-+/9x\x00\x7f\x80\xb0\xb9\xd0\xff"
			b[rng.IntN(len(b))] = odd[rng.IntN(len(odd))]
		}
		s := string(b)
		got, want := parseDate(s), generalParseDate(s)
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("parseDate(%q) = %v, general parser %v", s, got, want)
		}
		if v, ok := parseUTCMillis(b); ok && v != want {
			t.Fatalf("parseUTCMillis(%q) = %v, general parser %v", s, v, want)
		}
	}
}

// TestMonthStart compares the count for 1970–2099 with the general calendar's.
func TestMonthStart(t *testing.T) {
	for y := 1970; y <= 2099; y++ {
		for m := 1; m <= 12; m++ {
			if got, want := monthStart(y, m), daysFromCivil(y, m, 1); got != want {
				t.Fatalf("monthStart(%d, %d) = %d, daysFromCivil %d", y, m, got, want)
			}
		}
	}
}

// TestParseUTCMillisYears: around the ends of monthStart's years and around leap days, the
// fixed form reads as the general parser reads it, and outside those years it is left to it.
func TestParseUTCMillisYears(t *testing.T) {
	for _, y := range []int{1968, 1969, 1970, 1971, 1972, 2000, 2024, 2025, 2096, 2098, 2099, 2100, 2104} {
		for _, md := range []string{"01-01", "02-28", "02-29", "03-01", "12-31"} {
			s := fmt.Sprintf("%04d-%sT23:59:59.999Z", y, md)
			v, ok := parseUTCMillis([]byte(s))
			if want := generalParseDate(s); (ok && v != want) || ok != (y >= 1970 && y <= 2099) {
				t.Fatalf("parseUTCMillis(%q) = %v, %v; general parser %v", s, v, ok, want)
			}
			if got, want := parseDate(s), generalParseDate(s); got != want {
				t.Fatalf("parseDate(%q) = %v, general parser %v", s, got, want)
			}
		}
	}
}

func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"2025-01-01T00:00:05.000Z", "2025-02-30T25:61:00Z", "+002025-01-01T00:00:00Z", "", "2025-01-01T00:00:05.000+09:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := parseDate(s)
		if !math.IsNaN(v) && (math.Abs(v) > maxTimeValue || v != math.Trunc(v)) {
			t.Fatalf("parseDate(%q) = %v: not a time value", s, v)
		}
		if g := generalParseDate(s); v != g && !(math.IsNaN(v) && math.IsNaN(g)) {
			t.Fatalf("parseDate(%q) = %v, general parser %v", s, v, g)
		}
	})
}

// FuzzApply feeds arbitrary activity JSON to every profile: Apply may refuse it but must not
// panic, and the bubbles stay in UI-list order.
func FuzzApply(f *testing.F) {
	f.Add(`{"type":"message","id":"a","timestamp":"2025-01-01T00:00:00Z","text":"x"}`, "incoming")
	f.Add(`{"type":"typing","id":"s","text":"x","channelData":{"streamType":"streaming","streamSequence":1}}`, "incoming")
	f.Add(`{"type":"message","text":"x","channelData":{"clientActivityID":"c"},"localTimestamp":"2025-01-01T00:00:00Z"}`, "post")
	f.Add(`{"type":"message","id":"p","entities":[{"type":"https://schema.org/Message","@type":"Message","@id":"","isPartOf":{"@id":"_:g","@type":"HowTo"},"position":1}]}`, "incoming")
	f.Add(`[1,2]`, "incoming")
	f.Fuzz(func(t *testing.T, js, op string) {
		for _, p := range []Profile{GenA, GenB, GenC} {
			r := New(Options{Profile: p, UserID: "u"})
			for _, ev := range []Event{
				{Op: Op(op), Activity: json.RawMessage(js)},
				{Op: OpIncoming, Activity: json.RawMessage(js)},
				{Op: OpFulfilled, ClientActivityID: "c", Activity: json.RawMessage(js)},
				{Op: OpDelete, ActivityID: "a"},
			} {
				_ = r.Apply(ev)
			}
			if r.Len() != len(r.Names()) {
				t.Fatalf("%s: Len and Names disagree", p)
			}
			last := -1
			for _, b := range r.Screen() {
				if b.First <= last {
					t.Fatalf("%s: bubbles out of order: %+v", p, r.Screen())
				}
				last = b.First
			}
		}
	})
}

func TestParseProfile(t *testing.T) {
	for in, want := range map[string]Profile{"gen-a": GenA, "gen-b": GenB, "gen-c": GenC, "": GenC} {
		if got, err := ParseProfile(in); err != nil || got != want {
			t.Errorf("ParseProfile(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseProfile("gen-d"); err == nil {
		t.Error("ParseProfile(gen-d) accepted")
	}
}

func TestApplyRejectsUnusableInput(t *testing.T) {
	cases := []struct {
		name string
		ev   Event
		want error
	}{
		{"array activity", Event{Op: OpIncoming, Activity: json.RawMessage(`[1]`)}, ErrNotObject},
		{"no activity", Event{Op: OpPost}, ErrNotObject},
		{"truncated object", Event{Op: OpIncoming, Activity: json.RawMessage(`{"id":"a"`)}, jsonscan.ErrSyntax},
		{"unknown op", Event{Op: "upsert"}, ErrUnknownOp},
		{"fulfilled without clientActivityID", Event{Op: OpFulfilled, Activity: json.RawMessage(`{}`)}, nil},
		// Web Chat would delete every activity without an id, pending posts included.
		{"delete without activityID", Event{Op: OpDelete}, nil},
	}
	for _, c := range cases {
		r := New(Options{})
		err := r.Apply(c.ev)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: Apply = %v, want %v", c.name, err, c.want)
		}
		if r.Len() != 0 {
			t.Errorf("%s: state changed", c.name)
		}
	}
}

func TestLoadVectorErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, body := range map[string]string{
		"bad-json.json":    `{`,
		"bad-profile.json": `{"name":"bad-profile","profile":"gen-x","events":[]}`,
		"bad-op.json":      `{"name":"bad-op","profile":"gen-c","events":[{"op":"jump"}]}`,
		"no-order.json":    `{"name":"no-order","profile":"gen-c","events":[{"op":"expect"}]}`,
		"other-name.json":  `{"name":"x","profile":"gen-c","events":[]}`,
	} {
		if _, err := LoadVector(write(name, body)); err == nil {
			t.Errorf("%s: LoadVector accepted it", name)
		}
	}
	if _, err := LoadVector(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing file accepted")
	}
	v, err := LoadVector(write("ok.json", `{"name":"ok","profile":"gen-a","userID":"u","events":[{"op":"expect","order":[]}]}`))
	if err != nil || v.UserID != "u" || v.Events[0].Order == nil || v.Events[0].Screen != nil {
		t.Fatalf("LoadVector = %+v, %v", v, err)
	}
}
