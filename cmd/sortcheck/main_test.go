package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"github.com/directline-go/directline/sortkeys"
)

// Activities of a small conforming conversation, one JSON object each.
var cleanActivities = []string{
	`{"type":"message","id":"c|0000001","timestamp":"2024-05-01T10:00:00.000Z","localTimestamp":"2024-05-01T12:00:00.000+02:00","from":{"id":"u-user","role":"user"},"text":"hello","channelData":{"clientActivityID":"x1","webchat:sequence-id":1}}`,
	`{"type":"message","id":"c|0000002","timestamp":"2024-05-01T10:00:01.000Z","from":{"id":"bot","role":"bot"},"text":"hi there","replyToId":"c|0000001","channelData":{"webchat:sequence-id":2}}`,
	`{"type":"message","id":"c|0000003","timestamp":"2024-05-01T10:00:02.000Z","from":{"id":"bot","role":"bot"},"text":"anything else?","channelData":{"webchat:sequence-id":3}}`,
}

// Activities the service delivered in one order but Web Chat shows in another (b before a), and
// without sequence ids on the last one (a MUST finding).
var misplacedActivities = []string{
	`{"type":"message","id":"a","timestamp":"2024-05-01T10:00:10.000Z","from":{"id":"bot","role":"bot"},"text":"first from the service"}`,
	`{"type":"message","id":"b","timestamp":"2024-05-01T10:00:05.000Z","from":{"id":"bot","role":"bot"},"text":"second from the service"}`,
	`{"type":"message","id":"c","timestamp":"2024-05-01T10:00:11.000Z","from":{"id":"bot","role":"bot"},"text":"third"}`,
}

func jsonLines(acts []string) string { return strings.Join(acts, "\n") + "\n" }

func transcript(acts []string) string { return "[\n  " + strings.Join(acts, ",\n  ") + "\n]\n" }

func activitySets(acts []string) string {
	return "[\n" + `{"activities":[` + acts[0] + `],"watermark":"1"},` + "\n" +
		`{"activities":[` + strings.Join(acts[1:], ",\n") + `],"watermark":"3"}` + "\n]\n"
}

// vector makes a gen-c vector of acts delivered in turn, with one checkpoint that expects them
// in that order.
func vector(acts []string) string {
	var evs, ids []string
	for _, a := range acts {
		evs = append(evs, `{"op":"incoming","activity":`+a+`}`)
		var v struct{ ID string }
		json.Unmarshal([]byte(a), &v)
		ids = append(ids, strconv.Quote(v.ID))
	}
	evs = append(evs, `{"op":"expect","order":[`+strings.Join(ids, ",")+`]}`)
	return `{"name":"t","profile":"gen-c","source":"test","userID":"u-user","events":[` + "\n" + strings.Join(evs, ",\n") + "\n]}\n"
}

type result struct {
	code           int
	stdout, stderr string
}

func runWith(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

type jsonReport struct {
	Input struct {
		Source, Format string
		Expects        int
	}
	Screen []struct {
		Position                                 int
		Name, Role, Type, Text, SequenceID, Unit string
		Timestamp                                string
	}
	Findings []struct {
		Rule, Severity, ActivityID, Message string
		Index, Line, Column                 int
	}
	Summary struct {
		Profile, ServiceOrder     string
		Events, Activities, Posts int
		UserID                    string
		RoleInferred              int
		RoleInferredUser          int
		Findings                  int
		ByRule                    map[string]int
		InvertedPairs             int64
		Moved, Bubbles            int
		BySeverity                map[string]int
	}
	Checkpoints []struct {
		Checkpoint, Line, Column int
		Holds                    bool
		Problem                  string
	}
	Rules []struct{ ID, Severity, Doc string }
}

func decodeReport(t *testing.T, s string) jsonReport {
	t.Helper()
	var r jsonReport
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("--json output does not decode: %v\n%s", err, s)
	}
	return r
}

func TestInputFormats(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		input        func([]string) string
	}{
		{"json lines", FormatJSONLines, jsonLines},
		{"transcript", FormatTranscript, transcript},
		{"activity sets", FormatActivitySet, activitySets},
		{"vector", FormatVector, vector},
		{"activity set lines", FormatActivitySet, func(acts []string) string {
			return `{"activities":[` + acts[0] + `],"watermark":"1"}` + "\n" + `{"activities":[` + strings.Join(acts[1:], ",") + `],"watermark":"3"}` + "\n"
		}},
		{"pretty-printed values", FormatJSONLines, func(acts []string) string {
			var b strings.Builder
			for _, a := range acts {
				var buf bytes.Buffer
				json.Indent(&buf, []byte(a), "", "  ")
				b.Write(buf.Bytes())
				b.WriteString("\n")
			}
			return b.String()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clean := runWith(t, tc.input(cleanActivities), "--json", "--user-id", "u-user")
			if clean.code != exitClean || clean.stderr != "" {
				t.Fatalf("clean log: exit %d, stderr %q\n%s", clean.code, clean.stderr, clean.stdout)
			}
			r := decodeReport(t, clean.stdout)
			if r.Input.Format != tc.format || r.Summary.Activities != 3 || r.Summary.Posts != 0 || len(r.Screen) != 3 || len(r.Findings) != 0 {
				t.Fatalf("format %q, %d activities, screen %+v, findings %+v", r.Input.Format, r.Summary.Activities, r.Screen, r.Findings)
			}
			// vector() ends with one expect checkpoint, which holds.
			wantExpects, note := 0, ""
			if tc.format == FormatVector {
				wantExpects, note = 1, "3 events: 3 activities delivered, 0 posts, 1 expect checkpoint: 1 hold (gen-c)\n"
			}
			if text := runWith(t, tc.input(cleanActivities), "--user-id", "u-user").stdout; r.Input.Expects != wantExpects || !strings.Contains(text, note) {
				t.Errorf("input.expects %d, want %d; text lacks %q:\n%s", r.Input.Expects, wantExpects, note, text)
			}
			if s := r.Screen[0]; s.Name != "c|0000001" || s.Role != "user" || s.Text != "hello" || s.SequenceID != "1" || s.Timestamp != "2024-05-01T10:00:00.000Z" {
				t.Errorf("first row %+v", s)
			}

			bad := runWith(t, tc.input(misplacedActivities), "--json", "--fail-on", "misplace")
			if bad.code != exitFindings {
				t.Fatalf("misplaced log: exit %d\n%s%s", bad.code, bad.stdout, bad.stderr)
			}
			r = decodeReport(t, bad.stdout)
			if r.Summary.InvertedPairs != 1 || r.Summary.Moved != 1 || r.Summary.ServiceOrder != "delivery" {
				t.Errorf("summary %+v", r.Summary)
			}
			var names []string
			for _, s := range r.Screen {
				names = append(names, s.Name)
			}
			if strings.Join(names, ",") != "b,a,c" {
				t.Errorf("screen %v, want b,a,c", names)
			}
		})
	}
}

func TestTextOutput(t *testing.T) {
	res := runWith(t, jsonLines(misplacedActivities), "--fail-on", "misplace")
	if res.code != exitFindings {
		t.Fatalf("exit %d", res.code)
	}
	for _, want := range []string{
		"Predicted screen (gen-c, 3 bubbles)",
		"DL070-order-inverted",
		"line 2", // b is on line 2 of the input
		"1 pair shown in the opposite order to the server (1 bubble moved)",
		"3 events: 3 activities delivered, 0 posts",
		"echo rules (DL021, DL030 to DL033): not applicable, the log has no posts",
		"second from the service",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("text output lacks %q:\n%s", want, res.stdout)
		}
	}
	// Without a user id, an activity without from.role is a bot's; the summary says so.
	noRole := `{"type":"message","id":"a","timestamp":"2024-05-01T10:00:00.000Z","localTimestamp":"2024-05-01T10:00:00.000Z","from":{"id":"dl_alice"},"text":"hi"}` + "\n"
	for _, tc := range []struct {
		args []string
		note string
	}{
		{nil, "1 activity has from.id but no from.role: with no user id given (--user-id), Web Chat takes each for a bot's"},
		{[]string{"--user-id", "dl_bob"}, `1 activity has from.id but no from.role, and none of them the user id "dl_bob"`},
		{[]string{"--user-id", "dl_alice"}, ""},
	} {
		res := runWith(t, noRole, tc.args...)
		if got := strings.Contains(res.stdout, "no from.role"); got != (tc.note != "") || !strings.Contains(res.stdout, tc.note) {
			t.Errorf("%v: want note %q:\n%s", tc.args, tc.note, res.stdout)
		}
	}
	// A vector has the posts, which the echo rules need.
	withPosts := runWith(t, `{"name":"t","profile":"gen-c","userID":"u-user","events":[
{"op":"post","activity":{"type":"message","localTimestamp":"2025-01-01T00:00:01.000Z","from":{"id":"u-user","role":"user"},"text":"hi","channelData":{"clientActivityID":"c1"}}},
{"op":"incoming","activity":{"type":"message","id":"u1","timestamp":"2025-01-01T00:00:01.100Z","localTimestamp":"2025-01-01T00:00:01.000Z","from":{"id":"u-user","role":"user"},"text":"hi","channelData":{"clientActivityID":"c1"}}}]}`)
	if !strings.Contains(withPosts.stdout, "1 activity delivered, 1 post\n") || strings.Contains(withPosts.stdout, "echo rules") {
		t.Errorf("vector with a post:\n%s", withPosts.stdout)
	}
	if res := runWith(t, jsonLines(misplacedActivities), "--screen=false"); strings.Contains(res.stdout, "Predicted screen") {
		t.Errorf("--screen=false still prints the screen")
	}
	var many []string
	for i := range 5 {
		many = append(many, fmt.Sprintf(`{"type":"message","id":"m%d","timestamp":"2024-05-01T10:00:0%dZ","from":{"id":"bot","role":"bot"},"text":"x"}`, i, i))
	}
	res = runWith(t, jsonLines(many), "--max-per-rule", "2")
	if strings.Count(res.stdout, "DL004-timestamp-no-milliseconds") != 3 || !strings.Contains(res.stdout, "... and 3 more") {
		t.Errorf("--max-per-rule 2:\n%s", res.stdout)
	}
}

