package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/client/clienttest"
)

func noEnv(string) string { return "" }

// bench runs dlbench with --json against srv and decodes the report.
func runBench(t *testing.T, srv *clienttest.Server, extra ...string) (Report, int) {
	t.Helper()
	args := append([]string{"--base", srv.URL, "--secret", clienttest.Secret, "--json", "--gap-wait", "20ms", "--timeout", "5s"}, extra...)
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, noEnv, &out, &errOut)
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("exit %d, output %q (%v), stderr %q", code, out.String(), err, errOut.String())
	}
	return r, code
}

func TestCleanRunVerifies(t *testing.T) {
	tests := []struct {
		name      string
		opts      clienttest.Options
		args      []string
		bot       bool
		skipped   bool
		wantReply int64
	}{
		{"ws without bot (auto-detected)", clienttest.Options{}, []string{"--bot", "auto", "--probe-wait", "100ms"}, false, false, 0},
		{"ws with bot (auto-detected)", clienttest.Options{Bot: true}, []string{"--bot", "auto"}, true, false, 12},
		{"poll with bot and typing", clienttest.Options{Bot: true, Typing: true}, []string{"--bot", "yes", "--transport", "poll", "--poll-interval", "10ms"}, true, true, 12},
		{"ws with typing and warm-up", clienttest.Options{Bot: true, Typing: true}, []string{"--bot", "yes", "--warmup", "1", "--concurrency", "2"}, true, false, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.Start(t, tt.opts)
			r, code := runBench(t, srv, append([]string{"--conversations", "3", "--messages", "4"}, tt.args...)...)
			if code != exitOK || !r.Verification.OK || r.Errors.Total != 0 {
				t.Fatalf("exit %d, errors %v, verification %+v", code, r.Errors, r.Verification)
			}
			if r.Config.Bot != tt.bot {
				t.Errorf("bot = %v, want %v", r.Config.Bot, tt.bot)
			}
			if r.Messages.Sent != 12 {
				t.Errorf("sent %d messages, want 12", r.Messages.Sent)
			}
			measured := int64(12)
			if tt.wantReply == 9 {
				measured = 9
			}
			if r.Messages.Measured != measured || r.Latency["echo"].Count != measured || r.Latency["post"].Count != measured {
				t.Errorf("measured %d, echo %d, post %d; want %d", r.Messages.Measured, r.Latency["echo"].Count, r.Latency["post"].Count, measured)
			}
			if r.Latency["reply"].Count != tt.wantReply {
				t.Errorf("reply latencies %d, want %d", r.Latency["reply"].Count, tt.wantReply)
			}
			if tt.skipped != (r.Verification.SkippedPositions > 0) {
				t.Errorf("skipped positions %d", r.Verification.SkippedPositions)
			}
		})
	}
}

// stripSequenceIDs removes webchat:sequence-id from every activity of every frame.
func stripSequenceIDs(_ uint64, frame json.RawMessage) []json.RawMessage {
	var set struct {
		Activities []*activity.Activity `json:"activities"`
		Watermark  string               `json:"watermark"`
	}
	if json.Unmarshal(frame, &set) != nil {
		return []json.RawMessage{frame}
	}
	for _, a := range set.Activities {
		delete(a.ChannelData, activity.KeySequenceID)
	}
	b, _ := json.Marshal(set)
	return []json.RawMessage{b}
}

func TestFaultyServerIsCaught(t *testing.T) {
	second := clienttest.Matching(func(a *activity.Activity) bool {
		return a.From != nil && a.From.Role == activity.RoleUser && strings.HasSuffix(a.Text, " #1")
	})
	tests := []struct {
		name     string
		opts     clienttest.Options
		args     []string
		category string
		errors   bool
	}{
		{"dropped echo is filled from GET", clienttest.Options{Bot: true, Fault: clienttest.Drop(second)}, nil, catGap, false},
		{"duplicated activity", clienttest.Options{Bot: true, Fault: clienttest.Duplicate(second)}, nil, catDuplicate, false},
		{"reordered frames", clienttest.Options{Bot: true, Fault: clienttest.Swap(second)}, nil, catOrder, false},
		{"missing sort keys", clienttest.Options{Fault: stripSequenceIDs}, []string{"--bot", "no"}, catSortKey, false},
		// Without a bot nothing follows the last echo, so its loss shows as a missing echo.
		{"dropped last echo", clienttest.Options{Fault: clienttest.Drop(clienttest.Matching(func(a *activity.Activity) bool {
			return strings.HasSuffix(a.Text, " #1")
		}))}, []string{"--bot", "no", "--timeout", "300ms"}, catMissing, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.Start(t, tt.opts)
			args := append([]string{"--conversations", "2", "--messages", "2", "--bot", "yes"}, tt.args...)
			r, code := runBench(t, srv, args...)
			if code != exitProblem {
				t.Errorf("exit %d, want %d", code, exitProblem)
			}
			v := r.Verification
			if v.OK || v.ByCategory[tt.category] == 0 {
				t.Fatalf("verification %+v, want a %s problem", v, tt.category)
			}
			for cat, n := range v.ByCategory {
				if cat != tt.category && !(tt.category == catMissing && cat == catMissing) {
					t.Errorf("unexpected %d %s problems: %v", n, cat, v.Examples)
				}
			}
			if tt.errors != (r.Errors.Total > 0) {
				t.Errorf("errors %v", r.Errors)
			}
		})
	}
}

