// Command sortcheck replays a Direct Line activity log against a model of Bot Framework Web
// Chat's ordering, prints the screen Web Chat is predicted to show, and reports conformance
// findings (package sortkeys/findings) with stable rule ids.
//
// Usage:
//
//	sortcheck [flags] [file]             read a log from file, or stdin when absent or "-"
//	sortcheck --live --base URL --conversation ID (--secret S | --token T) [flags]
//
// Input formats, detected automatically: JSON Lines of activities (or of ActivitySets,
// conformance events or the service's log export lines {"seq","kind","activity"}), a JSON array
// of activities (Bot Framework Emulator .transcript), a JSON array of ActivitySets
// {"activities":[...],"watermark":"N"} (a WebSocket capture), or a conformance vector
// {"name",...,"events":[...]}.
//
// Flags:
//
//	--profile gen-a|gen-b|gen-c  Web Chat generation to model (default gen-c, or the vector's)
//	--user-id ID                 user id Web Chat was started with (default: the vector's)
//	--json                       print one JSON document instead of tables
//	--html FILE                  write a self-contained picture of the service's order beside the
//	                             predicted screen to FILE
//	--max-per-rule N             list at most N findings per rule (default 50; 0 = all)
//	--screen=false               leave the screen table out of the text output
//	--progress                   show the progress line even when stderr is not a terminal
//	--live                       fetch the conversation from a Direct Line service
//	--base URL                   the service's base URL (with --live)
//	--conversation ID            conversation id (with --live)
//	--secret S, --token T        credential for --live (sent as a Bearer token)
//
//	--fail-on LEVEL              which findings make the exit status 1: must (default), misplace
//	                             (MUST or DROP-or-MISPLACE) or should (any finding)
//
// Exit status: 0 when the log is clean (no finding at the --fail-on level, and every expect
// checkpoint of a vector holds), 1 when it is not, 2 for usage or input errors (the message names the input line, with the byte column when
// the input is one line, and the reason).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/directline-go/directline/activity/jsonscan"
	"github.com/directline-go/directline/sortkeys"
	"github.com/directline-go/directline/sortkeys/findings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitClean    = 0
	exitFindings = 1
	exitUsage    = 2
)

type config struct {
	profile, userID, html, file       string
	jsonOut, live, progress, screen   bool
	base, secret, token, conversation string
	maxPerRule                        int
	failOn                            string
	// profileSet and userIDSet: the flag was given, so it wins over a vector's value.
	profileSet, userIDSet bool
}