func TestExitCodes(t *testing.T) {
	mustOnly := `{"type":"message","id":"a","from":{"id":"bot","role":"bot"},"text":"no timestamp"}` + "\n"
	shouldOnly := `{"type":"message","id":"a","timestamp":"2024-05-01T10:00:00Z","from":{"id":"bot","role":"bot"},"text":"second resolution"}` + "\n"
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  int
	}{
		{"clean", jsonLines(cleanActivities), []string{"--user-id", "u-user"}, exitClean},
		{"only SHOULD findings", shouldOnly, nil, exitClean},
		{"MUST finding", mustOnly, nil, exitFindings},
		{"DROP-or-MISPLACE finding is clean by default", jsonLines(misplacedActivities), nil, exitClean},
		{"DROP-or-MISPLACE finding with --fail-on misplace", jsonLines(misplacedActivities), []string{"--fail-on", "misplace"}, exitFindings},
		{"SHOULD finding with --fail-on should", shouldOnly, []string{"--fail-on", "should"}, exitFindings},
		{"MUST finding with --fail-on should", mustOnly, []string{"--fail-on", "should"}, exitFindings},
		{"unknown --fail-on", mustOnly, []string{"--fail-on", "never"}, exitUsage},
		{"invalid JSON", "{", nil, exitUsage},
		{"empty input", "\n", nil, exitUsage},
		{"unknown flag", "", []string{"--nope"}, exitUsage},
		{"unknown profile", jsonLines(cleanActivities), []string{"--profile", "gen-z"}, exitUsage},
		{"two files", "", []string{"a", "b"}, exitUsage},
		{"missing file", "", []string{filepath.Join(t.TempDir(), "none.jsonl")}, exitUsage},
		{"live without base", "", []string{"--live", "--conversation", "c", "--secret", "s"}, exitUsage},
		{"live flags without --live", jsonLines(cleanActivities), []string{"--base", "http://127.0.0.1:1"}, exitUsage},
		{"live with both credentials", "", []string{"--live", "--base", "http://127.0.0.1:1", "--conversation", "c", "--secret", "s", "--token", "t"}, exitUsage},
		{"help", "", []string{"--help"}, exitClean},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWith(t, tc.stdin, tc.args...)
			if res.code != tc.want {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", res.code, tc.want, res.stdout, res.stderr)
			}
			if tc.want == exitUsage && res.stderr == "" {
				t.Errorf("usage error without a message")
			}
			// Each problem is told once (the flag package prints its own).
			if first, _, _ := strings.Cut(res.stderr, "\n"); first != "" && strings.Count(res.stderr, first) > 1 {
				t.Errorf("message repeated: %q", res.stderr)
			}
		})
	}
}

func TestProfilesAndFileArgument(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.json")
	// Its checkpoint expects the delivery order, which the model does not show: the vector fails
	// on every profile, and the exit status says so even where no finding reaches --fail-on.
	if err := os.WriteFile(path, []byte(vector(misplacedActivities)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"gen-a", "gen-b", "gen-c"} {
		res := runWith(t, "", "--json", "--fail-on", "misplace", "--profile", p, path)
		if res.code != exitFindings {
			t.Fatalf("%s: exit %d: %s", p, res.code, res.stderr)
		}
		if r := decodeReport(t, res.stdout); r.Summary.Profile != p || r.Input.Source != path {
			t.Errorf("%s: summary %+v input %+v", p, r.Summary, r.Input)
		}
	}
	// Flags after the file are read as flags; after "--" everything is a file.
	res := runWith(t, "", path, "--json", "--profile", "gen-a")
	if r := decodeReport(t, res.stdout); res.code != exitFindings || r.Summary.Profile != "gen-a" || r.Input.Source != path || r.Checkpoints[0].Holds {
		t.Errorf("flags after the file: exit %d, stderr %q, summary %+v", res.code, res.stderr, r.Summary)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{path, "other.json"}, "one input file at most, got 2: " + path + " other.json"},
		{[]string{"--json", "--", path, "--profile"}, "one input file at most, got 2: " + path + " --profile"},
	} {
		if res := runWith(t, "", tc.args...); res.code != exitUsage || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, res.code, res.stderr)
		}
	}
}

func TestBadInputLineNumbers(t *testing.T) {
	for _, tc := range []struct {
		name, input, want string
	}{
		{"json lines: broken line", jsonLines(cleanActivities[:2]) + `{"type":"message",` + "\n" + cleanActivities[2] + "\n", "input line 3: invalid JSON"},
		{"json lines: not an object", cleanActivities[0] + "\n42\n", "input line 2: expected a JSON object"},
		{"json lines: trailing garbage", cleanActivities[0] + "\n" + cleanActivities[1] + "\n]\n", "input line 3: invalid JSON"},
		{"transcript: string element", "[\n" + cleanActivities[0] + ",\n\n\"oops\"\n]", "input line 4: expected a JSON object"},
		{"transcript: unterminated", "[\n" + cleanActivities[0] + ",\n" + cleanActivities[1], "input line 3: invalid JSON"},
		{"activity sets: bad activity", "[\n{\"activities\":[\n" + cleanActivities[0] + ",\n7\n],\"watermark\":\"1\"}\n]", "input line 4: ActivitySet.activities must hold activity objects"},
		{"vector: unknown op", "{\"name\":\"v\",\n\"events\":[\n{\"op\":\"incoming\",\"activity\":" + cleanActivities[0] + "},\n{\"op\":\"teleport\"}\n]}", `input line 4: unknown op "teleport"`},
		{"vector: incoming without activity", "{\"name\":\"v\",\"events\":[\n\n{\"op\":\"incoming\"}]}", "input line 3: incoming event without an activity object"},
		{"event line with a bad op", `{"op":"sideways"}`, `input line 1:1: unknown op "sideways"`},
		{"vector with an unknown profile", "{\"name\":\"v\",\n\"profile\":\"gen-z\",\n\"events\":[{\"op\":\"incoming\",\"activity\":" + cleanActivities[0] + "}]}",
			`stdin: input line 2: the vector's profile "gen-z" is not gen-a, gen-b or gen-c`},
		{"vector on one line with an unknown profile", `{"name":"v","profile":"gen-z","events":[{"op":"incoming","activity":` + cleanActivities[0] + `}]}`,
			`stdin: input line 1:23: the vector's profile "gen-z" is not gen-a, gen-b or gen-c`},
		{"vector: delete without activityID", "{\"name\":\"v\",\"events\":[\n{\"op\":\"incoming\",\"activity\":" + cleanActivities[0] + "},\n{\"op\":\"delete\"}]}",
			"input line 3: delete event without an activityID"},
		{"event line: delete of an empty activityID", `{"op":"delete","activityID":""}`, "input line 1:1: delete event without an activityID"},
		{"log export line without activity", `{"seq":1,"kind":"activity","activity":{"type":"message"}}` + "\n" + `{"seq":2,"kind":"activity","activity":5}`, "input line 2: log entry without an activity object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWith(t, tc.input)
			if res.code != exitUsage || !strings.Contains(res.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", res.code, res.stderr, tc.want)
			}
		})
	}
}

func TestJSONShape(t *testing.T) {
	res := runWith(t, jsonLines(misplacedActivities), "--json")
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"input", "screen", "findings", "summary", "rules"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("missing top-level member %q", k)
		}
	}
	var fs []map[string]any
	if err := json.Unmarshal(doc["findings"], &fs); err != nil || len(fs) == 0 {
		t.Fatalf("findings %s: %v", doc["findings"], err)
	}
	for _, k := range []string{"rule", "severity", "index", "line", "activityId", "message"} {
		if _, ok := fs[0][k]; !ok {
			t.Errorf("finding lacks %q: %v", k, fs[0])
		}
	}
	r := decodeReport(t, res.stdout)
	found := false
	for _, f := range r.Findings {
		if f.Rule == "DL070-order-inverted" {
			found = true
			if f.ActivityID != "b" || f.Line != 2 || f.Index != 1 || f.Severity != "DROP-or-MISPLACE" {
				t.Errorf("order finding %+v", f)
			}
		}
	}
	if !found || r.Summary.BySeverity["DROP-or-MISPLACE"] == 0 || len(r.Rules) == 0 {
		t.Errorf("findings %+v summary %+v", r.Findings, r.Summary)
	}
}

// TestFindingPlaces: a finding names the line where its event starts, and the byte column too
// when other events start on that line.
func TestFindingPlaces(t *testing.T) {
	oneLine := "[" + strings.Join(misplacedActivities, ",") + "]\n"
	for _, tc := range []struct {
		name, input, where string
		line, column       int
	}{
		{"json lines", jsonLines(misplacedActivities), "line 2 ", 2, 1},
		{"transcript", transcript(misplacedActivities), "line 3 ", 3, 3},
		{"array on one line", oneLine, "line 1:" + fmt.Sprint(len(misplacedActivities[0])+3) + " ", 1, len(misplacedActivities[0]) + 3},
		{"activity sets", activitySets(misplacedActivities), "line 3 ", 3, len(`{"activities":[`) + 1},
		{"activity sets on one line", strings.ReplaceAll(activitySets(misplacedActivities), "\n", ""), "line 1:" + fmt.Sprint(len(`[{"activities":[`+misplacedActivities[0]+`],"watermark":"1"},{"activities":[`)+1) + " ", 1, len(`[{"activities":[`+misplacedActivities[0]+`],"watermark":"1"},{"activities":[`) + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := runWith(t, tc.input)
			if !regexp.MustCompile(`DL070-order-inverted +` + regexp.QuoteMeta(tc.where)).MatchString(text.stdout) {
				t.Errorf("want DL070 at %q:\n%s", tc.where, text.stdout)
			}
			for _, f := range decodeReport(t, runWith(t, tc.input, "--json").stdout).Findings {
				if f.Rule == "DL070-order-inverted" && (f.Line != tc.line || f.Column != tc.column) {
					t.Errorf("DL070 at line %d column %d, want %d:%d", f.Line, f.Column, tc.line, tc.column)
				}
			}
		})
	}
}

