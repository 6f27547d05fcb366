// Command dlbench is a load generator that speaks Direct Line 3.0 to any service (this one, the
// hosted Azure service, another implementation) through package directline/client.
//
// Usage:
//
//	dlbench --base URL (--secret S | --token-endpoint URL) [flags]
//	dlbench --base URL --secret S --idle N [--hold D] [--idle-post] [--server-pid P | --metrics-url U]
//
// Each simulated user starts a conversation, opens the stream (or polls), posts messages one
// after another and waits for each echo and, when a bot is behind, for the reply whose replyToId
// names the message. The report gives throughput, latency percentiles (p50/p95/p99/max, in
// milliseconds) of the POST round trip, POST→echo and POST→bot reply, errors by request and
// status/code, and a verification section: every expected activity received exactly once, in
// sequence-id order per conversation, with no gaps, and with well-formed sort keys.
//
// Flags:
//
//	--base URL              route prefix of the service, as Web Chat's domain: e.g.
//	                        http://127.0.0.1:3000/v3/directline (offline-directline: .../directline)
//	--secret S              Direct Line secret (environment DLBENCH_SECRET)
//	--token-endpoint URL    token server: POST {"user":{"id"}} answers {"token"}; one token per user
//	--conversations N       simulated users, one conversation each (default 10)
//	--messages N            messages each user posts (default 10)
//	--concurrency N         users running at once (default: --conversations; idle: streams opening at once)
//	--transport ws|poll     WebSocket stream or GET polling (default ws)
//	--poll-interval D       polling interval (default 1s)
//	--think D               pause between a user's messages (default 0)
//	--interval D            start a user's messages D apart, a late one at once: a fixed offered
//	                        rate of conversations ÷ D while replies are quicker than D (default 0)
//	--warmup N              first N messages of each user are verified but not measured (default 0)
//	--bot auto|yes|no       expect bot replies; auto probes with one conversation first (default auto)
//	--timeout D             wait for each echo and reply (default 10s)
//	--probe-wait D          with --bot auto: wait for the probe's reply after its echo (default 3s)
//	--gap-wait D            how long a hole in the sequence may stay before GET fills it (default 500ms)
//	--json                  print the report as one JSON document
//	--cpuprofile FILE       write dlbench's own CPU profile (runtime/pprof) to FILE, to see what the
//	                        load generator costs on a machine it shares with the service
//	--latency-log FILE      write one line per measured message to FILE, in order of its POST's
//	                        start: "start_ms post_ms echo_ms reply_ms" (start from the first
//	                        measured POST; reply 0 without one), to see when a tail happens
//
// Idle mode (--idle N): open N conversations with streams, hold them for --hold, then with
// --idle-post send one message in each and measure POST→echo. With --server-pid (Linux: VmRSS of
// /proc/<pid>/status) or --metrics-url (process_resident_memory_bytes of a Prometheus endpoint)
// it reads the server's resident memory before opening and after holding, and prints bytes per
// stream.
//
// JSON report (load):
//
//	{"config":{"base","transport","conversations","messages","concurrency","warmup","think_ms","interval_ms",
//	  "poll_ms" (polling only),"bot","bot_unknown" (--bot auto whose probe failed)},
//	 "duration_s":1.2,
//	 "messages":{"sent":100,"measured":100,"per_second":812.5},
//	 "activities_received":200,"activities_per_second":166.7,
//	 "latency_ms":{"post":S,"echo":S,"reply":S},
//	 "errors":{"total":0,"by_kind":{"POST activities 502 BotError":1,"echo timeout":1}},
//	 "verification":{"ok":true,"problems":0,"by_category":{"missing","duplicate","out_of_order",
//	   "gap","lost","sort_key"},"examples":["gap: <conv>: ..."],"skipped_positions":0,"reconnects":0}}
//
// where S is {"count","mean","p50","p95","p99","max"} in milliseconds (reply is all zero without a
// bot). verification.ok is false when a problem was found, and also when no message was sent (a
// run that could not start checked nothing; its examples say so). Percentiles are nearest-rank
// over at most 100000 samples per latency (reservoir sampling); count, mean and max are exact. Messages inside --warmup are not in latency_ms nor in
// messages.measured. messages.per_second is measured messages over the time from the first
// measured POST to the last measured message's end; activities_per_second is activities received
// over duration_s, the whole run. The bot-detection probe conversation is not measured but is verified.
//
// JSON report (idle): {"idle":{"streams","opened","hold_s","rss_before_bytes","rss_after_bytes",
// "bytes_per_stream","delivery_ms":S,"errors":{"total","by_kind"}},"verification":{...as above}};
// the rss fields are 0 without --server-pid or --metrics-url, delivery_ms is all zero without
// --idle-post. bytes_per_stream is (after - before) / opened, so it includes each conversation's
// own state on the server, not only its socket. --concurrency bounds how many streams open at
// once (default 10, the --conversations default).
//
// Verification categories: missing (an echo or expected reply never came), duplicate (an activity
// arrived twice), out_of_order (an activity arrived after a higher sequence id), gap (the stream
// skipped an activity that GET activities returned), lost (positions neither delivered nor passed
// by GET's watermark), sort_key (webchat:sequence-id or timestamp missing or malformed). Positions
// that GET's watermark passes without an activity (typing takes a position that GET never returns)
// are counted in skipped_positions and are not problems.
//
// dlbench runs with GOGC=400 unless the environment sets GOGC, to leave more CPU to a service on
// the same machine. For the same reason each simulated user sends its requests over an HTTP/1.1
// connection of its own, on its own goroutine, when --base is http:// (https, and a request made
// while the user's connection is busy, go through a shared pool); handles the deliveries of its
// subscription itself while it waits; and decodes of each received activity only the members
// that matching and verification read (client.SubscribeOptions.Sparse).
//
// Errors are counted by request and status/code; the human report adds a hint for the ones a
// misconfigured run meets first (a --base without the route prefix, a refused secret, nothing
// listening).
//
// Exit status: 0 when every message completed without error and verification found nothing, 1
// when errors occurred or verification failed, 2 for usage errors (among them a missing
// --secret/--token-endpoint and a --base that is not an absolute http or https URL).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"time"
)