func TestHumanReport(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{Bot: true})
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--base", srv.URL, "--secret", clienttest.Secret, "--conversations", "2", "--messages", "2", "--bot", "yes"}, noEnv, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"latency (ms)", "post", "echo", "reply", "verification  OK", "bot=true\n",
		"measured, ", "/s (from the first measured message to the last)", "/s (over the whole duration)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	// Polling: the interval sets the echo latency, so the report names it.
	r, code := runBench(t, srv, "--conversations", "1", "--messages", "1", "--bot", "yes", "--transport", "poll", "--poll-interval", "50ms")
	if code != exitOK || r.Config.PollMS != 50 {
		t.Errorf("polling run: exit %d, config %+v; want poll_ms 50", code, r.Config)
	}
}

// TestIntervalRun: with --interval each user's messages are spaced by at least the interval (the
// run cannot end sooner than messages-1 intervals), and the report says the interval.
func TestIntervalRun(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{Bot: true})
	r, code := runBench(t, srv, "--conversations", "2", "--messages", "3", "--bot", "yes", "--interval", "60ms")
	if code != exitOK || !r.Verification.OK || r.Messages.Sent != 6 {
		t.Fatalf("exit %d, %+v", code, r)
	}
	if r.Config.IntervalMS != 60 || r.DurationS < 0.12 {
		t.Errorf("interval_ms %d, duration %.3f s; want 60 and at least 0.12 s", r.Config.IntervalMS, r.DurationS)
	}
}

// TestNextDue: --interval keeps each user on its schedule while messages are late by less than
// an interval, and starts it anew after a longer delay instead of sending a burst.
func TestNextDue(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	const iv = 100 * time.Millisecond
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tt := range []struct {
		name     string
		due, now time.Time
		want     time.Time
	}{
		{"first message", time.Time{}, ms(0), ms(100)},
		{"on time", ms(100), ms(100), ms(200)},
		{"early wake-up", ms(100), ms(98), ms(200)},
		{"late by less than an interval", ms(100), ms(170), ms(200)},
		{"late by exactly an interval", ms(100), ms(200), ms(200)},
		{"late by more than an interval", ms(100), ms(350), ms(450)},
	} {
		if got := nextDue(tt.due, tt.now, iv); !got.Equal(tt.want) {
			t.Errorf("%s: nextDue = %v, want %v", tt.name, got.Sub(t0), tt.want.Sub(t0))
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := [][]string{
		{},
		{"--secret", "s"},
		{"--base", "http://x/v3/directline"},
		{"--base", "x:3000/v3/directline", "--secret", "s"},
		{"--base", "ftp://x/v3/directline", "--secret", "s"},
		{"--base", "http://x/v3/directline", "--secret", "s", "--transport", "carrier-pigeon"},
		{"--base", "http://x/v3/directline", "--secret", "s", "--bot", "maybe"},
		{"--base", "http://x/v3/directline", "--secret", "s", "--token-endpoint", "http://t"},
		{"--base", "http://x/v3/directline", "--secret", "s", "--messages", "0"},
		{"--base", "http://x/v3/directline", "--secret", "s", "extra"},
		{"--base", "http://x/v3/directline", "--secret", "s", "--think", "1s", "--interval", "1s"},
		{"--base", "http://x/v3/directline", "--secret", "s", "--interval", "-1s"},
		{"--base", "http://x/v3/directline", "--secret", "s", "--messages", "3", "--warmup", "3"},
	}
	for _, args := range tests {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, noEnv, &out, &errOut); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestCPUProfile: --cpuprofile leaves a profile of the run (gzip-compressed protobuf, what
// runtime/pprof writes); an unwritable path is a usage error.
func TestCPUProfile(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{})
	path := filepath.Join(t.TempDir(), "dlbench.pprof")
	r, code := runBench(t, srv, "--conversations", "2", "--messages", "2", "--bot", "no", "--cpuprofile", path)
	if code != exitOK || r.Messages.Sent != 4 {
		t.Fatalf("exit %d, sent %d", code, r.Messages.Sent)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Fatalf("the CPU profile is not gzip data: % x", data[:min(len(data), 8)])
	}
	var out, errOut bytes.Buffer
	args := []string{"--base", srv.URL, "--secret", clienttest.Secret, "--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir")}
	if code := run(context.Background(), args, noEnv, &out, &errOut); code != exitUsage {
		t.Fatalf("unwritable profile: exit %d, stderr %q", code, errOut.String())
	}
}

func TestTokenEndpoint(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{})
	calls := 0
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/tokens/generate", r.Body)
		req.Header.Set("Authorization", "Bearer "+clienttest.Secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		_, _ = w.Write(buf.Bytes())
	}))
	defer tokens.Close()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--base", srv.URL, "--token-endpoint", tokens.URL, "--conversations", "2", "--messages", "2", "--bot", "no", "--concurrency", "1", "--json"}, noEnv, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out.String(), errOut.String())
	}
	if calls != 2 {
		t.Errorf("token endpoint called %d times, want once per user (2)", calls)
	}
}