// TestRoleAsWebChatInfersIt: without from.role, the screen shows the role Web Chat gives the
// activity from from.id and the user id it was started with.
func TestRoleAsWebChatInfersIt(t *testing.T) {
	log := jsonLines([]string{
		`{"type":"message","id":"a","timestamp":"2024-05-01T10:00:00.000Z","localTimestamp":"2024-05-01T12:00:00.000+02:00","from":{"id":"u1"},"text":"hi","channelData":{"clientActivityID":"x1"}}`,
		`{"type":"message","id":"b","timestamp":"2024-05-01T10:00:01.000Z","from":{"id":"some-bot"},"text":"hello"}`,
		`{"type":"message","id":"c","timestamp":"2024-05-01T10:00:02.000Z","text":"welcome"}`,
	})
	for _, tc := range []struct {
		userID string
		want   []string
	}{
		{"u1", []string{"user", "bot", "channel"}},
		{"someone-else", []string{"bot", "bot", "channel"}},
	} {
		r := decodeReport(t, runWith(t, log, "--json", "--user-id", tc.userID).stdout)
		var got []string
		for _, row := range r.Screen {
			got = append(got, row.Role)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("--user-id %s: roles %v, want %v", tc.userID, got, tc.want)
		}
	}
}

func TestHTMLIsSelfContainedAndWellFormed(t *testing.T) {
	for _, profile := range []string{"gen-c", "gen-a"} {
		path := filepath.Join(t.TempDir(), "out.html")
		res := runWith(t, jsonLines(append(misplacedActivities, `{"type":"message","id":"d","timestamp":"2024-05-01T10:00:12.000Z","from":{"id":"bot","role":"bot"},"text":"<b>&amp; \"quoted\"</b>"}`)), "--html", path, "--fail-on", "misplace", "--profile", profile)
		if res.code != exitFindings {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
		page, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(bytes.NewReader(page))
		counts := map[string]int{}
		moved := 0
		for {
			tok, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: not well-formed: %v\n%s", profile, err, page)
			}
			if se, ok := tok.(xml.StartElement); ok {
				counts[se.Name.Local]++
				for _, a := range se.Attr {
					if a.Name.Local == "class" && a.Value == "moved" && se.Name.Local == "line" {
						moved++
					}
					if a.Name.Local == "src" || a.Name.Local == "href" {
						t.Errorf("external reference %s=%q", a.Name.Local, a.Value)
					}
				}
			}
		}
		if counts["svg"] != 1 || counts["line"] != 4 || counts["text"] != 2+4+4 || moved != 1 {
			t.Errorf("%s: elements %v, moved lines %d", profile, counts, moved)
		}
		if strings.Contains(string(page), "<b>") {
			t.Errorf("activity text not escaped")
		}
	}
}

// TestHTMLMovedMatchesSummary: the picture draws as moved the bubbles the summary counts, each
// delivered activity joined to the bubble it is a revision of.
func TestHTMLMovedMatchesSummary(t *testing.T) {
	const echoVector = `{"name":"echo","profile":"gen-c","source":"test","userID":"u-user","events":[
{"op":"post","activity":{"type":"message","localTimestamp":"2025-01-01T00:00:01.000Z","from":{"id":"u-user","role":"user"},"text":"Hello.","channelData":{"clientActivityID":"c-00001"}}},
{"op":"incoming","activity":{"type":"message","id":"b-00001","timestamp":"2025-01-01T00:00:00.900Z","from":{"id":"bot","role":"bot"},"text":"bot"}},
{"op":"incoming","activity":{"type":"message","id":"u-00001","timestamp":"2025-01-01T00:00:01.100Z","localTimestamp":"2025-01-01T00:00:01.000Z","from":{"id":"dl_other-id"},"text":"Hello.","channelData":{"clientActivityID":"c-00001"}}},
{"op":"expect","order":[]}]}`
	livestream := jsonLines([]string{
		`{"type":"typing","id":"r1","timestamp":"2024-05-01T10:00:01.000Z","from":{"id":"bot","role":"bot"},"text":"chunk","channelData":{"streamType":"streaming","streamSequence":1}}`,
		`{"type":"message","id":"x","timestamp":"2024-05-01T10:00:02.000Z","from":{"id":"bot","role":"bot"},"text":"x"}`,
		`{"type":"typing","id":"r2","timestamp":"2024-05-01T10:00:03.000Z","from":{"id":"bot","role":"bot"},"text":"chunk 2","channelData":{"streamType":"streaming","streamSequence":2,"streamId":"r1"}}`,
	})
	for _, tc := range []struct {
		name, input string
		moved       int
	}{
		{"echo at its post's place", echoVector, 1},
		{"livestream around a message", livestream, 0},
		// Shown at the final's place, below x: in order all the same.
		{"finalized livestream around a message", jsonLines([]string{
			`{"type":"typing","id":"r1","timestamp":"2024-05-01T10:00:01.000Z","from":{"id":"bot","role":"bot"},"text":"Hel","channelData":{"streamType":"streaming","streamSequence":1}}`,
			`{"type":"message","id":"x","timestamp":"2024-05-01T10:00:02.000Z","from":{"id":"bot","role":"bot"},"text":"x"}`,
			`{"type":"message","id":"f","timestamp":"2024-05-01T10:00:03.000Z","from":{"id":"bot","role":"bot"},"text":"Hello","channelData":{"streamType":"final","streamId":"r1"}}`,
		}), 0},
		{"misplaced", jsonLines(misplacedActivities), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.html")
			r := decodeReport(t, runWith(t, tc.input, "--json", "--html", path).stdout)
			page, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Each moved activity is drawn three times: its row on each side and its line.
			drawn := strings.Count(string(page), `class="moved"`)
			if r.Summary.Moved != tc.moved || drawn != 3*tc.moved {
				t.Errorf("summary moved %d, %d moved elements drawn; want %d, %d", r.Summary.Moved, drawn, tc.moved, 3*tc.moved)
			}
		})
	}
}

func TestLive(t *testing.T) {
	const secret, token = "s3cret", "t0ken"
	var logBody strings.Builder
	for i, a := range misplacedActivities {
		fmt.Fprintf(&logBody, `{"seq":%d,"kind":"activity","activity":%s}`+"\n", i+1, a)
	}
	var paged []string
	logAsked := false
	newServer := func(withLog bool) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			auth := r.Header.Get("Authorization")
			if auth != "Bearer "+secret && auth != "Bearer "+token {
				http.Error(w, `{"error":{"code":"BadArgument","message":"no credential"}}`, http.StatusForbidden)
				return
			}
			switch r.URL.Path {
			case "/v3/directline/conversations/empty/log":
				w.Header().Set("Content-Type", "application/x-ndjson")
			case "/v3/directline/conversations/conv1/log":
				logAsked = true
				if auth != "Bearer "+secret {
					http.Error(w, `{"error":{"code":"Forbidden","message":"secret only"}}`, http.StatusForbidden)
					return
				}
				if !withLog {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/x-ndjson")
				io.WriteString(w, logBody.String())
			case "/v3/directline/conversations/conv1/activities":
				wm := r.URL.Query().Get("watermark")
				paged = append(paged, wm)
				w.Header().Set("Content-Type", "application/json")
				switch wm {
				case "":
					io.WriteString(w, `{"activities":[`+misplacedActivities[0]+`],"watermark":"1"}`)
				case "1":
					io.WriteString(w, `{"activities":[`+strings.Join(misplacedActivities[1:], ",")+`],"watermark":"3"}`)
				default:
					io.WriteString(w, `{"activities":[],"watermark":"3"}`)
				}
			default:
				http.NotFound(w, r)
			}
		}))
	}
	for _, tc := range []struct {
		name         string
		withLog      bool
		cred         []string
		source       string
		format       string
		wantLogAsked bool
	}{
		{"secret, log export", true, []string{"--secret", secret}, "conversation conv1 from its /log export", FormatServiceLog, true},
		// Web Chat's domain, <root>/v3/directline, given as the base.
		{"base with /v3/directline", true, []string{"--secret", secret, "--base", "/v3/directline"}, "conversation conv1 from its /log export", FormatServiceLog, true},
		{"secret, no log export", false, []string{"--secret", secret}, "conversation conv1 from GET activities", FormatJSONLines, true},
		{"token pages activities", true, []string{"--token", token}, "conversation conv1 from GET activities", FormatJSONLines, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(tc.withLog)
			defer srv.Close()
			paged, logAsked = nil, false
			args := []string{"--live", "--fail-on", "misplace", "--base", srv.URL + "/", "--conversation", "conv1", "--json"}
			for i := 0; i < len(tc.cred); i += 2 {
				if tc.cred[i] == "--base" {
					args[4] = srv.URL + tc.cred[i+1]
				} else {
					args = append(args, tc.cred[i], tc.cred[i+1])
				}
			}
			res := runWith(t, "", args...)
			if res.code != exitFindings {
				t.Fatalf("exit %d: %s", res.code, res.stderr)
			}
			r := decodeReport(t, res.stdout)
			if r.Summary.Activities != 3 || r.Summary.InvertedPairs != 1 {
				t.Errorf("summary %+v", r.Summary)
			}
			if r.Input.Source != tc.source || r.Input.Format != tc.format || logAsked != tc.wantLogAsked {
				t.Errorf("input %+v, log asked %v", r.Input, logAsked)
			}
			if tc.source == "conversation conv1 from GET activities" && strings.Join(paged, "|") != "|1|3" {
				t.Errorf("paged watermarks %q", paged)
			}
		})
	}
	srv := newServer(true)
	defer srv.Close()
	for _, tc := range []struct {
		name  string
		args  []string
		wants []string
	}{
		{"bad token", []string{"--base", srv.URL, "--conversation", "conv1", "--token", "wrong"},
			[]string{"conv1/activities: HTTP 403", "has the token expired"}},
		{"bad secret", []string{"--base", srv.URL, "--conversation", "conv1", "--secret", "wrong"},
			[]string{"conv1/log: HTTP 403", "is --secret the secret of the service at --base?"}},
		{"no such conversation", []string{"--base", srv.URL, "--conversation", "conv2", "--secret", secret},
			[]string{"conv2/activities: HTTP 404", `is "conv2" a conversation of the service at --base?`, "(after HTTP 404 from " + srv.URL + "/v3/directline/conversations/conv2/log)"}},
		{"base without a scheme", []string{"--base", strings.TrimPrefix(srv.URL, "http://"), "--conversation", "conv1", "--secret", secret},
			[]string{"--base must be an http:// or https:// URL"}},
		{"a conversation with nothing in it", []string{"--base", srv.URL, "--conversation", "empty", "--secret", secret},
			[]string{"conversation empty has no activities yet (read from its /log export): nothing to check"}},
	} {
		res := runWith(t, "", append([]string{"--live"}, tc.args...)...)
		for _, want := range tc.wants {
			if res.code != exitUsage || !strings.Contains(res.stderr, want) {
				t.Errorf("%s: exit %d, stderr %q lacks %q", tc.name, res.code, res.stderr, want)
			}
		}
	}
}