// Exit statuses.
const (
	exitOK      = 0
	exitProblem = 1
	exitUsage   = 2
)

// gcPercent is dlbench's GOGC unless the environment sets one: it usually shares the machine
// with the service it measures, and collecting a small heap less often leaves the service more
// CPU at the price of some memory of the load generator's own.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// parseFlags reads the command line; flag.ErrHelp after printing the usage for -h.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("dlbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Base, "base", "", "route prefix of the service, e.g. http://127.0.0.1:3000/v3/directline")
	fs.StringVar(&c.Secret, "secret", getenv("DLBENCH_SECRET"), "Direct Line secret (environment DLBENCH_SECRET)")
	fs.StringVar(&c.TokenEndpoint, "token-endpoint", "", `token server URL: POST {"user":{"id"}} answers {"token"}`)
	fs.IntVar(&c.Conversations, "conversations", 10, "simulated users, one conversation each")
	fs.IntVar(&c.Messages, "messages", 10, "messages each user posts")
	fs.IntVar(&c.Concurrency, "concurrency", 0, "users running at once (default: --conversations)")
	fs.StringVar(&c.Transport, "transport", "ws", "ws (WebSocket stream) or poll (GET activities)")
	fs.DurationVar(&c.PollInterval, "poll-interval", time.Second, "polling interval with --transport poll")
	fs.DurationVar(&c.Think, "think", 0, "pause between a user's messages")
	fs.DurationVar(&c.Interval, "interval", 0, "start a user's messages this far apart (a late one at once)")
	fs.IntVar(&c.Warmup, "warmup", 0, "first N messages of each user are verified but not measured")
	fs.StringVar(&c.Bot, "bot", "auto", "expect bot replies: auto, yes or no")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Second, "wait for each echo and reply")
	fs.DurationVar(&c.ProbeWait, "probe-wait", 3*time.Second, "with --bot auto: how long the probe waits for a reply after its echo")
	fs.DurationVar(&c.GapWait, "gap-wait", 500*time.Millisecond, "how long a hole in the sequence may stay before GET fills it")
	fs.BoolVar(&c.JSON, "json", false, "print the report as JSON")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write dlbench's own CPU profile to this file")
	fs.StringVar(&c.LatencyLog, "latency-log", "", "write each measured message's start and latencies to this file (load mode)")
	fs.IntVar(&c.Idle, "idle", 0, "idle mode: open N streams and hold them")
	fs.DurationVar(&c.Hold, "hold", 10*time.Second, "idle mode: how long to hold the streams")
	fs.BoolVar(&c.IdlePost, "idle-post", false, "idle mode: after holding, post one message in each conversation and measure POST→echo")
	fs.IntVar(&c.ServerPID, "server-pid", 0, "idle mode: read the server's VmRSS from /proc/<pid>/status")
	fs.StringVar(&c.MetricsURL, "metrics-url", "", "idle mode: read process_resident_memory_bytes from this Prometheus endpoint")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: dlbench --base URL (--secret S | --token-endpoint URL) [flags]\n\nLoad generator for Direct Line 3.0 services; see the package documentation (go doc ./cmd/dlbench) for the JSON report.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if c.Concurrency == 0 {
		c.Concurrency = c.Conversations
	}
	var errs []error
	if c.Base == "" {
		errs = append(errs, errors.New("--base is required"))
	} else if u, err := url.Parse(c.Base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--base %q: want the service's route prefix as an absolute http or https URL, e.g. http://127.0.0.1:3000/v3/directline", c.Base))
	}
	if c.Secret == "" && c.TokenEndpoint == "" {
		errs = append(errs, errors.New("--secret (or DLBENCH_SECRET) or --token-endpoint is required"))
	}
	if c.Secret != "" && c.TokenEndpoint != "" {
		errs = append(errs, errors.New("--secret and --token-endpoint exclude each other"))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"--conversations", c.Conversations}, {"--messages", c.Messages}, {"--concurrency", c.Concurrency}} {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, not %d", f.name, f.v))
		}
	}
	if c.Warmup < 0 || c.Idle < 0 {
		errs = append(errs, errors.New("--warmup and --idle must not be negative"))
	}
	if c.Idle == 0 && c.Warmup >= c.Messages && c.Messages >= 1 {
		errs = append(errs, fmt.Errorf("--warmup %d leaves nothing of --messages %d to measure", c.Warmup, c.Messages))
	}
	if c.Transport != "ws" && c.Transport != "poll" {
		errs = append(errs, fmt.Errorf("--transport %q: want ws or poll", c.Transport))
	}
	if c.Bot != "auto" && c.Bot != "yes" && c.Bot != "no" {
		errs = append(errs, fmt.Errorf("--bot %q: want auto, yes or no", c.Bot))
	}
	if c.Think < 0 || c.Interval < 0 || (c.Think > 0 && c.Interval > 0) {
		errs = append(errs, errors.New("--think and --interval must not be negative, and only one may be set"))
	}
	if c.Timeout <= 0 || c.PollInterval <= 0 || c.GapWait <= 0 || c.ProbeWait <= 0 {
		errs = append(errs, errors.New("--timeout, --poll-interval, --gap-wait and --probe-wait must be positive"))
	}
	return c, errors.Join(errs...)
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "dlbench:", err)
		return exitUsage
	}
	if cfg.CPUProfile != "" {
		stopProfile, err := startCPUProfile(cfg.CPUProfile)
		if err != nil {
			fmt.Fprintln(stderr, "dlbench:", err)
			return exitUsage
		}
		defer stopProfile()
	}
	if cfg.Idle > 0 {
		return runIdle(ctx, cfg, stdout, stderr)
	}
	b := newBench(cfg)
	var latencyLog *os.File
	if cfg.LatencyLog != "" {
		// Created before the run, so that a bad path does not waste it.
		if latencyLog, err = os.Create(cfg.LatencyLog); err != nil {
			fmt.Fprintln(stderr, "dlbench: --latency-log:", err)
			return exitUsage
		}
		defer latencyLog.Close()
		b.timeline = make([]timed, 0, cfg.Conversations*max(0, cfg.Messages-cfg.Warmup))
	}
	switch cfg.Bot {
	case "yes":
		b.bot = true
	case "auto":
		b.bot, b.botUnknown = b.detectBot(ctx)
		// The probe is verified but not counted.
		b.sent.Store(0)
		b.received.Store(0)
	}
	elapsed := b.runLoad(ctx)
	rep := b.report(elapsed)
	if latencyLog != nil {
		err := b.writeLatencyLog(latencyLog)
		if cerr := latencyLog.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fmt.Fprintln(stderr, "dlbench: --latency-log:", err)
			return exitProblem
		}
	}
	if cfg.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.print(stdout)
	}
	if rep.Errors.Total > 0 || !rep.Verification.OK || ctx.Err() != nil {
		return exitProblem
	}
	return exitOK
}