func TestIdleReportsBytesPerStream(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{})
	rss := []int64{10 << 20, 13 << 20}
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %g\n", float64(rss[0]))
		rss = rss[1:]
	}))
	defer metrics.Close()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--base", srv.URL, "--secret", clienttest.Secret, "--idle", "3", "--hold", "10ms", "--idle-post", "--metrics-url", metrics.URL, "--json"}, noEnv, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out.String(), errOut.String())
	}
	var r struct {
		Idle IdleReport `json:"idle"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Idle.Opened != 3 || r.Idle.BytesPerStream != 1<<20 || r.Idle.Delivery.Count != 3 {
		t.Errorf("idle report %+v", r.Idle)
	}
}

func TestParseServerMemory(t *testing.T) {
	n, err := parseVmRSS(strings.NewReader("Name:\tdirectline\nVmPeak:\t  9999 kB\nVmRSS:\t   2048 kB\n"))
	if err != nil || n != 2048<<10 {
		t.Errorf("VmRSS = %d, %v", n, err)
	}
	if _, err := parseVmRSS(strings.NewReader("Name:\tx\n")); err == nil {
		t.Error("a status without VmRSS parsed")
	}
	n, err = parseMetricsRSS(strings.NewReader("process_resident_memory_bytes_total 1\nprocess_resident_memory_bytes 1.2345e+07\n"))
	if err != nil || n != 12345000 {
		t.Errorf("metrics RSS = %d, %v", n, err)
	}
	if _, err := parseMetricsRSS(strings.NewReader("go_goroutines 3\n")); err == nil {
		t.Error("metrics without process_resident_memory_bytes parsed")
	}
}

func TestLatencyPercentiles(t *testing.T) {
	l := newLatency()
	for i := 1; i <= 1000; i++ {
		l.add(time.Duration(i) * time.Millisecond)
	}
	s := l.summary()
	if s.Count != 1000 || s.P50 != 500 || s.P95 != 950 || s.P99 != 990 || s.Max != 1000 || s.Mean != 500.5 {
		t.Errorf("summary %+v", s)
	}
	big := newLatency()
	for i := range reservoirSize + 500 {
		big.add(time.Duration(i%100) * time.Millisecond)
	}
	if len(big.samples) != reservoirSize || big.summary().Count != reservoirSize+500 {
		t.Errorf("reservoir holds %d samples for %d", len(big.samples), big.count)
	}
}

// FuzzServerMemory: the memory parsers never panic and never report a negative size from a
// status file.
func FuzzServerMemory(f *testing.F) {
	f.Add("VmRSS:\t 12 kB\n")
	f.Add("process_resident_memory_bytes 1e9\n")
	f.Add("VmRSS:\t-5 kB\n")
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := parseVmRSS(strings.NewReader(s)); err == nil && n < 0 {
			t.Fatalf("VmRSS %d from %q", n, s)
		}
		_, _ = parseMetricsRSS(strings.NewReader(s))
	})
}

// TestLatencyLog: --latency-log writes a header and one line per measured message (warm-up
// excluded), ordered by start, the first at 0, with a reply time when a bot answered; a path
// that cannot be created is a usage error, without a run.
func TestLatencyLog(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{Bot: true})
	path := filepath.Join(t.TempDir(), "latency.txt")
	r, code := runBench(t, srv, "--conversations", "3", "--messages", "4", "--warmup", "1", "--bot", "yes", "--latency-log", path)
	if code != exitOK || r.Messages.Measured != 9 {
		t.Fatalf("exit %d, measured %d", code, r.Messages.Measured)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 10 || lines[0] != "# start_ms post_ms echo_ms reply_ms" {
		t.Fatalf("got %d lines, header %q; want 10 and the header", len(lines), lines[0])
	}
	prev := -1.0
	for i, line := range lines[1:] {
		var start, post, echo, reply float64
		if n, err := fmt.Sscanf(line, "%f %f %f %f", &start, &post, &echo, &reply); n != 4 || err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if (i == 0 && start != 0) || start < prev || post <= 0 || echo <= 0 || reply <= 0 {
			t.Errorf("line %d %q: want starts from 0 in order and positive latencies", i+1, line)
		}
		prev = start
	}
	var out, errOut bytes.Buffer
	args := []string{"--base", srv.URL, "--secret", clienttest.Secret, "--latency-log", filepath.Join(t.TempDir(), "no", "such", "dir")}
	if code := run(context.Background(), args, noEnv, &out, &errOut); code != exitUsage || out.Len() != 0 {
		t.Fatalf("unwritable log: exit %d, report %q, stderr %q; want a usage error and no run", code, out.String(), errOut.String())
	}
}

// TestMisconfiguredRun: a run that cannot start a conversation fails, says that nothing was
// verified instead of reporting a clean verification, and hints at what to check.
func TestMisconfiguredRun(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{})
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/v3/directline"
	closed.Close()
	tests := []struct {
		name string
		base string
		args []string
		hint string
	}{
		{"wrong secret", srv.URL, []string{"--secret", "wrong"}, "refused the credential"},
		// --bot auto's probe fails too: whether there is a bot is not known.
		{"wrong secret, bot auto", srv.URL, []string{"--secret", "wrong", "--bot", "auto"}, "bot=unknown (the probe failed)"},
		{"base without the route prefix", strings.TrimSuffix(srv.URL, "/v3/directline"), []string{"--secret", clienttest.Secret}, "route prefix"},
		{"nothing listening", closedURL, []string{"--secret", clienttest.Secret}, "nothing accepts connections at " + closedURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--base", tt.base, "--conversations", "1", "--messages", "1", "--bot", "no"}, tt.args...)
			var out, errOut bytes.Buffer
			if code := run(context.Background(), args, noEnv, &out, &errOut); code != exitProblem {
				t.Fatalf("exit %d, want %d:\n%s", code, exitProblem, out.String())
			}
			for _, want := range []string{"verification  NOT DONE", "hint: ", tt.hint} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, out.String())
				}
			}
			out.Reset()
			if code := run(context.Background(), append(args, "--json"), noEnv, &out, &errOut); code != exitProblem {
				t.Fatalf("--json: exit %d", code)
			}
			var r Report
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if r.Verification.OK || r.Messages.Sent != 0 || !slices.Contains(r.Verification.Examples, nothingVerified) {
				t.Errorf("verification %+v with %d sent, want not OK and %q", r.Verification, r.Messages.Sent, nothingVerified)
			}
		})
	}
}

// TestIdleNothingOpened: idle mode that opens no stream does not hold (with an hour's --hold the
// test would time out), fails, and says that nothing was verified.
func TestIdleNothingOpened(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	base := closed.URL + "/v3/directline"
	closed.Close()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--base", base, "--secret", "s", "--idle", "2", "--hold", "1h", "--idle-post", "--json"}, noEnv, &out, &errOut)
	if code != exitProblem {
		t.Fatalf("exit %d, want %d: %s", code, exitProblem, out.String())
	}
	var r struct {
		Idle         IdleReport   `json:"idle"`
		Verification Verification `json:"verification"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Idle.Opened != 0 || r.Verification.OK {
		t.Errorf("opened %d, verification %+v: want 0 and not OK", r.Idle.Opened, r.Verification)
	}
}