// run is the whole command: it parses args, reads the log, checks it and writes the results.
// It returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	// With --json, a failure is also a JSON document on stdout, where a caller reads the report.
	failJSON := func(code string, err error) {
		if cfg != nil && cfg.jsonOut {
			writeJSONError(stdout, code, err)
		}
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitClean
	case errors.As(err, new(flagsReported)):
		failJSON(codeBadArgument, err)
		return exitUsage
	case err != nil:
		fmt.Fprintln(stderr, "sortcheck:", err)
		failJSON(codeBadArgument, err)
		return exitUsage
	}
	tty := isTerminal(stderr)
	bar := newProgress(stderr, cfg.progress || tty, tty)
	fail := func(err error) int {
		bar.done()
		fmt.Fprintln(stderr, "sortcheck:", err)
		code := codeBadArgument
		if errors.As(err, new(liveError)) {
			code = codeServiceError
		}
		failJSON(code, err)
		return exitUsage
	}
	var html *htmlFile
	if cfg.html != "" {
		if err := checkHTMLPath(cfg, stdin, stdout); err != nil {
			return fail(err)
		}
		if html, err = openHTML(cfg.html); err != nil {
			return fail(err)
		}
		defer html.abandon()
	}
	if cfg.live {
		bar.step("fetching the conversation", "", 0, 0)
	}
	data, source, err := readInput(cfg, stdin, stderr)
	if err != nil {
		return fail(err)
	}
	log, err := ReadLog(data, func(done, total int) { bar.step("reading", "MB", done>>20, total>>20) })
	if err != nil {
		return fail(fmt.Errorf("%s: %w", source, err))
	}
	profile := sortkeys.Profile(cfg.profile)
	if !cfg.profileSet && log.Profile != "" {
		if profile, err = sortkeys.ParseProfile(log.Profile); err != nil {
			at := log.ProfileAt
			at.Reason = fmt.Sprintf("the vector's profile %q is not gen-a, gen-b or gen-c", log.Profile)
			return fail(fmt.Errorf("%s: %w", source, &at))
		}
	}
	userID := cfg.userID
	if !cfg.userIDSet {
		userID = log.UserID
	}

	replaying := bar.counter("replaying", "events")
	rep := findings.Check(log.Events, findings.Options{
		Profile: profile, UserID: userID, MaxPerRule: cfg.maxPerRule,
		Progress: func(done, total int) {
			replaying(done, total)
			if done == total {
				bar.step("ordering and checking", "", 0, 0)
			}
		},
	})
	cps := checkCheckpoints(log, profile, userID)
	bar.step("writing the report", "", 0, 0)
	rows := screenRows(rep)
	if html != nil {
		if err := html.write(rep, log, rows); err != nil {
			return fail(err)
		}
	}
	// stdout may be the terminal the line is drawn on.
	bar.done()
	// One write per row would be a system call per row on a terminal or pipe.
	out := bufio.NewWriterSize(stdout, 64<<10)
	if cfg.jsonOut {
		err = writeJSON(out, source, log, rep, rows, cps)
	} else {
		err = writeText(out, cfg.screen, source, log, rep, rows, cps)
	}
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		return fail(err)
	}
	failing := rep.Count(findings.Must)
	if cfg.failOn != "must" {
		failing += rep.Count(findings.DropOrMisplace)
	}
	if cfg.failOn == "should" {
		failing += rep.Count(findings.Should)
	}
	for _, cp := range cps {
		if !cp.Holds {
			failing++
		}
	}
	if failing > 0 {
		return exitFindings
	}
	return exitClean
}

// flagsReported is a problem the flag package has already printed, with the usage.
type flagsReported struct{ error }

func (e flagsReported) Unwrap() error { return e.error }

// liveError is a failure to fetch a conversation with --live.
type liveError struct{ error }

func (e liveError) Unwrap() error { return e.error }

// Codes of the --json error document, from Direct Line's: the command line or the input is at
// fault, or the service --live asked.
const (
	codeBadArgument  = "BadArgument"
	codeServiceError = "ServiceError"
)