// Report is the load report (see the package doc for its JSON).
type Report struct {
	Config struct {
		Base          string `json:"base"`
		Transport     string `json:"transport"`
		Conversations int    `json:"conversations"`
		Messages      int    `json:"messages"`
		Concurrency   int    `json:"concurrency"`
		Warmup        int    `json:"warmup"`
		ThinkMS       int64  `json:"think_ms"`
		IntervalMS    int64  `json:"interval_ms"`
		PollMS        int64  `json:"poll_ms,omitempty"`
		Bot           bool   `json:"bot"`
		BotUnknown    bool   `json:"bot_unknown,omitempty"`
	} `json:"config"`
	DurationS float64 `json:"duration_s"`
	Messages  struct {
		Sent      int64   `json:"sent"`
		Measured  int64   `json:"measured"`
		PerSecond float64 `json:"per_second"`
	} `json:"messages"`
	ActivitiesReceived  int64              `json:"activities_received"`
	ActivitiesPerSecond float64            `json:"activities_per_second"`
	Latency             map[string]Summary `json:"latency_ms"`
	Errors              ErrorReport        `json:"errors"`
	Verification        Verification       `json:"verification"`
}

// ErrorReport counts errors by request and status/code (JSON: errors).
type ErrorReport struct {
	Total  int64            `json:"total"`
	ByKind map[string]int64 `json:"by_kind"`
}