func TestProgressBar(t *testing.T) {
	res := runWith(t, jsonLines(cleanActivities))
	if res.stderr != "" {
		t.Errorf("stderr is not a terminal, yet got %q", res.stderr)
	}
	old := progressAfter
	progressAfter = 0
	defer func() { progressAfter = old }()
	// Forced onto stderr that is not a terminal: every phase in turn, a line each, no terminal codes.
	res = runWith(t, jsonLines(cleanActivities), "--progress")
	for _, want := range []string{"sortcheck: replaying [", "3/3 events (100%)\n", "sortcheck: ordering and checking\n", "sortcheck: writing the report\n"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("forced progress: stderr %q lacks %q", res.stderr, want)
		}
	}
	if strings.ContainsAny(res.stderr, "\r\033") {
		t.Errorf("forced progress off a terminal has terminal codes: %q", res.stderr)
	}
	if strings.Contains(res.stdout, "replaying") {
		t.Errorf("progress leaked into stdout")
	}
	var errOut bytes.Buffer
	code := run([]string{"--progress"}, strings.NewReader(jsonLines(cleanActivities)), failingWriter{}, &errOut)
	if code != exitUsage || !strings.Contains(errOut.String(), "writing the report\nsortcheck: ") {
		t.Errorf("failure with progress: exit %d, stderr %q", code, errOut.String())
	}
}

// TestProgressDrawing: on a terminal the line is redrawn in place, at most every progressEvery,
// and cleared at the end, so an error printed after it starts on a clean line; off a terminal a
// bar prints a line when it starts and at each tenth, not at each call.
func TestProgressDrawing(t *testing.T) {
	for _, tc := range []struct {
		inPlace bool
		ok      func(out string) bool
	}{
		{true, func(out string) bool {
			return strings.HasPrefix(out, "\r\033[Ksortcheck: replaying [") && !strings.Contains(out, "\n") && strings.Count(out, "replaying") <= 3 &&
				strings.HasSuffix(out, "1000/1000 events (100%)\r\033[Ksortcheck: writing the report\r\033[K")
		}},
		{false, func(out string) bool {
			return strings.Count(out, "\n") == 12 && !strings.ContainsAny(out, "\r\033") &&
				strings.HasSuffix(out, "1000/1000 events (100%)\nsortcheck: writing the report\n")
		}},
	} {
		var buf bytes.Buffer
		p := newProgress(&buf, true, tc.inPlace)
		p.start = time.Now().Add(-2 * progressAfter)
		replaying := p.counter("replaying", "events")
		for i := 1; i <= 1000; i++ {
			replaying(i, 1000)
		}
		p.step("writing the report", "", 0, 0)
		p.done()
		if !tc.ok(buf.String()) {
			t.Errorf("in place %v: progress output %q", tc.inPlace, buf.String())
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestHTMLPathCheckedFirst: an --html path that cannot be written fails before the input is read,
// a file created for a failed run is removed, and an existing file keeps its content unless the
// picture replaces it whole.
func TestHTMLPathCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	res := runWith(t, "not json", "--html", filepath.Join(dir, "no", "such", "dir.html"))
	if res.code != exitUsage || !strings.Contains(res.stderr, "dir.html") || strings.Contains(res.stderr, "line 1") {
		t.Errorf("unwritable path: exit %d, stderr %q", res.code, res.stderr)
	}

	fresh := filepath.Join(dir, "fresh.html")
	res = runWith(t, "not json", "--html", fresh)
	if _, err := os.Stat(fresh); res.code != exitUsage || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bad input, new path: exit %d, stderr %q, file left behind: %v", res.code, res.stderr, err)
	}

	old := filepath.Join(dir, "old.html")
	long := strings.Repeat("earlier content ", 100_000)
	if err := os.WriteFile(old, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	res = runWith(t, "not json", "--html", old)
	if b, _ := os.ReadFile(old); res.code != exitUsage || string(b) != long {
		t.Errorf("bad input, existing file: exit %d, content kept %v", res.code, string(b) == long)
	}
	res = runWith(t, jsonLines(cleanActivities), "--html", old)
	b, _ := os.ReadFile(old)
	if res.code != exitClean || !strings.HasPrefix(string(b), "<!DOCTYPE html>") || strings.Contains(string(b), "earlier content") {
		t.Errorf("good input, existing file: exit %d, stderr %q, file starts %q", res.code, res.stderr, b[:min(len(b), 40)])
	}
}

func TestProgressWaitsASecond(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, true, true)
	replaying := p.counter("replaying", "events")
	replaying(1, 2)
	p.start = time.Now().Add(-2 * progressAfter)
	replaying(2, 2)
	p.done()
	if out := buf.String(); strings.Count(out, "replaying") != 1 || !strings.Contains(out, "2/2 events") {
		t.Errorf("progress output %q", out)
	}
}

// TestProgressCountsMegabytes: a long input shows a reading bar before the replay starts.
func TestProgressCountsMegabytes(t *testing.T) {
	old := progressAfter
	progressAfter = 0
	defer func() { progressAfter = old }()
	line := `{"type":"message","id":"a%d","timestamp":"2024-05-01T10:00:00.000Z","from":{"id":"bot","role":"bot"},"text":"` + strings.Repeat("x", 200) + `"}` + "\n"
	var b strings.Builder
	for i := 0; b.Len() < 3<<20; i++ {
		fmt.Fprintf(&b, line, i)
	}
	res := runWith(t, b.String(), "--progress", "--screen=false")
	if res.code != exitClean || !strings.Contains(res.stderr, "sortcheck: reading [") || !strings.Contains(res.stderr, " MB (100%)\n") {
		t.Errorf("exit %d, stderr %q", res.code, res.stderr)
	}
}

func FuzzReadLog(f *testing.F) {
	f.Add(jsonLines(cleanActivities))
	f.Add(transcript(cleanActivities))
	f.Add(activitySets(cleanActivities))
	f.Add(vector(cleanActivities))
	f.Add("[{\"activities\":null}]")
	f.Add("[{\"activities\":[]},\"\",{}]\n{\"watermark\":\"1\"}")
	f.Add(`{"seq":1,"kind":"revision","activity":{"type":"typing"}}`)
	f.Add(`{"events":[{"op":"incoming","activity":{"type":"message"},"OP":"post","at":1e999}]}`)
	f.Add(`{"events":[{"op":"delete","activityID":"a\u0062","activity":null,"at":-2.5}]}`)
	f.Add("{\"type\":\"message\"}\n{\"a\":tru}\n{\"b\":1}")
	f.Add("{\"op\":\"incoming\",\"activity\":{}} , {\"op\":\"post\",\"activity\":{}}")
	f.Fuzz(func(t *testing.T, s string) {
		log, err := ReadLog([]byte(s), nil)
		ref, refErr := readLog([]byte(s), false, nil)
		if fmt.Sprint(err) != fmt.Sprint(refErr) {
			t.Fatalf("error %v, without the shortcut %v", err, refErr)
		}
		if err == nil && !sameLog(log, ref) {
			t.Fatalf("log %+v, without the shortcut %+v", log, ref)
		}
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *InputError", err)
			}
			return
		}
		if len(log.Events) == 0 || len(log.Lines) != len(log.Events) {
			t.Fatalf("%d events, %d lines", len(log.Events), len(log.Lines))
		}
	})
}

func sameLog(a, b *Log) bool {
	if a.Format != b.Format || a.Profile != b.Profile || a.UserID != b.UserID || a.Expects != b.Expects || len(a.Events) != len(b.Events) ||
		fmt.Sprint(a.Lines) != fmt.Sprint(b.Lines) || fmt.Sprint(a.Columns) != fmt.Sprint(b.Columns) {
		return false
	}
	for i, ev := range a.Events {
		want := b.Events[i]
		if ev.Op != want.Op || !bytes.Equal(ev.Activity, want.Activity) || ev.ClientActivityID != want.ClientActivityID ||
			ev.ActivityID != want.ActivityID || (ev.At == nil) != (want.At == nil) || (ev.At != nil && *ev.At != *want.At) {
			return false
		}
	}
	return true
}

// TestShortcutReadsAsDecoder: reading streams and events without encoding/json gives the events,
// lines and errors the decoder gives, in every format and on broken input.
func TestShortcutReadsAsDecoder(t *testing.T) {
	inputs := []string{jsonLines(cleanActivities), transcript(cleanActivities), activitySets(cleanActivities),
		vector(cleanActivities), vector(cleanActivities) + "x", jsonLines(cleanActivities) + "{\"a\":",
		jsonLines(cleanActivities) + "[1]\n", "{\"a\":1}x", "{\"a\":1},{\"b\":2}", `{"events":[{"Op":"incoming","activity":{}}]}`,
		`{"events":[{"op":"incoming","activity":{},"clientActivityID":null,"at":null}]}`, `{"events":[{"op":7}]}`,
		`{"events":[{"op":"incoming","activity":{},"at":"5"}]}`, `{"events":[{"op":"incoming","activity":"x"}]}`,
		`{"seq":1,"kind":"activity","activity":{"type":"message"}}`, "\ufeff" + jsonLines(misplacedActivities),
		utf16Bytes(jsonLines(misplacedActivities), false, true), "{\"a\":1} 42\n{\"b\":2}"}
	for _, s := range inputs {
		log, err := ReadLog([]byte(s), nil)
		ref, refErr := readLog([]byte(s), false, nil)
		if fmt.Sprint(err) != fmt.Sprint(refErr) || (err == nil && !sameLog(log, ref)) {
			t.Errorf("%q: %+v %v, without the shortcut %+v %v", s, log, err, ref, refErr)
		}
	}
}