// writeJSONError writes err as Direct Line writes errors, {"error":{"code","message"}}.
func writeJSONError(w io.Writer, code string, err error) {
	type body struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(struct {
		Error body `json:"error"`
	}{body{code, err.Error()}})
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("sortcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.profile, "profile", string(sortkeys.GenC), "Web Chat generation: gen-a, gen-b or gen-c")
	fs.StringVar(&cfg.userID, "user-id", "", "user id Web Chat was started with")
	fs.BoolVar(&cfg.jsonOut, "json", false, "print one JSON document")
	fs.StringVar(&cfg.failOn, "fail-on", "must", "findings that make the exit status 1: must, misplace or should")
	fs.StringVar(&cfg.html, "html", "", "write a self-contained HTML picture of the service's order beside the predicted screen to this file")
	fs.IntVar(&cfg.maxPerRule, "max-per-rule", 50, "list at most this many findings per rule (0 = all)")
	fs.BoolVar(&cfg.screen, "screen", true, "print the predicted screen table")
	fs.BoolVar(&cfg.progress, "progress", false, "show the progress line even when stderr is not a terminal")
	fs.BoolVar(&cfg.live, "live", false, "fetch the conversation from a Direct Line service")
	fs.StringVar(&cfg.base, "base", "", "Direct Line base URL (with --live)")
	fs.StringVar(&cfg.secret, "secret", "", "Direct Line secret (with --live)")
	fs.StringVar(&cfg.token, "token", "", "Direct Line token (with --live)")
	fs.StringVar(&cfg.conversation, "conversation", "", "conversation id (with --live)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sortcheck [flags] [file]\n       sortcheck --live --base URL --conversation ID (--secret S | --token T) [flags]")
		fs.PrintDefaults()
	}
	// Flags may come after the file too (sortcheck log.jsonl --json): the flag package stops at
	// the first argument that is not one, so parsing resumes after each; after "--" every
	// argument is a file.
	var files []string
	for rest := args; len(rest) > 0; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return cfg, flagsReported{err}
		}
		left := fs.Args()
		if n := len(rest) - len(left); n > 0 && rest[n-1] == "--" {
			files = append(files, left...)
			break
		}
		if len(left) == 0 {
			break
		}
		files, rest = append(files, left[0]), left[1:]
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "profile":
			cfg.profileSet = true
		case "user-id":
			cfg.userIDSet = true
		}
	})
	if _, err := sortkeys.ParseProfile(cfg.profile); err != nil {
		return cfg, fmt.Errorf("--profile must be gen-a, gen-b or gen-c, not %q", cfg.profile)
	}
	switch cfg.failOn {
	case "must", "misplace", "should":
	default:
		return cfg, fmt.Errorf("--fail-on must be must, misplace or should, not %q", cfg.failOn)
	}
	if cfg.maxPerRule < 0 {
		return cfg, errors.New("--max-per-rule must be >= 0")
	}
	if !cfg.live {
		for _, f := range []struct{ name, v string }{{"--base", cfg.base}, {"--conversation", cfg.conversation}, {"--secret", cfg.secret}, {"--token", cfg.token}} {
			if f.v != "" {
				return cfg, fmt.Errorf("%s is for --live, which is not given", f.name)
			}
		}
	}
	switch {
	case cfg.live:
		if len(files) > 0 {
			return cfg, errors.New("--live takes no file argument")
		}
		if cfg.base == "" || cfg.conversation == "" {
			return cfg, errors.New("--live needs --base and --conversation")
		}
		if (cfg.secret == "") == (cfg.token == "") {
			return cfg, errors.New("--live needs exactly one of --secret and --token")
		}
		if u, err := url.Parse(cfg.base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, fmt.Errorf("--base must be an http:// or https:// URL, such as http://127.0.0.1:3001, not %q", cfg.base)
		}
		// The request paths are appended to the base, which would put them inside its query or
		// fragment.
		if strings.ContainsAny(cfg.base, "?#") {
			return cfg, fmt.Errorf("--base must be the service's root URL, without a query or fragment, not %q", cfg.base)
		}
	case len(files) > 1:
		return cfg, fmt.Errorf("one input file at most, got %d: %s", len(files), strings.Join(files, " "))
	case len(files) == 1:
		cfg.file = files[0]
	}
	return cfg, nil
}

// checkHTMLPath refuses an --html path that is the input or standard output: the picture would
// replace the log, or the report would be written into the picture.
func checkHTMLPath(cfg *config, stdin io.Reader, stdout io.Writer) error {
	if cfg.html == "-" {
		// "-" stands for standard output, as it stands for standard input as the log.
		return errors.New("--html - would be standard output, where the report goes; name a file")
	}
	target, err := os.Stat(cfg.html)
	if err != nil {
		// Not there yet, it is neither; openHTML reports any other problem.
		return nil
	}
	var input os.FileInfo
	switch f, ok := stdin.(*os.File); {
	case cfg.live:
	case cfg.file != "" && cfg.file != "-":
		input, _ = os.Stat(cfg.file)
	case ok:
		input, _ = f.Stat()
	}
	if input != nil && os.SameFile(target, input) {
		return fmt.Errorf("--html %s is the input: the picture would replace the log", cfg.html)
	}
	if f, ok := stdout.(*os.File); ok {
		if out, err := f.Stat(); err == nil && os.SameFile(target, out) {
			return fmt.Errorf("--html %s is standard output, where the report goes", cfg.html)
		}
	}
	return nil
}

// readInput returns the raw log and a name for it used in messages.
func readInput(cfg *config, stdin io.Reader, stderr io.Writer) ([]byte, string, error) {
	switch {
	case cfg.live:
		cred := cfg.secret
		if cred == "" {
			cred = cfg.token
		}
		src := &liveSource{base: cfg.base, credential: cred, secret: cfg.secret != "", conversation: cfg.conversation, client: newHTTPClient()}
		data, how, err := src.fetch(context.Background())
		if err != nil {
			return nil, "", liveError{err}
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, "", fmt.Errorf("conversation %s has no activities yet (read from %s): nothing to check", cfg.conversation, how)
		}
		return data, "conversation " + cfg.conversation + " from " + how, nil
	case cfg.file != "" && cfg.file != "-":
		data, err := os.ReadFile(cfg.file)
		return data, cfg.file, err
	}
	if isTerminal(stdin) {
		// Someone typing the command without a file would otherwise see it hang.
		fmt.Fprintln(stderr, "sortcheck: reading a log from the terminal (end it with Ctrl-D; sortcheck -h for help)")
	}
	data, err := io.ReadAll(stdin)
	return data, "stdin", err
}