func (b *bench) report(elapsed time.Duration) Report {
	var r Report
	r.Config.Base = b.cfg.Base
	r.Config.Transport = b.cfg.Transport
	r.Config.Conversations = b.cfg.Conversations
	r.Config.Messages = b.cfg.Messages
	r.Config.Concurrency = b.cfg.Concurrency
	r.Config.Warmup = b.cfg.Warmup
	r.Config.ThinkMS = b.cfg.Think.Milliseconds()
	r.Config.IntervalMS = b.cfg.Interval.Milliseconds()
	r.Config.Bot, r.Config.BotUnknown = b.bot, b.botUnknown
	if b.cfg.Transport == "poll" {
		r.Config.PollMS = b.cfg.PollInterval.Milliseconds()
	}
	r.DurationS = round(elapsed.Seconds())
	r.Messages.Sent = b.sent.Load()
	r.Messages.Measured = b.measured.Load()
	b.mu.Lock()
	if window := b.last.Sub(b.first).Seconds(); window > 0 {
		r.Messages.PerSecond = round(float64(r.Messages.Measured) / window)
	}
	b.mu.Unlock()
	r.ActivitiesReceived = b.received.Load()
	if s := elapsed.Seconds(); s > 0 {
		r.ActivitiesPerSecond = round(float64(r.ActivitiesReceived) / s)
	}
	r.Latency = map[string]Summary{"post": b.post.summary(), "echo": b.echo.summary(), "reply": b.reply.summary()}
	r.Errors.ByKind, r.Errors.Total = b.errs.snapshot()
	r.Verification = b.verify.result()
	if r.Messages.Sent == 0 {
		// A run that sent nothing checked nothing: that is not a clean verification.
		r.Verification.OK = false
		r.Verification.Examples = append(r.Verification.Examples, nothingVerified)
	}
	return r
}