// checkDescription: where the shortcut reads an activity's description, encoding/json reads the
// same one.
func checkDescription(t *testing.T, raw []byte) {
	t.Helper()
	if !json.Valid(raw) {
		return
	}
	got, ok := plainDescription(raw)
	if !ok {
		return
	}
	want, wantOK := decodedDescription(raw)
	if !wantOK || got.typ != want.typ || got.text != want.text || got.role != want.role ||
		got.timestamp != want.timestamp || got.attachments != want.attachments || !bytes.Equal(got.seq, want.seq) {
		t.Fatalf("%s: shortcut %+v, encoding/json %+v (%v)", raw, got, want, wantOK)
	}
}

var descriptionSeeds = append([]string{
	`{"type":"message","text":null,"timestamp":null,"from":null,"attachments":null,"channelData":null}`,
	`{"type":"message","text":"a","from":{"role":"bot","role":null},"attachments":[{},{}],"channelData":{"webchat:sequence-id":3,"webchat:sequence-id":"4"}}`,
	`{"Type":"x"}`, `{"text":5}`, `{"timestamp":12.5}`, `{"from":"bot"}`, `{"from":{"ROLE":"bot"}}`,
	`{"text":"a","text":"b"}`, `{"channelData":{"a":1},"channelData":{"b":2}}`, `{"timeſtamp":"x"}`,
	`{"text":"caf\u00e9 \ud800"}`, "{\"text\":\"\xff\"}", `[1]`, `{"attachments":{}}`,
}, cleanActivities...)

func TestDescriptionShortcut(t *testing.T) {
	for _, s := range descriptionSeeds {
		checkDescription(t, []byte(s))
	}
	var r row
	describe(&r, json.RawMessage(cleanActivities[1]))
	if r.Type != "message" || r.Role != "bot" || r.Text != "hi there" || r.SequenceID != "2" || r.Timestamp != "2024-05-01T10:00:01.000Z" {
		t.Errorf("row %+v", r)
	}
}

func FuzzDescription(f *testing.F) {
	for _, s := range descriptionSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkDescription(t, []byte(s)) })
}

// TestCaptureKeepAliveFrames: in a WebSocket capture, empty keep-alive frames ("", {} and
// {"watermark":...}) carry no activities, wherever they stand; elsewhere a {} is still an
// activity and a string still an error.
func TestCaptureKeepAliveFrames(t *testing.T) {
	set := func(acts []string, wm string) string {
		return `{"activities":[` + strings.Join(acts, ",") + `],"watermark":"` + wm + `"}`
	}
	first, rest := set(cleanActivities[:1], "1"), set(cleanActivities[1:], "3")
	for _, tc := range []struct {
		name, input string
		// want is the number of activities read, or 0 when the input is an error naming wantErr.
		want    int
		wantErr string
	}{
		{"array: empty string", "[" + first + `,"",` + rest + "]", 3, ""},
		{"array: empty object", "[" + first + ",{}," + rest + "]", 3, ""},
		{"array: watermark only", "[" + first + `,{"watermark":"1"},` + rest + "]", 3, ""},
		{"array: frames before the first set", `["",{},{"watermark":"0"},` + first + "," + rest + "]", 3, ""},
		{"lines: frames between sets", first + "\n{}\n\"\"\n{\"watermark\":\"1\"}\n" + rest + "\n", 3, ""},
		{"lines: frames before the first set", "{}\n\"\"\n" + first + "\n" + rest + "\n", 3, ""},
		{"activities: a {} is an activity", jsonLines(cleanActivities) + "{}\n", 4, ""},
		{"activities: a watermark-only object is an activity", transcript(append(slices.Clone(cleanActivities), `{"watermark":"1"}`)), 4, ""},
		{"activities: a string is an error", "[\n" + cleanActivities[0] + ",\n\"\"\n]", 0, "input line 3: expected a JSON object"},
		{"activities: the string's error comes first", "\"\"\n" + cleanActivities[0] + "\n{\n", 0, "input line 1: expected a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWith(t, tc.input, "--json", "--user-id", "u-user")
			if tc.want == 0 {
				if res.code != exitUsage || !strings.Contains(res.stderr, tc.wantErr) {
					t.Fatalf("exit %d, stderr %q; want exit 2 and %q", res.code, res.stderr, tc.wantErr)
				}
				return
			}
			if res.code == exitUsage {
				t.Fatalf("exit 2: %s", res.stderr)
			}
			r := decodeReport(t, res.stdout)
			if r.Summary.Activities != tc.want || r.Summary.Events != tc.want {
				t.Errorf("%d activities in %d events, want %d", r.Summary.Activities, r.Summary.Events, tc.want)
			}
			// The frames leave no finding behind, and the activities keep their lines.
			if tc.want == 3 && len(r.Findings) != 0 {
				t.Errorf("findings %+v", r.Findings)
			}
		})
	}
}

// TestSyntaxErrorPlaces: a syntax error names the line of the offending byte however many blank
// lines and elements come before it, and in an input of one line its byte column too.
func TestSyntaxErrorPlaces(t *testing.T) {
	for _, tc := range []struct {
		name, input, want string
	}{
		{"array: blank lines inside an element", "[\n{\"type\":\"message\",\"id\":\"a\",\"text\":\"x\"\n\n\n\n\"timestamp\":\"2025-01-01T00:00:00.000Z\"}\n]\n",
			`input line 6: invalid JSON: invalid character '"' after object key:value pair`},
		{"array: blank lines between elements", "[\n\n" + cleanActivities[0] + ",\n\n\n" + cleanActivities[1] + ",\n\n\n{\"type\":\"message\",\n\"id\" \"c\"}\n]",
			"input line 10: invalid JSON: invalid character '\"' after object key"},
		{"capture", "[\n  {\"activities\":[\n    " + cleanActivities[0] + ",\n\n    {\"type\":tru}\n  ]}\n]",
			"input line 5: invalid JSON: invalid character '}' in literal true (expecting 'e')"},
		{"vector", "{\"name\":\"v\",\"events\":[\n\n{\"op\":\"incoming\",\n\n\"activity\":{\"type\":\"message\",}}]}",
			"input line 5: invalid JSON: invalid character '}' looking for beginning of object key string"},
		{"array on one line", `[{"type":"message"} , {"type":"message",,}]`,
			"input line 1:41: invalid JSON: invalid character ',' looking for beginning of object key string"},
		{"array on one line: not an object", `[{"type":"message"},5]` + "\n",
			"input line 1:21: expected a JSON object (an activity, an ActivitySet or an event)"},
		{"array on one line: unterminated", `[{"type":"message"},`,
			"input line 1:20: invalid JSON: unexpected end of input"},
		{"one line of JSON Lines", `{"type":"message","text":"a\x"}`,
			`input line 1:29: invalid JSON: invalid character 'x' in string escape code`},
		{"JSON Lines: line truncated", cleanActivities[0] + "\n" + `{"type":"message","text":"a"` + "\n" + cleanActivities[1] + "\n",
			"input line 2: invalid JSON: unexpected end of JSON input"},
		{"pretty-printed value: a comma left out", cleanActivities[0] + "\n{\n  \"type\": \"message\"\n  \"text\": \"a\"\n}\n",
			"input line 4: invalid JSON: invalid character '\"' after object key:value pair"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWith(t, tc.input)
			if res.code != exitUsage || !strings.Contains(res.stderr, "stdin: "+tc.want+"\n") {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", res.code, res.stderr, tc.want)
			}
		})
	}
}

// utf16Bytes is s in UTF-16 in the given byte order, after a byte order mark when bom is set.
func utf16Bytes(s string, bigEndian, bom bool) string {
	var order binary.AppendByteOrder = binary.LittleEndian
	if bigEndian {
		order = binary.BigEndian
	}
	units := utf16.Encode([]rune(s))
	if bom {
		units = append([]uint16{0xfeff}, units...)
	}
	var b []byte
	for _, u := range units {
		b = order.AppendUint16(b, u)
	}
	return string(b)
}