// row is one bubble of the predicted screen.
type row struct {
	Position   int    `json:"position"`
	Name       string `json:"name"`
	Role       string `json:"role"`
	Type       string `json:"type"`
	Text       string `json:"text"`
	SequenceID string `json:"sequenceId,omitempty"`
	Timestamp  string `json:"timestamp,omitempty"`
	Unit       string `json:"unit,omitempty"`
}

// screenRows describes every bubble by the revision it shows.
func screenRows(rep findings.Report) []row {
	// Names to places in the order, not to copies of its items: a long log's items are a hundred
	// megabytes. The order gives a named bubble's unit.
	at := make(map[string]int, len(rep.Order))
	for k, it := range rep.Order {
		if it.Name != "" {
			at[it.Name] = k
		}
	}
	rows := make([]row, 0, len(rep.Screen))
	for i, b := range rep.Screen {
		r := row{Position: i + 1, Name: b.Name}
		if k, ok := at[b.Name]; ok && b.Name != "" {
			r.Unit = rep.Order[k].Unit
		}
		if r.Name == "" {
			r.Name = shownID(b.Activity)
		}
		describe(&r, b.Activity)
		// What Web Chat goes by: from.role, or the role it infers without one.
		r.Role = b.Role
		rows = append(rows, r)
	}
	return rows
}

// excerptRunes is the most code points of an activity's text a row keeps (--json's text); the
// table shows at most excerptCells terminal cells of it.
const (
	excerptRunes = 48
	excerptCells = 48
)

// description is what a row shows of an activity.
type description struct {
	typ, text, role, timestamp string
	attachments                int
	seq                        json.RawMessage
}

// describe fills r from the activity raw, which comes from the log (ReadLog hands out valid JSON
// only). A member of an unexpected JSON type leaves the row without a description.
func describe(r *row, raw json.RawMessage) {
	d, ok := plainDescription(raw)
	if !ok {
		if d, ok = decodedDescription(raw); !ok {
			return
		}
	}
	r.Type, r.Role, r.Timestamp, r.SequenceID = d.typ, d.role, d.timestamp, string(d.seq)
	text := strings.Join(strings.Fields(d.text), " ")
	if text == "" && d.attachments > 0 {
		text = "[" + counted(d.attachments, "attachment", "attachments") + "]"
	}
	r.Text = cutRunes(text, excerptRunes)
}

