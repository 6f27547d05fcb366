package sortkeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestLegacyDate: strings outside the ISO forms, with Date.parse's answer in Node 22 (V8) under
// TZ=UTC; "nan" is NaN.
func TestLegacyDate(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		in   string
		want float64
	}{
		{"Tue, 01 Jan 2025 00:00:00 GMT", 1735689600000},
		{"Wed Jan 01 2025 00:00:00 GMT+0000 (Coordinated Universal Time)", 1735689600000},
		{"Tue, 01 Jan 2025 00:00:00 GMT+0100 (x(y)z)", 1735686000000},
		{"Thu, 01 Jan 1970 00:00:00 +0100", -3600000},
		{"2025/01/01", 1735689600000},
		{"2025/01/01 00:00:05", 1735689605000},
		{"1/2/2025", 1735776000000},
		{"12/31/2024 23:59:59 UTC", 1735689599000},
		{"January 1, 2025", 1735689600000},
		{"Jan 1, 2025 00:00:05", 1735689605000},
		{"1 January 2025", 1735689600000},
		{"Jan 5", 978652800000},
		{"12:00 2025/1/2", 1735819200000},
		{"2025-1-1", 1735689600000},
		{"2025-01-01 00:00:05.123Z", 1735689605123},
		{"8240-08-04T14:25:21\x00198Z", 197880762321000},
		{"2025\x00x", 1735689600000},
		{"2025-01-01T00:00:05 GMT", nan},
		{"2025-01-01T00:00:05+01", nan},
		{"Jan 1 2025 10:00 pm EST", 1735786800000},
		{"garbage", nan},
		{"x1/2/2025", nan},
	}
	for _, c := range cases {
		got := parseDate(c.in)
		if got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("parseDate(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestLegacyDateMatchesV8 compares parseDate with Date.parse in Node on thousands of seeded
// strings built from the pieces date strings are made of, valid or not. It needs node on PATH
// (skipped without it, failed under DIRECTLINE_NODE_TESTS=1, as `make test` sets it).
func TestLegacyDateMatchesV8(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("DIRECTLINE_NODE_TESTS") == "1" {
			t.Fatal("node is not on PATH")
		}
		t.Skip("node is not on PATH")
	}
	inputs := dateCorpus(rand.New(rand.NewPCG(2025, 12)), 20000)
	body, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	const script = `let s='';process.stdin.on('data',d=>s+=d).on('end',()=>` +
		`process.stdout.write(JSON.stringify(JSON.parse(s).map(x=>String(Date.parse(x))))))`
	cmd := exec.Command("node", "-e", script)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var results []string
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(inputs) {
		t.Fatalf("node answered %d results for %d inputs: %v", len(results), len(inputs), err)
	}
	parsed, bad := 0, 0
	for i, in := range inputs {
		want := math.NaN()
		if results[i] != "NaN" {
			if want, err = strconv.ParseFloat(results[i], 64); err != nil {
				t.Fatal(err)
			}
			parsed++
		}
		got := parseDate(in)
		if nearRangeEnd(got) || nearRangeEnd(want) {
			// Within a day or so of ±8.64e15 ms (the years 275760 and -271821), V8's local time
			// conversion answers by what its offset cache holds: the same string parses alone
			// and is NaN after thousands of others.
			continue
		}
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			if bad++; bad <= 20 {
				t.Errorf("parseDate(%q) = %v, Date.parse %v", in, got, want)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d strings differ from V8", bad, len(inputs))
	}
	// The corpus must exercise both answers, or the comparison says little.
	if parsed < len(inputs)/10 || parsed > len(inputs)*9/10 {
		t.Fatalf("V8 parsed %d of %d strings: the corpus is lopsided", parsed, len(inputs))
	}
}

func nearRangeEnd(v float64) bool { return math.Abs(v) >= 8.6e15 }

// dateCorpus makes n strings: shapes that services, bots and JavaScript's own toString and
// toUTCString write, with their fields varied, and free mixes of the tokens V8's parser tells
// apart (numbers of every length, separators, month and day names, zones, AM/PM, parentheses,
// Unicode spaces, stray words).
func dateCorpus(rng *rand.Rand, n int) []string {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	num := func(lo, hi int) int { return lo + rng.IntN(hi-lo+1) }
	pad := func(v, w int) string { return fmt.Sprintf("%0*d", w, v) }
	months := []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec", "January", "sept", "MAYDAY", "Ja"}
	days := []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "Tuesday", "tues"}
	zones := []string{"GMT", "UTC", "UT", "Z", "z", "EST", "edt", "CST", "cdt", "MST", "mdt", "PST", "pdt", "CET", "gmt", "Zulu"}
	clock := func() string {
		s := pad(num(0, 25), num(1, 2)) + ":" + pad(num(0, 61), 2)
		if rng.IntN(3) > 0 {
			s += ":" + pad(num(0, 61), 2)
			if rng.IntN(3) == 0 {
				s += "." + pad(num(0, 9999999), 7)[:num(1, 7)]
			}
		}
		if rng.IntN(4) == 0 {
			s += pick(" AM", " pm", "am", " PM")
		}
		return s
	}
	offset := func() string {
		sign := pick("+", "-")
		switch rng.IntN(4) {
		case 0:
			return sign + pad(num(0, 25), 2) + ":" + pad(num(0, 61), 2)
		case 1:
			return sign + pad(num(0, 2500), 4)
		case 2:
			return sign + strconv.Itoa(num(0, 14))
		}
		return sign + strconv.Itoa(num(0, 99999))
	}
	tokens := []string{
		"1", "01", "7", "12", "13", "24", "29", "31", "32", "49", "50", "59", "60", "99", "100", "999",
		"0530", "1999", "2025", "20250", "000001", "275760", "1234567890123",
		"-", "+", ":", "::", ".", "/", ",", " ", "  ", "\t", "\n", "(", ")", "(x)", "((a)b)", "T", "t",
		"Z", "z", "AM", "pm", "GMT", "UTC", "UT", "EST", "pdt", "Jan", "January", "feb", "SEPT",
		"Mayday", "Tue", "Tuesday,", "garbage", "x", "ZZ", "\u00a0", "\u3000", "\u2028", "é", "日本", "\x00",
	}
	out := make([]string, 0, n)
	for len(out) < n {
		var s string
		y, mo, d := num(0, 2100), num(0, 13), num(0, 32)
		switch rng.IntN(10) {
		case 0: // toUTCString
			s = fmt.Sprintf("%s, %s %s %s %s %s", pick(days...), pad(d, 2), pick(months...), pad(y, 4), clock(), pick(zones...))
		case 1: // toString
			s = fmt.Sprintf("%s %s %s %s %s GMT%s (%s)", pick(days...), pick(months...), pad(d, 2), pad(y, 4), clock(), offset(), pick("Coordinated Universal Time", "x(y)", ""))
		case 2: // slashes, either order, with or without a time
			s = strings.Join([]string{strconv.Itoa(mo), strconv.Itoa(d), strconv.Itoa(y)}, pick("/", "-", "/"))
			if rng.IntN(2) == 0 {
				s = strconv.Itoa(y) + "/" + strconv.Itoa(mo) + "/" + strconv.Itoa(d)
			}
			if rng.IntN(2) == 0 {
				s += " " + clock()
			}
			if rng.IntN(3) == 0 {
				s += " " + pick(zones...)
			}
		case 3: // named month first or second
			if rng.IntN(2) == 0 {
				s = fmt.Sprintf("%s %d, %d", pick(months...), d, y)
			} else {
				s = fmt.Sprintf("%d %s %d", d, pick(months...), y)
			}
			if rng.IntN(2) == 0 {
				s += " " + clock()
			}
			if rng.IntN(3) == 0 {
				s += " " + pick(zones...) + pick("", offset())
			}
		case 4, 5: // ISO forms, some slightly off
			s = pad(y, 4) + "-" + pad(mo, num(1, 2)) + "-" + pad(d, 2)
			if rng.IntN(4) > 0 {
				s += pick("T", "t", " ", "  ") + clock()
			}
			if rng.IntN(2) == 0 {
				s += pick("Z", "z", offset(), " GMT", " "+offset(), "")
			}
		default: // free mixes
			k := 1 + rng.IntN(9)
			var b strings.Builder
			for range k {
				b.WriteString(tokens[rng.IntN(len(tokens))])
			}
			s = b.String()
		}
		out = append(out, s)
	}
	return out
}