// TestInputEncodingAndTrailingData: UTF-16 input (PowerShell's >) is read as the UTF-8 it holds,
// and data after a value on its line is reported as such, with line and column.
func TestInputEncodingAndTrailingData(t *testing.T) {
	acts := []string{
		`{"type":"message","id":"a","timestamp":"2024-05-01T10:00:00.000Z","from":{"id":"bot","role":"bot"},"text":"caf\u00e9 😀 日本"}`,
		`{"type":"message","id":"b","timestamp":"2024-05-01T10:00:01.000Z","from":{"id":"bot","role":"bot"},"text":"second"}`,
	}
	text := "caf\u00e9 😀 日本"
	for _, tc := range []struct {
		name, input string
		// wantErr is the message of an input error; "" when the input reads.
		wantErr string
	}{
		{"UTF-16LE with a byte order mark", utf16Bytes(jsonLines(acts), false, true), ""},
		{"UTF-16BE with a byte order mark", utf16Bytes(transcript(acts), true, true), ""},
		{"UTF-16LE without one", utf16Bytes(jsonLines(acts), false, false), ""},
		{"UTF-16: errors name the line", utf16Bytes(acts[0]+"\n{\"type\":tru}\n", false, true), "input line 2: invalid JSON: invalid character '}' in literal true (expecting 'e')"},
		{"UTF-16 cut short", utf16Bytes(jsonLines(acts), false, true) + "x", "input: the input is UTF-16 (LittleEndian) but has an odd number of bytes: is it cut short?"},
		{"UTF-32", "\xff\xfe\x00\x00{\x00\x00\x00", "input: the input is UTF-32, which is not read: save it as UTF-8"},
		{"JSON Lines: words after a value", `{"type":"message"} trailing`, "input line 1:20: unexpected data after the JSON value"},
		{"JSON Lines: a bracket after a value", acts[0] + "\n" + acts[1] + " ]\n", fmt.Sprintf("input line 2:%d: unexpected data after the JSON value", len(acts[1])+2)},
		{"JSON Lines: a number after a value", acts[0] + " 42\n", fmt.Sprintf("input line 1:%d: unexpected data after the JSON value", len(acts[0])+2)},
		{"array: data after it", transcript(acts) + "x\n", "input line 5:1: unexpected data after the JSON array"},
		// JSON Lines has no separators: each is reported where it stands, not at the value after it.
		{"JSON Lines: commas before the first value", ",,," + jsonLines(acts), "input line 1:1: unexpected ',' before the first JSON value"},
		{"JSON Lines: a comma before the only value", "," + acts[1], "input line 1:1: unexpected ',' before the first JSON value"},
		{"JSON Lines: a colon on a line of its own", acts[0] + "\n:\n" + jsonLines(acts[1:]), "input line 2:1: unexpected data after the JSON value"},
		{"JSON Lines: a comma on a line of its own", acts[0] + "\n,\n" + jsonLines(acts[1:]), "input line 2:1: unexpected data after the JSON value"},
		{"JSON Lines: a colon after a value", acts[1] + ":\n" + acts[1] + "\n", fmt.Sprintf("input line 1:%d: unexpected data after the JSON value", len(acts[1])+1)},
		{"JSON Lines: a comma ending a line", acts[0] + ",\n" + acts[1] + ",\n" + acts[1] + "\n", fmt.Sprintf("input line 1:%d: unexpected data after the JSON value", len(acts[0])+1)},
		{"JSON Lines: a comma between values on one line", `{"a":1} , {"a":2}`, "input line 1:9: unexpected data after the JSON value"},
		{"JSON Lines: a last line of a colon", acts[0] + "\n:\n", "input line 2:1: unexpected data after the JSON value"},
		{"JSON Lines: a comma ending the last line", acts[0] + "\n" + acts[1] + ",", fmt.Sprintf("input line 2:%d: unexpected data after the JSON value", len(acts[1])+1)},
		{"array: a comma after it", transcript(acts) + ",\n", "input line 5:1: unexpected data after the JSON array"},
		{"array: a comma before it", "," + transcript(acts), "input line 1:1: unexpected ',' before the first JSON value"},
		{"a byte order mark in the middle", acts[0] + "\n\ufeff" + acts[1] + "\n", "input line 2: invalid JSON: a byte order mark (U+FEFF), which may only start the input"},
		{"two byte order marks", "\ufeff\ufeff" + jsonLines(acts), "input line 1: invalid JSON: a byte order mark (U+FEFF), which may only start the input"},
		// The ids would both read as "x\ufffd", one activity.
		{"ids that are not UTF-8", `{"type":"message","id":"x` + "\xff" + `","text":"one"}` + "\n" + `{"type":"message","id":"x` + "\xfe" + `","text":"two"}` + "\n",
			"input line 1:26: invalid UTF-8"},
		{"a text that is not UTF-8", acts[0] + "\n" + `{"type":"message","id":"b","text":"` + "caf\xe9" + `"}` + "\n", "input line 2:39: invalid UTF-8"},
		{"vector: a comma after it", `{"name":"v","events":[{"op":"incoming","activity":` + acts[1] + `}]},`, fmt.Sprintf("input line 1:%d: unexpected data after the conformance vector", len(acts[1])+54)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWith(t, tc.input, "--json")
			if tc.wantErr != "" {
				if res.code != exitUsage || res.stderr != "sortcheck: stdin: "+tc.wantErr+"\n" {
					t.Errorf("exit %d, stderr %q; want exit 2 and %q", res.code, res.stderr, tc.wantErr)
				}
				return
			}
			if res.code == exitUsage {
				t.Fatalf("exit 2: %s", res.stderr)
			}
			r := decodeReport(t, res.stdout)
			if len(r.Screen) != 2 || r.Screen[0].Text != text || r.Screen[1].Name != "b" || len(r.Findings) != 0 {
				t.Errorf("screen %+v, findings %+v", r.Screen, r.Findings)
			}
		})
	}
}

// TestNonStringValuesShown: an id or timestamp that is not a string is shown as JavaScript prints
// it, in the table, in --json and in the picture.
func TestNonStringValuesShown(t *testing.T) {
	for _, tc := range []struct {
		json, want string
	}{
		{"1", "1"}, {"-1", "-1"}, {"1735689603000", "1735689603000"}, {"1.5", "1.5"}, {"1.0", "1"}, {"-0", "0"},
		{"0.1", "0.1"}, {"0.000001", "0.000001"}, {"1e-7", "1e-7"}, {"2.5E-8", "2.5e-8"}, {"123e18", "123000000000000000000"},
		{"1e21", "1e+21"}, {"1.25e22", "1.25e+22"}, {"1e400", "Infinity"}, {"-1e400", "-Infinity"},
		{"9007199254740993", "9007199254740992"}, {"true", "true"}, {"null", ""}, {`"x"`, "x"}, {`{ "a" : 1 }`, `{"a":1}`},
	} {
		if got := shownValue([]byte(tc.json)); got != tc.want {
			t.Errorf("shownValue(%s) = %q, want %q", tc.json, got, tc.want)
		}
	}
	log := jsonLines([]string{
		`{"type":"message","id":1,"timestamp":"2025-01-01T00:00:00.000Z","from":{"id":"bot","role":"bot"},"text":"numeric id"}`,
		`{"type":"message","id":"2","timestamp":1735689603000,"from":{"id":"bot","role":"bot"},"text":"numeric timestamp"}`,
	})
	path := filepath.Join(t.TempDir(), "out.html")
	r := decodeReport(t, runWith(t, log, "--json", "--html", path).stdout)
	if len(r.Screen) != 2 || r.Screen[0].Name != "1" || r.Screen[1].Timestamp != "1735689603000" {
		t.Errorf("screen %+v", r.Screen)
	}
	if text := runWith(t, log).stdout; !regexp.MustCompile(`(?m)^  1  1 +bot +numeric id `).MatchString(text) || !strings.Contains(text, " 1735689603000 ") {
		t.Errorf("table:\n%s", text)
	}
	if page, _ := os.ReadFile(path); !strings.Contains(string(page), ">1. 1 numeric id<") {
		t.Errorf("picture lacks the numeric id:\n%s", page)
	}
}

// TestTableByTerminalCells: the table pads and cuts by terminal cells, never inside a sequence
// joined into one glyph, and writes no control character raw; the picture keeps long ids apart.
func TestTableByTerminalCells(t *testing.T) {
	const family = "👨\u200d👩\u200d👧\u200d👦"
	texts := []string{
		"日本語のテキストはとても長いです。これは表の整列を確認するための文章です。",
		strings.Repeat(family, 20),
		"x" + strings.Repeat(family, 20),
		"flags 🇩🇪🇫🇷🇮🇹 and e\u0301 combining, skin 👍🏽 " + strings.Repeat("🇩🇪", 30),
		"\u202eab\u202c \u0090\x7f\x1b[31m",
		"plain",
	}
	ids := []string{"cjk", "family", "xfamily", "mixed", "bidi\u2066\u200fid\u200e\u2069", "p"}
	var acts []string
	for i, text := range texts {
		id, _ := json.Marshal(ids[i])
		tx, _ := json.Marshal(text)
		acts = append(acts, fmt.Sprintf(`{"type":"message","id":%s,"timestamp":"2025-01-01T00:00:0%d.000Z","from":{"id":"bot","role":"bot"},"text":%s}`, id, i, tx))
	}
	res := runWith(t, jsonLines(acts))
	if strings.ContainsFunc(res.stdout, func(r rune) bool { return r != '\n' && unsafeRune(r) }) {
		t.Errorf("control characters written raw:\n%q", res.stdout)
	}
	for _, want := range []string{`\u202eab\u202c \u0090\u007f\u001b[31m`, `bidi\u2066\u200fid\u200e\u2069`} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, res.stdout)
		}
	}
	lines := strings.Split(res.stdout, "\n")
	for i, line := range lines[2 : 2+len(texts)] {
		// Every row's timestamp starts at the same cell, and the text column holds whole glyphs.
		at := strings.Index(line, "2025-01-01T")
		if at < 0 {
			t.Fatalf("row %d: %q", i, line)
		}
		if w, want := runewidth.StringWidth(line[:at]), runewidth.StringWidth(lines[1][:strings.Index(lines[1], "timestamp")]); w != want {
			t.Errorf("row %d: timestamp at cell %d, header at %d:\n%s", i, w, want, res.stdout)
		}
		indicators := 0
		for _, r := range line {
			if regional(r) {
				indicators++
			}
		}
		if strings.Count(line, "👨") != strings.Count(line, "👦") || indicators%2 != 0 {
			t.Errorf("row %d cut inside a glyph: %q", i, line)
		}
	}
	// --json's text is cut by code points, at the same kind of boundary.
	for _, s := range decodeReport(t, runWith(t, jsonLines(acts), "--json").stdout).Screen {
		if n := utf8.RuneCountInString(s.Text); n > excerptRunes || strings.Count(s.Text, "👨") != strings.Count(s.Text, "👦") || strings.HasSuffix(s.Text, "\U0001F1E9…") {
			t.Errorf("%s: text %q (%d code points)", s.Name, s.Text, n)
		}
	}

	prefix := "urn:uuid:" + strings.Repeat("x", 80)
	path := filepath.Join(t.TempDir(), "out.html")
	runWith(t, jsonLines([]string{
		`{"type":"message","id":"` + prefix + `0","timestamp":"2025-01-01T00:00:01.000Z","from":{"id":"bot","role":"bot"},"text":"a"}`,
		`{"type":"message","id":"` + prefix + `1","timestamp":"2025-01-01T00:00:00.000Z","from":{"id":"bot","role":"bot"},"text":"b"}`,
	}), "--html", path)
	page, _ := os.ReadFile(path)
	labels := map[string]bool{}
	for _, m := range regexp.MustCompile(`<text class="(?:|moved|alone)" x="\d+" y="\d+">(?:<title>[^<]*</title>)?([^<]*)</text>`).FindAllStringSubmatch(string(page), -1) {
		_, label, _ := strings.Cut(m[1], " ")
		labels[label] = true
	}
	if len(labels) != 2 || !strings.Contains(string(page), "<title>1. "+prefix+"0 a</title>") {
		t.Errorf("labels %q, want two, and the full id in a title:\n%s", slices.Sorted(maps.Keys(labels)), page)
	}
}