// decodedDescription reads a description with encoding/json.
func decodedDescription(raw json.RawMessage) (description, bool) {
	var a struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Timestamp json.RawMessage `json:"timestamp"`
		From      *struct {
			Role string `json:"role"`
		} `json:"from"`
		Attachments []json.RawMessage          `json:"attachments"`
		ChannelData map[string]json.RawMessage `json:"channelData"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return description{}, false
	}
	d := description{typ: a.Type, text: a.Text, attachments: len(a.Attachments), seq: a.ChannelData["webchat:sequence-id"]}
	if a.From != nil {
		d.role = a.From.Role
	}
	if a.Timestamp != nil {
		d.timestamp = shownValue(a.Timestamp)
	}
	return d, true
}

// shownID is the id an activity's bubble shows when it has no name: an id of another JSON type
// than string, which the model does not take for one.
func shownID(raw json.RawMessage) string {
	id := ""
	_ = jsonscan.Members(raw, func(k, v []byte) {
		if string(k) == "id" {
			id = shownValue(v)
		}
	})
	return id
}

// shownValue is the JSON value v as Web Chat, in JavaScript, would print it: a string as it is, a
// number as String(number) does, null as nothing, anything else as its JSON.
func shownValue(v []byte) string {
	v = jsonscan.TrimSpace(v)
	switch {
	case len(v) == 0 || string(v) == "null":
		return ""
	case v[0] == '"':
		s, _ := jsonscan.StringValue(v)
		return s
	case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
		// Out of range, it is ±Inf, as in JavaScript.
		f, _ := strconv.ParseFloat(string(v), 64)
		return sortkeys.NumberString(f)
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// plainDescription reads a description from valid JSON without encoding/json when every member
// it reads has the JSON type it wants (strings, from an object, attachments an array,
// channelData an object) or is null; ok is false otherwise, and encoding/json then decides, with
// its case-insensitive key matching and its errors.
func plainDescription(raw json.RawMessage) (d description, ok bool) {
	ok = true
	// str reads a string member; null leaves it as it was, as encoding/json leaves a string.
	str := func(dst *string, v []byte) {
		if v[0] != 'n' {
			var isStr bool
			*dst, isStr = jsonscan.StringValue(v)
			ok = ok && isStr
		}
	}
	// A repeated member is decoded into what the first one left (a map, a pointed-to struct):
	// encoding/json decides.
	var seen uint8
	err := jsonscan.Members(raw, func(k, v []byte) {
		if !ok {
			return
		}
		if i := slices.Index(describedMembers, string(k)); i >= 0 {
			ok = seen&(1<<i) == 0
			seen |= 1 << i
		}
		switch string(k) {
		case "type":
			str(&d.typ, v)
		case "text":
			str(&d.text, v)
		case "timestamp":
			// null makes the member nil, which is not shown.
			d.timestamp = ""
			str(&d.timestamp, v)
		case "from":
			d.role, ok = fromRole(v)
		case "attachments":
			d.attachments = 0
			switch v[0] {
			case '[':
				_ = jsonscan.Elements(v, func([]byte) { d.attachments++ })
			case 'n':
			default:
				ok = false
			}
		case "channelData":
			switch v[0] {
			case '{':
				d.seq = nil
				_ = jsonscan.Members(v, func(ck, cv []byte) {
					if string(ck) == "webchat:sequence-id" {
						d.seq = cv
					}
				})
			case 'n':
				d.seq = nil
			default:
				ok = false
			}
		default:
			for _, name := range describedMembers {
				if strings.EqualFold(string(k), name) {
					ok = false
				}
			}
		}
	})
	return d, ok && err == nil
}

// describedMembers are the JSON names plainDescription reads.
var describedMembers = []string{"type", "text", "timestamp", "from", "attachments", "channelData"}

// fromRole reads from.role as plainDescription does; ok is false where encoding/json decides.
func fromRole(v []byte) (role string, ok bool) {
	switch v[0] {
	case 'n':
		return "", true
	case '{':
	default:
		return "", false
	}
	ok = true
	_ = jsonscan.Members(v, func(k, rv []byte) {
		switch {
		case string(k) == "role":
			if rv[0] == 'n' {
				return
			}
			var isStr bool
			role, isStr = jsonscan.StringValue(rv)
			ok = ok && isStr
		case strings.EqualFold(string(k), "role"):
			ok = false
		}
	})
	return role, ok
}

func writeText(w io.Writer, withScreen bool, source string, log *Log, rep findings.Report, rows []row, cps []checkpointResult) error {
	s := rep.Summary
	if withScreen {
		fmt.Fprintf(w, "Predicted screen (%s, %s)\n", s.Profile, counted(len(rows), "bubble", "bubbles"))
		t := table{{"  #", "id", "role", "text", "seq", "timestamp", "unit"}}
		for _, r := range rows {
			t = append(t, []string{"  " + strconv.Itoa(r.Position), safe(r.Name), cell(r.Role), fit(cell(r.Text), excerptCells),
				cell(r.SequenceID), cell(r.Timestamp), cell(r.Unit)})
		}
		if err := t.write(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Findings (%d)\n", s.Findings)
	t := table{}
	shown := map[string]int{}
	for _, f := range rep.Findings {
		shown[f.Rule]++
		t = append(t, []string{"  " + string(f.Severity), f.Rule, log.where(f.Index), cell(f.ActivityID), safe(f.Message)})
	}
	for _, r := range findings.Rules {
		if n := s.ByRule[r.ID] - shown[r.ID]; n > 0 {
			t = append(t, []string{"  " + string(r.Severity), r.ID, "", "", fmt.Sprintf("... and %d more", n)})
		}
	}
	if err := t.write(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	held := 0
	for _, cp := range cps {
		if cp.Holds {
			held++
		}
	}
	if held < len(cps) {
		fmt.Fprintf(w, "Checkpoints that fail (%d of %d)\n", len(cps)-held, len(cps))
		for _, cp := range cps {
			if !cp.Holds {
				fmt.Fprintf(w, "  checkpoint %d, %s: %s\n", cp.Checkpoint, cp.place(), safe(cp.Problem))
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Summary")
	expects := ""
	if len(cps) > 0 {
		expects = fmt.Sprintf(", %s: %d hold (%s)", counted(len(cps), "expect checkpoint", "expect checkpoints"), held, s.Profile)
	}
	fmt.Fprintf(w, "  input: %s (%s), %s: %s delivered, %s%s\n", source, log.Format,
		counted(s.Events, "event", "events"), counted(s.Activities, "activity", "activities"), counted(s.Posts, "post", "posts"), expects)
	// Without from.role, Web Chat takes an activity for the user's only when from.id is the user
	// id; the user rules (DL020, DL022) pass the others by.
	switch {
	case s.RoleInferred > 0 && s.UserID == "":
		fmt.Fprintf(w, "  %s from.id but no from.role: with no user id given (--user-id), Web Chat takes each for a bot's, and the user rules (DL020, DL022) pass them by\n",
			counted(s.RoleInferred, "activity has", "activities have"))
	case s.RoleInferred > 0 && s.RoleInferredUser == 0:
		fmt.Fprintf(w, "  %s from.id but no from.role, and none of them the user id %q: Web Chat takes each for a bot's, and the user rules (DL020, DL022) pass them by\n",
			counted(s.RoleInferred, "activity has", "activities have"), s.UserID)
	}
	if s.Posts == 0 {
		fmt.Fprintln(w, "  echo rules (DL021, DL030 to DL033): not applicable, the log has no posts (only what was delivered)")
	}
	fmt.Fprintf(w, "  service order: %s; %s predicted (%s)\n", s.ServiceOrder, counted(s.Bubbles, "bubble", "bubbles"), s.Profile)
	fmt.Fprintf(w, "  %s shown in the opposite order to the server (%s moved)\n",
		counted(int(s.InvertedPairs), "pair", "pairs"), counted(s.Moved, "bubble", "bubbles"))
	_, err := fmt.Fprintf(w, "  findings: %d MUST, %d SHOULD, %d DROP-or-MISPLACE\n",
		s.BySeverity[findings.Must], s.BySeverity[findings.Should], s.BySeverity[findings.DropOrMisplace])
	return err
}

// counted is n with the noun's singular or plural form.
func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// cell is s as a table shows it: escaped, or "-" when empty.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return safe(s)
}

// jsonFinding is a finding with the input line and byte column (1-based) where its event starts.
type jsonFinding struct {
	findings.Finding
	Line   int `json:"line"`
	Column int `json:"column"`
}

func writeJSON(w io.Writer, source string, log *Log, rep findings.Report, rows []row, cps []checkpointResult) error {
	fs := make([]jsonFinding, len(rep.Findings))
	for i, f := range rep.Findings {
		fs[i] = jsonFinding{Finding: f, Line: log.Lines[f.Index], Column: log.Columns[f.Index]}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Input       jsonInput          `json:"input"`
		Screen      []row              `json:"screen"`
		Findings    []jsonFinding      `json:"findings"`
		Summary     findings.Summary   `json:"summary"`
		Checkpoints []checkpointResult `json:"checkpoints"`
		Rules       []findings.Rule    `json:"rules"`
	}{
		Input:  jsonInput{source, log.Format, log.Expects},
		Screen: rows, Findings: fs, Summary: rep.Summary, Checkpoints: cps, Rules: findings.Rules,
	})
}

// jsonInput says what was read: Expects counts a conformance vector's expect checkpoints, which
// are not events and so not among the summary's events (checkpoints has their outcomes).
type jsonInput struct {
	Source  string `json:"source"`
	Format  string `json:"format"`
	Expects int    `json:"expects"`
}