const nothingVerified = "no message was sent, so nothing was verified"

// errorHints turns the errors a misconfigured run meets first into what to check.
func errorHints(base string, byKind map[string]int64) []string {
	hints := map[string]bool{}
	for k := range byKind {
		switch {
		case strings.HasPrefix(k, "POST conversations 404"):
			hints[fmt.Sprintf("POST %s/conversations answered 404: --base must be the service's route prefix (for this service, http://HOST:PORT/v3/directline)", strings.TrimRight(base, "/"))] = true
		case strings.Contains(k, " 401") || strings.Contains(k, " 403"):
			hints["the service refused the credential (401/403): check --secret (DLBENCH_SECRET) or what --token-endpoint hands out"] = true
		case strings.HasSuffix(k, "connection refused"):
			hints["nothing accepts connections at "+base+": is the service running, on that address?"] = true
		}
	}
	return slices.Sorted(maps.Keys(hints))
}

func (r Report) print(w io.Writer) {
	transport, bot := r.Config.Transport, fmt.Sprint(r.Config.Bot)
	if r.Config.PollMS > 0 {
		transport += fmt.Sprintf(" poll=%dms", r.Config.PollMS)
	}
	if r.Config.BotUnknown {
		bot = "unknown (the probe failed)"
	}
	fmt.Fprintf(w, "dlbench %s  transport=%s conversations=%d messages=%d concurrency=%d warmup=%d think=%dms interval=%dms bot=%s\n\n",
		r.Config.Base, transport, r.Config.Conversations, r.Config.Messages, r.Config.Concurrency, r.Config.Warmup, r.Config.ThinkMS, r.Config.IntervalMS, bot)
	fmt.Fprintf(w, "duration      %.3f s\n", r.DurationS)
	fmt.Fprintf(w, "messages      %d sent, %d measured, %.1f/s (from the first measured message to the last)\n", r.Messages.Sent, r.Messages.Measured, r.Messages.PerSecond)
	fmt.Fprintf(w, "activities    %d received, %.1f/s (over the whole duration)\n\n", r.ActivitiesReceived, r.ActivitiesPerSecond)
	fmt.Fprintf(w, "latency (ms)  %8s %8s %8s %8s %8s %8s\n", "count", "mean", "p50", "p95", "p99", "max")
	for _, k := range []string{"post", "echo", "reply"} {
		s := r.Latency[k]
		fmt.Fprintf(w, "  %-11s %8d %8.2f %8.2f %8.2f %8.2f %8.2f\n", k, s.Count, s.Mean, s.P50, s.P95, s.P99, s.Max)
	}
	fmt.Fprintf(w, "\nerrors        %d\n", r.Errors.Total)
	printCounts(w, r.Errors.ByKind)
	for _, h := range errorHints(r.Config.Base, r.Errors.ByKind) {
		fmt.Fprintf(w, "  hint: %s\n", h)
	}
	v := r.Verification
	status := "OK"
	switch {
	case r.Messages.Sent == 0:
		status = "NOT DONE"
	case !v.OK:
		status = "FAILED"
	}
	fmt.Fprintf(w, "\nverification  %s: %d problems, %d skipped positions (typing), %d reconnects\n", status, v.Problems, v.SkippedPositions, v.Reconnects)
	printCounts(w, v.ByCategory)
	for _, e := range v.Examples {
		fmt.Fprintf(w, "  - %s\n", e)
	}
}

func printCounts(w io.Writer, m map[string]int64) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-40s %d\n", strings.TrimSpace(k), m[k])
	}
}

// startCPUProfile starts writing the process's CPU profile to path; stop ends it and closes the
// file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