func TestCutRunes(t *testing.T) {
	const family = "👨\u200d👩\u200d👧\u200d👦"
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abcde…"},
		{"ab" + family, 6, "ab…"},
		{family + family, 8, family + "…"},
		{"abcde\u0301f", 6, "abcd…"},
		{"🇩🇪🇫🇷🇮🇹", 4, "🇩🇪…"},
		{"a🇩🇪🇫🇷🇮🇹", 5, "a🇩🇪…"},
		{"abc👍🏽x", 5, "abc…"},
	} {
		if got := cutRunes(tc.s, tc.n); got != tc.want {
			t.Errorf("cutRunes(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// TestVectorCheckpoints: a vector's expect checkpoints are checked as the conformance tests check
// them; one that does not hold names its place and first difference, and the exit status is 1.
func TestVectorCheckpoints(t *testing.T) {
	const a = `{"type":"message","id":"a","timestamp":"2024-05-01T10:00:01.000Z","from":{"id":"b","role":"bot"},"text":"a"}`
	const b = `{"type":"message","id":"b","timestamp":"2024-05-01T10:00:00.000Z","from":{"id":"b","role":"bot"},"text":"b"}`
	vec := func(expects ...string) string {
		return `{"name":"t","profile":"gen-c","userID":"u","events":[` + "\n" +
			`{"op":"incoming","activity":` + a + "},\n" + expects[0] + ",\n" +
			`{"op":"incoming","activity":` + b + "},\n" + strings.Join(expects[1:], ",\n") + "\n]}\n"
	}
	for _, tc := range []struct {
		name    string
		input   string
		code    int
		problem string // of the failing checkpoint, "" when all hold
	}{
		{"all hold", vec(`{"op":"expect","order":["a"]}`, `{"op":"expect","order":["b","a"],"screen":["b","a"]}`), exitClean, ""},
		{"order differs", vec(`{"op":"expect","order":["a"]}`, `{"op":"expect","order":["a","b"]}`), exitFindings,
			"order: place 1 is b, the vector expects a (model: b a; vector: a b)"},
		{"screen differs", vec(`{"op":"expect","order":["a"]}`, `{"op":"expect","order":["b","a"],"screen":["b"]}`), exitFindings,
			"screen: place 2 is a, the vector expects (end)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := runWith(t, tc.input)
			if text.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", text.code, tc.code, text.stdout, text.stderr)
			}
			r := decodeReport(t, runWith(t, tc.input, "--json").stdout)
			if len(r.Checkpoints) != 2 || !r.Checkpoints[0].Holds || r.Checkpoints[1].Line != 5 {
				t.Fatalf("checkpoints %+v", r.Checkpoints)
			}
			if got := r.Checkpoints[1].Problem; !strings.HasPrefix(got, tc.problem) || r.Checkpoints[1].Holds != (tc.problem == "") {
				t.Fatalf("second checkpoint %+v, want the problem %q", r.Checkpoints[1], tc.problem)
			}
			if tc.problem != "" && !strings.Contains(text.stdout, "checkpoint 2, line 5: "+tc.problem) {
				t.Fatalf("the text does not name the failing checkpoint:\n%s", text.stdout)
			}
		})
	}
}

// TestCheckpointPlaces: a checkpoint is named by its line, with the column only when an event
// starts on that line too, as findings are.
func TestCheckpointPlaces(t *testing.T) {
	const a = `{"op":"incoming","activity":{"type":"message","id":"a","timestamp":"2024-05-01T10:00:01.000Z","from":{"id":"b","role":"bot"},"text":"a"}}`
	const wrong = `{"op":"expect","order":["z"]}`
	for _, tc := range []struct {
		name, input, place string
	}{
		{"own line, indented", "{\"name\":\"t\",\"profile\":\"gen-c\",\"events\":[\n    " + a + ",\n    " + wrong + "\n]}\n", "checkpoint 1, line 3: "},
		{"one line", `{"name":"t","profile":"gen-c","events":[` + a + "," + wrong + "]}\n", "checkpoint 1, line 1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWith(t, tc.input)
			if res.code != exitFindings || !strings.Contains(res.stdout, tc.place) {
				t.Fatalf("exit %d, want %q in:\n%s%s", res.code, tc.place, res.stdout, res.stderr)
			}
		})
	}
}

// TestRowsWithoutStringIDs: bubbles whose activities have no id, or one that is not a string,
// each show their own activity, in the table, in --json and in the picture, whatever the profile.
// TestRowsAfterDelete: in gen-c a deleted revision stays on screen, so the UI list and the order
// differ; each row still describes the revision its bubble shows, named or not.
func TestRowsAfterDelete(t *testing.T) {
	in := func(id, text string, second int) string {
		if id != "" {
			id = `"id":"` + id + `",`
		}
		return fmt.Sprintf(`{"op":"incoming","activity":{"type":"message",%s"text":%q,"timestamp":"2025-01-01T00:00:0%d.000Z","from":{"id":"b","role":"bot"}}}`, id, text, second)
	}
	vector := `{"name":"v","profile":"gen-c","events":[` + strings.Join([]string{
		in("", "first", 1), in("x", "deleted", 2), in("", "second", 3), in("y", "last", 4), `{"op":"delete","activityID":"x"}`,
	}, ",") + `]}`
	r := decodeReport(t, runWith(t, vector, "--json").stdout)
	var got []string
	for _, s := range r.Screen {
		got = append(got, s.Name+" "+s.Text+" "+s.Role)
	}
	if want := []string{" first bot", "x deleted bot", " second bot", "y last bot"}; !slices.Equal(got, want) {
		t.Errorf("--json screen %q, want %q", got, want)
	}
}

func TestRowsWithoutStringIDs(t *testing.T) {
	msg := func(id, text string, second int) string {
		if id != "" {
			id = `"id":` + id + `,`
		}
		return fmt.Sprintf(`{"type":"message",%s"text":%q,"timestamp":"2025-01-01T00:00:0%d.000Z"}`, id, text, second)
	}
	for _, tc := range []struct {
		name string
		acts []string
		// want has each row's id, text and timestamp's second.
		want []string
	}{
		{"numeric ids", []string{msg("1", "first", 1), msg("2", "second", 2)}, []string{"1 first 1", "2 second 2"}},
		{"no ids", []string{msg("", "first", 1), msg("", "second", 2), msg(`"z"`, "third", 3)}, []string{" first 1", " second 2", "z third 3"}},
		{"minus zero beside a number and a string", []string{msg(`"a"`, "a", 1), msg("-0", "b", 2), msg("7", "c", 3), msg(`"7"`, "d", 4)},
			[]string{"a a 1", "0 b 2", "7 c 3", "7 d 4"}},
	} {
		for _, profile := range []string{"gen-a", "gen-b", "gen-c"} {
			t.Run(tc.name+" "+profile, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "out.html")
				r := decodeReport(t, runWith(t, jsonLines(tc.acts), "--json", "--profile", profile, "--html", path).stdout)
				var got []string
				for _, s := range r.Screen {
					got = append(got, fmt.Sprintf("%s %s %s", s.Name, s.Text, strings.TrimSuffix(strings.TrimPrefix(s.Timestamp, "2025-01-01T00:00:0"), ".000Z")))
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("--json screen %q, want %q", got, tc.want)
				}
				text := runWith(t, jsonLines(tc.acts), "--profile", profile).stdout
				page, _ := os.ReadFile(path)
				for i, w := range tc.want {
					f := strings.Fields(w)
					id, txt := "", f[len(f)-2]
					if len(f) == 3 {
						id = f[0]
					}
					row := regexp.MustCompile(fmt.Sprintf(`(?m)^  %d  %s +channel +%s +- +2025-01-01T00:00:0%s\.000Z`, i+1, regexp.QuoteMeta(id), txt, f[len(f)-1]))
					if !row.MatchString(text) {
						t.Errorf("table lacks row %d %q:\n%s", i+1, w, text)
					}
					if label := fmt.Sprintf(">%d. %s %s<", i+1, id, txt); !strings.Contains(string(page), label) {
						t.Errorf("picture lacks %q", label)
					}
				}
			})
		}
	}
}

// TestHTMLNeverOverwritesInputOrReport: an --html path that is the input file (by any name),
// standard input or standard output is a usage error, and the file keeps its content.
func TestHTMLNeverOverwritesInputOrReport(t *testing.T) {
	log := jsonLines(cleanActivities)
	for _, tc := range []struct {
		name string
		// args and the files standing for stdin and stdout ("" for none) name the log's path as
		// "LOG".
		args          []string
		stdin, stdout string
		want          string
	}{
		{"the input file", []string{"--html", "LOG", "LOG"}, "", "", "--html LOG is the input: the picture would replace the log"},
		{"the input file by another name", []string{"--html", "LOG", "DIR/./log.jsonl"}, "", "", "is the input"},
		{"a link to the input file", []string{"--html", "LINK", "LOG"}, "", "", "is the input"},
		{"standard input", []string{"--html", "LOG"}, "LOG", "", "is the input"},
		{"standard output", []string{"--html", "LOG", "--", "-"}, "", "LOG", "--html LOG is standard output, where the report goes"},
		{"a dash", []string{"--html", "-", "LOG"}, "", "", "--html - would be standard output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "log.jsonl")
			if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(path, filepath.Join(dir, "link.jsonl")); err != nil {
				t.Fatal(err)
			}
			expand := strings.NewReplacer("LOG", path, "LINK", filepath.Join(dir, "link.jsonl"), "DIR", dir)
			var args []string
			for _, a := range tc.args {
				args = append(args, expand.Replace(a))
			}
			var stdin io.Reader = strings.NewReader(log)
			if tc.stdin != "" {
				f, err := os.Open(expand.Replace(tc.stdin))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				stdin = f
			}
			var stdout io.Writer = &bytes.Buffer{}
			if tc.stdout != "" {
				f, err := os.OpenFile(expand.Replace(tc.stdout), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				stdout = f
			}
			var stderr bytes.Buffer
			code := run(args, stdin, stdout, &stderr)
			if b, _ := os.ReadFile(path); code != exitUsage || !strings.Contains(stderr.String(), expand.Replace(tc.want)) || string(b) != log {
				t.Errorf("exit %d, stderr %q, log kept %v; want exit 2 and %q", code, stderr.String(), string(b) == log, expand.Replace(tc.want))
			}
		})
	}
}

// TestLiveRefusals: a --base with a query or fragment is a usage error; a 200 that is not JSON,
// a body over the limit and a 404 under a base with a path are each told for what they are.
func TestLiveRefusals(t *testing.T) {
	old := maxResponseBytes
	maxResponseBytes = 1 << 20
	defer func() { maxResponseBytes = old }()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/html/v3/directline/conversations/c/log":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, "<html><body>Sign in</body></html>")
		case "/plain/v3/directline/conversations/c/log":
			// JSON under a Content-Type that does not say so is still read.
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, `{"type":"message","id":"a","timestamp":"2025-01-01T00:00:00.000Z","from":{"id":"bot","role":"bot"},"text":"hi","channelData":{"webchat:sequence-id":1}}`+"\n")
		case "/endless/v3/directline/conversations/c/log":
			w.Header().Set("Content-Type", "application/x-ndjson")
			line := []byte(strings.Repeat(`{"seq":1}`, 1000) + "\n")
			for {
				if _, err := w.Write(line); err != nil {
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, base, want string
	}{
		{"a query", srv.URL + "?x=1", `--base must be the service's root URL, without a query or fragment, not "` + srv.URL + `?x=1"`},
		{"a fragment", srv.URL + "/#frag", "without a query or fragment"},
		{"an empty query", srv.URL + "?", "without a query or fragment"},
		{"a page that is not JSON", srv.URL + "/html", "GET " + srv.URL + "/html/v3/directline/conversations/c/log: response is not JSON (Content-Type text/html; charset=utf-8)"},
		{"an endless body", srv.URL + "/endless", "/endless/v3/directline/conversations/c/log: response body over sortcheck's limit of 1048576 bytes (1 MiB)"},
		{"a path the service is not behind", srv.URL + "/prefix/", `is "c" a conversation of the service at --base, and is /prefix the path of that service's root?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWith(t, "", "--live", "--base", tc.base, "--conversation", "c", "--secret", "s")
			if res.code != exitUsage || !strings.Contains(res.stderr, tc.want) || strings.Count(res.stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line with %q", res.code, res.stderr, tc.want)
			}
		})
	}
	if res := runWith(t, "", "--live", "--base", srv.URL+"/plain", "--conversation", "c", "--secret", "s"); res.code != exitClean || !strings.Contains(res.stdout, "hi") {
		t.Errorf("JSON as text/plain: exit %d, stderr %q", res.code, res.stderr)
	}
}

// TestRepeatedVectorMembers: of a member a vector repeats, the last counts, as in JSON.parse.
func TestRepeatedVectorMembers(t *testing.T) {
	incoming := func(id string) string {
		return `{"op":"incoming","activity":{"type":"message","id":"` + id + `","timestamp":"2025-01-01T00:00:01.000Z","from":{"id":"b","role":"bot"},"text":"x"}}`
	}
	for _, tc := range []struct {
		name, input, profile, screen string
		expects                      int
	}{
		{"events", `{"name":"v","events":[` + incoming("a1") + `,{"op":"expect","order":["a1"]}],` + "\n" + `"events":[` + incoming("a2") + `]}`, "gen-c", "a2", 0},
		{"profile", `{"name":"v","profile":"gen-z","profile":"gen-a","events":[` + incoming("a1") + `]}`, "gen-a", "a1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWith(t, tc.input, "--json")
			if res.code != exitClean {
				t.Fatalf("exit %d: %s", res.code, res.stderr)
			}
			r := decodeReport(t, res.stdout)
			var names []string
			for _, s := range r.Screen {
				names = append(names, s.Name)
			}
			if r.Summary.Profile != tc.profile || strings.Join(names, " ") != tc.screen || r.Input.Expects != tc.expects || len(r.Checkpoints) != tc.expects || r.Summary.Events != 1 {
				t.Errorf("profile %s, screen %v, %d events, expects %d, checkpoints %+v", r.Summary.Profile, names, r.Summary.Events, r.Input.Expects, r.Checkpoints)
			}
		})
	}
}

// TestJSONErrors: with --json, a run that exits 2 also prints the Direct Line error shape on
// stdout, with the message it prints on stderr.
func TestJSONErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	for _, tc := range []struct {
		name, stdin string
		args        []string
		code, want  string
	}{
		{"unknown flag", "", []string{"--json", "--nope"}, "BadArgument", "flag provided but not defined: -nope"},
		{"bad flag value", "", []string{"--json", "--fail-on", "never"}, "BadArgument", "--fail-on must be must, misplace or should"},
		{"input error", "{\"type\":\"message\"},\n", []string{"--json"}, "BadArgument", "stdin: input line 1:19: unexpected data after the JSON value"},
		{"missing file", "", []string{"--json", filepath.Join(t.TempDir(), "none.jsonl")}, "BadArgument", "no such file"},
		{"live fetch", "", []string{"--json", "--live", "--base", srv.URL, "--conversation", "c", "--token", "t"}, "ServiceError", "HTTP 404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWith(t, tc.stdin, tc.args...)
			var doc struct {
				Error struct{ Code, Message string }
			}
			dec := json.NewDecoder(strings.NewReader(res.stdout))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&doc); err != nil || res.code != exitUsage {
				t.Fatalf("exit %d, stdout %q: %v", res.code, res.stdout, err)
			}
			if doc.Error.Code != tc.code || !strings.Contains(doc.Error.Message, tc.want) || !strings.Contains(res.stderr, doc.Error.Message) {
				t.Errorf("error %+v, stderr %q; want code %s and %q in both", doc.Error, res.stderr, tc.code, tc.want)
			}
		})
	}
}

// TestReportScreenIsLastCheckpoint: the screen sortcheck prints is the one a vector's last
// checkpoint expects when it follows the last event; the keys walk that produced it runs after
// the events that change the UI list, as the checkpoints', and not once more for the report.
func TestReportScreenIsLastCheckpoint(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "sortkeys", "testdata", "vectors", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	checked := 0
	for _, f := range files {
		v, err := sortkeys.LoadVector(f)
		if err != nil {
			t.Fatal(err)
		}
		last := v.Events[len(v.Events)-1]
		if last.Op != sortkeys.OpExpect || last.Screen == nil {
			continue
		}
		checked++
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range decodeReport(t, runWith(t, string(data), "--json").stdout).Screen {
			got = append(got, b.Name)
		}
		if !slices.Equal(got, last.Screen) {
			t.Errorf("%s: screen %q, the last checkpoint expects %q", filepath.Base(f), got, last.Screen)
		}
	}
	if checked < 3 {
		t.Fatalf("only %d vectors end with a screen checkpoint", checked)
	}
}

// TestHTMLExplainsWhatItDraws: the picture has a legend; an activity without a bubble says its
// type and why; a bubble without a place in the service's order is drawn apart; and over the
// row limit, the activities on the screen are drawn before hidden ones, with their lines.
func TestHTMLExplainsWhatItDraws(t *testing.T) {
	msg := func(id string, sec int) string {
		return fmt.Sprintf(`{"type":"message","id":%q,"timestamp":"2024-05-01T10:%02d:%02d.000Z","from":{"id":"bot","role":"bot"},"text":"text of %s"}`, id, sec/60, sec%60, id)
	}
	small := []string{msg("m1", 1), `{"type":"conversationUpdate","id":"cu","timestamp":"2024-05-01T10:00:02.000Z","from":{"id":"bot","role":"bot"}}`,
		`{"type":"message","timestamp":"2024-05-01T10:00:03.000Z","from":{"id":"bot","role":"bot"},"text":"no id"}`}
	path := filepath.Join(t.TempDir(), "out.html")
	runWith(t, jsonLines(small), "--html", path)
	page, _ := os.ReadFile(path)
	for _, want := range []string{`class="legend"`, `2. cu [conversationUpdate, not shown]`, `class="unplaced"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("small page lacks %q", want)
		}
	}
	// htmlMaxRows hidden typing activities, then three messages shown in reverse.
	big := []string{msg("m0", 0)}
	for i := range htmlMaxRows {
		big = append(big, fmt.Sprintf(`{"type":"typing","id":"t%d","timestamp":"2024-05-01T10:00:01.000Z","from":{"id":"bot","role":"bot"}}`, i))
	}
	big = append(big, msg("m1", 3000), msg("m2", 2000), msg("m3", 1000))
	runWith(t, jsonLines(big), "--html", path, "--screen=false")
	page, _ = os.ReadFile(path)
	if n := strings.Count(string(page), "<line "); n != 4 {
		t.Errorf("big page draws %d lines, want one for each of the 4 bubbles", n)
	}
	if want := fmt.Sprintf("Only %d of the %d activities of the service's order (those on the screen first) and 4 of the 4 bubbles", htmlMaxRows, htmlMaxRows+4); !strings.Contains(string(page), want) {
		t.Errorf("big page lacks the note %q", want)
	}
}

// TestTablePadsUpToPadCells: a column is padded to its widest cell up to padCells; a longer cell
// is written whole and moves only its own row, so one long id adds its length once, not once
// per row.
func TestTablePadsUpToPadCells(t *testing.T) {
	long := strings.Repeat("i", 10*padCells)
	for _, c := range []struct {
		name   string
		ids    []string
		want   []string
		column int // the cell where the next column starts on rows of short ids
	}{
		{"short", []string{"a", "bbb"}, []string{"a    x", "bbb  x"}, 5},
		{"at the cap", []string{"a", strings.Repeat("b", padCells)}, []string{"a" + strings.Repeat(" ", padCells+1) + "x", strings.Repeat("b", padCells) + "  x"}, padCells + 2},
		{"past the cap", []string{"a", long, "cc"}, []string{"a" + strings.Repeat(" ", padCells+1) + "x", long + "  x", "cc" + strings.Repeat(" ", padCells) + "x"}, padCells + 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tb table
			for _, id := range c.ids {
				tb = append(tb, []string{id, "x"})
			}
			var b strings.Builder
			if err := tb.write(&b); err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if !slices.Equal(got, c.want) {
				t.Fatalf("rows:\n%q\nwant:\n%q", got, c.want)
			}
			for _, row := range got {
				if len(row) <= padCells && strings.Index(row, "x") != c.column {
					t.Errorf("row %q: next column at %d, want %d", row, strings.Index(row, "x"), c.column)
				}
			}
		})
	}
}
