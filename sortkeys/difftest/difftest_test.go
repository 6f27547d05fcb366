package difftest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/directline-go/directline/sortkeys"
)

// repoRoot is relative to this package's directory, where `go test` runs.
var repoRoot = filepath.Join("..", "..")

// A harness is a Node driver and the model options that match it.
type harness struct {
	driver string // relative to repoRoot
	hold   bool   // Options.ReplyHold
}

var (
	// direct dispatches the store's actions itself (replay.mjs).
	direct = harness{driver: filepath.Join("webchat-demo", "diff", "replay.mjs")}
	// sagas sends incoming activities through Web Chat's own sagas, reply hold included, on a
	// simulated clock (hold.mjs).
	sagas = harness{driver: filepath.Join("webchat-demo", "diff", "hold.mjs"), hold: true}
)

// cores maps a profile to the npm package replay.mjs loads for it (see its header).
var cores = map[sortkeys.Profile]string{
	sortkeys.GenA: "botframework-webchat-core",
	sortkeys.GenB: "botframework-webchat-core-prerelease",
}

// checkpointEvery is the number of events between checkpoints in random logs.
const checkpointEvery = 4

// Flags for longer runs: go test ./sortkeys/difftest/ -args -difftest.logs=5000 -difftest.seed=1000
var (
	randomLogs = flag.Int("difftest.logs", 200, "random logs per profile")
	firstSeed  = flag.Uint64("difftest.seed", 1, "seed of the first random log")
)

// requireNode skips the test, or fails it under DIRECTLINE_NODE_TESTS=1, when Node or the
// webchat-demo packages are missing.
func requireNode(t *testing.T) {
	t.Helper()
	var missing []string
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node is not on PATH")
	}
	for _, pkg := range cores {
		p := filepath.Join(repoRoot, "webchat-demo", "node_modules", pkg, "package.json")
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p+" is missing")
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := strings.Join(missing, "; ") + ": run `npm ci --prefix webchat-demo` (Node 20+)"
	if os.Getenv("DIRECTLINE_NODE_TESTS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// nodeResult is one output line of replay.mjs.
type nodeResult struct {
	Name        string     `json:"name"`
	Error       string     `json:"error"`
	Checkpoints [][]string `json:"checkpoints"`
	Final       []string   `json:"final"`
}

// run replays logs (each marshalled to one JSON line) through the package of profile in a
// single Node process and returns one result per log.
func (h harness) run(t *testing.T, profile sortkeys.Profile, logs []any) []nodeResult {
	t.Helper()
	var in bytes.Buffer
	for _, l := range logs {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(b)
		in.WriteByte('\n')
	}
	file := filepath.Join(t.TempDir(), "logs.jsonl")
	if err := os.WriteFile(file, in.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", h.driver, "--core", string(profile), abs)
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s --core %s: %v\n%s", h.driver, profile, err, stderr.String())
	}
	var results []nodeResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		var r nodeResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s output: %v: %.200s", h.driver, err, sc.Text())
		}
		results = append(results, r)
	}
	if len(results) != len(logs) {
		t.Fatalf("%s returned %d results for %d logs\n%s", h.driver, len(results), len(logs), stderr.String())
	}
	return results
}

// withCheckpoints returns events with an expect marker after every `every` events and at the
// end.
func withCheckpoints(events []sortkeys.Event, every int) []sortkeys.Event {
	var out []sortkeys.Event
	for i, ev := range events {
		out = append(out, ev)
		if (i+1)%every == 0 || i == len(events)-1 {
			out = append(out, sortkeys.Event{Op: sortkeys.OpExpect})
		}
	}
	return out
}

// model applies events to the model and returns Names() at every expect marker. A panic in
// the model is returned as an error so that it shows up as a difference.
func (h harness) model(profile sortkeys.Profile, events []sortkeys.Event) (checkpoints [][]string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	r := sortkeys.New(sortkeys.Options{Profile: profile, UserID: userID, ReplyHold: h.hold})
	for i, ev := range events {
		if ev.Op == sortkeys.OpExpect {
			checkpoints = append(checkpoints, r.Names())
			continue
		}
		if err := r.Apply(ev); err != nil {
			return checkpoints, fmt.Errorf("event %d: %w", i, err)
		}
	}
	return checkpoints, nil
}

// difference describes the first checkpoint where Node and the model disagree, or "" when
// they agree. Node errors are reported by the caller.
func difference(events []sortkeys.Event, node nodeResult, model [][]string, modelErr error) string {
	markers := 0
	for _, ev := range events {
		if ev.Op == sortkeys.OpExpect {
			markers++
		}
	}
	if len(node.Checkpoints) != markers {
		return fmt.Sprintf("node reported %d checkpoints for %d expect markers", len(node.Checkpoints), markers)
	}
	for k, want := range node.Checkpoints {
		if k >= len(model) {
			return fmt.Sprintf("checkpoint %d: model stopped: %v\n node:  %q", k+1, modelErr, want)
		}
		if got := model[k]; !slices.Equal(got, want) {
			return fmt.Sprintf("checkpoint %d (after %d events): %s", k+1, eventsBefore(events, k), firstDiff("model", got, "node", want))
		}
	}
	if modelErr != nil {
		return fmt.Sprintf("model error: %v", modelErr)
	}
	return ""
}

// eventsBefore is the number of log events (expect markers not counted) before checkpoint k.
func eventsBefore(events []sortkeys.Event, k int) int {
	n := 0
	for _, ev := range events {
		if ev.Op != sortkeys.OpExpect {
			n++
			continue
		}
		if k == 0 {
			return n
		}
		k--
	}
	return n
}

// firstDiff shows the first position where orders a and b differ, and both orders.
func firstDiff(aName string, a []string, bName string, b []string) string {
	for i := 0; i < len(a) || i < len(b); i++ {
		x, y := "<end>", "<end>"
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("position %d: %s %s, %s %s\n %-6s %q\n %-6s %q", i, aName, x, bName, y, aName+":", a, bName+":", b)
		}
	}
	return ""
}

// logLength varies the size of the random logs: 30 to 120 events. The prerelease core validates
// livestream metadata of every stored activity on each upsert, so its time grows with the square
// of the log length; the conformance vectors cover longer logs for gen-a.
func logLength(seed uint64) int { return 30 + int(seed*7919%91) }

func TestRandomLogsAgreeWithWebChatCore(t *testing.T) {
	requireNode(t)
	for _, profile := range []sortkeys.Profile{sortkeys.GenA, sortkeys.GenB} {
		t.Run(string(profile), func(t *testing.T) {
			t.Parallel()
			logs := make([]genLog, *randomLogs)
			batch := make([]any, *randomLogs)
			for i := range logs {
				seed := *firstSeed + uint64(i)
				logs[i] = generate(seed, logLength(seed))
				batch[i] = genLog{Name: logs[i].Name, UserID: userID, Events: withCheckpoints(logs[i].Events, checkpointEvery)}
			}
			results := direct.run(t, profile, batch)
			var failing []string
			for i, res := range results {
				events := batch[i].(genLog).Events
				if res.Error != "" {
					t.Errorf("%s: replay.mjs rejected the log: %s", logs[i].Name, res.Error)
					continue
				}
				model, err := direct.model(profile, events)
				if d := difference(events, res, model, err); d != "" {
					if len(failing) == 0 {
						seed := *firstSeed + uint64(i)
						t.Errorf("%s (seed %d, %s; rerun alone with -args -difftest.seed=%d -difftest.logs=1): %s\n%s",
							logs[i].Name, seed, profile, seed, d, direct.shrinkReport(t, profile, logs[i]))
					}
					failing = append(failing, logs[i].Name)
				}
			}
			if len(failing) > 0 {
				t.Errorf("%s: %d of %d logs differ: %s", profile, len(failing), len(logs), strings.Join(failing, " "))
			}
		})
	}
}

// failsAt reports, for each candidate event list, whether Node and the model disagree when
// every event is a checkpoint. Candidates Node rejects count as agreeing.
func (h harness) failsAt(t *testing.T, profile sortkeys.Profile, candidates [][]sortkeys.Event) []bool {
	t.Helper()
	batch := make([]any, len(candidates))
	for i, c := range candidates {
		batch[i] = genLog{Name: fmt.Sprint(i), UserID: userID, Events: withCheckpoints(c, 1)}
	}
	results := h.run(t, profile, batch)
	fails := make([]bool, len(candidates))
	for i, res := range results {
		if res.Error != "" {
			continue
		}
		events := batch[i].(genLog).Events
		model, err := h.model(profile, events)
		fails[i] = difference(events, res, model, err) != ""
	}
	return fails
}

// shrink removes chunks of events (delta debugging) while the difference persists and returns
// the smallest failing event list it finds.
func (h harness) shrink(t *testing.T, profile sortkeys.Profile, events []sortkeys.Event) []sortkeys.Event {
	t.Helper()
	current := events
	n := 2
	for len(current) > 1 && n <= len(current) {
		var candidates [][]sortkeys.Event
		size := (len(current) + n - 1) / n
		for start := 0; start < len(current); start += size {
			end := min(start+size, len(current))
			candidates = append(candidates, slices.Concat(current[:start], current[end:]))
		}
		fails := h.failsAt(t, profile, candidates)
		if i := slices.Index(fails, true); i >= 0 {
			current = candidates[i]
			n = max(n-1, 2)
			continue
		}
		if n == len(current) {
			break
		}
		n = min(2*n, len(current))
	}
	return current
}

// shrinkReport shrinks a failing log and shows the result with both orders at every event, ready
// to be saved under testdata/.
func (h harness) shrinkReport(t *testing.T, profile sortkeys.Profile, log genLog) string {
	t.Helper()
	small := h.shrink(t, profile, log.Events)
	events := withCheckpoints(small, 1)
	node := h.run(t, profile, []any{genLog{Name: log.Name, UserID: userID, Events: events}})[0]
	model, err := h.model(profile, events)
	saved := regressionLog{Name: log.Name + "-shrunk", Profile: profile, UserID: userID, Events: small}
	b, _ := json.MarshalIndent(saved, "", "  ")
	return fmt.Sprintf("smallest failing log (%d of %d events): %s\n%s", len(small), len(log.Events),
		difference(events, node, model, err), b)
}

// regressionLog is a file under testdata/: a small log that pins down a difference between the
// generations or a disagreement once found (shrinkReport prints new ones in this shape). Each
// event is a checkpoint.
type regressionLog struct {
	Name    string           `json:"name"`
	Profile sortkeys.Profile `json:"profile"`
	Note    string           `json:"note,omitempty"`
	UserID  string           `json:"userID"`
	Events  []sortkeys.Event `json:"events"`
}

func TestRegressionLogsAgreeWithWebChatCore(t *testing.T) {
	byProfile := map[sortkeys.Profile][]regressionLog{}
	for _, l := range loadRegressionLogs(t, "testdata") {
		if _, ok := cores[l.Profile]; !ok {
			t.Fatalf("%s: profile %q has no npm package", l.Name, l.Profile)
		}
		byProfile[l.Profile] = append(byProfile[l.Profile], l)
	}
	for profile, logs := range byProfile {
		direct.check(t, profile, logs)
	}
}

// loadRegressionLogs reads the regression logs in dir; it fails the test when there are none.
func loadRegressionLogs(t *testing.T, dir string) []regressionLog {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no regression logs under %s", dir)
	}
	requireNode(t)
	logs := make([]regressionLog, len(files))
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &logs[i]); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return logs
}

// check replays logs, each event a checkpoint, through Node and the model under profile, and
// reports every log where they disagree.
func (h harness) check(t *testing.T, profile sortkeys.Profile, logs []regressionLog) {
	t.Helper()
	batch := make([]any, len(logs))
	for i, l := range logs {
		batch[i] = genLog{Name: l.Name, UserID: l.UserID, Events: withCheckpoints(l.Events, 1)}
	}
	for i, res := range h.run(t, profile, batch) {
		if res.Error != "" {
			t.Errorf("%s: %s rejected the log: %s", logs[i].Name, h.driver, res.Error)
			continue
		}
		events := batch[i].(genLog).Events
		model, err := h.model(profile, events)
		if d := difference(events, res, model, err); d != "" {
			t.Errorf("%s (%s): %s", logs[i].Name, profile, d)
		}
	}
}

// conformanceDir is $SORTKEYS_CONFORMANCE_DIR, else shared/conformance beside the repository
// (as in the sortkeys package's own conformance test).
func conformanceDir() string {
	if d := os.Getenv("SORTKEYS_CONFORMANCE_DIR"); d != "" {
		return d
	}
	return filepath.Join(repoRoot, "..", "shared", "conformance")
}

// TestDriverReproducesGenAVectors proves the harness: the real 4.18.2 store, driven by
// replay.mjs, must reproduce every checkpoint of the gen-a conformance vectors.
func TestDriverReproducesGenAVectors(t *testing.T) {
	requireNode(t)
	files, err := filepath.Glob(filepath.Join(conformanceDir(), "gen-a", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no gen-a vectors under %s (set SORTKEYS_CONFORMANCE_DIR)", conformanceDir())
	}
	vectors := make([]*sortkeys.Vector, len(files))
	batch := make([]any, len(files))
	for i, f := range files {
		v, err := sortkeys.LoadVector(f)
		if err != nil {
			t.Fatal(err)
		}
		vectors[i] = v
		batch[i] = v
	}
	checkpoints := 0
	for i, res := range direct.run(t, sortkeys.GenA, batch) {
		v := vectors[i]
		if res.Error != "" {
			t.Errorf("%s: replay.mjs rejected the vector: %s", v.Name, res.Error)
			continue
		}
		var want [][]string
		for _, ev := range v.Events {
			if ev.Op == sortkeys.OpExpect {
				want = append(want, ev.Order)
			}
		}
		if len(res.Checkpoints) != len(want) {
			t.Errorf("%s: %d checkpoints from node, %d in the vector", v.Name, len(res.Checkpoints), len(want))
			continue
		}
		for k := range want {
			checkpoints++
			if !slices.Equal(res.Checkpoints[k], want[k]) {
				t.Errorf("%s checkpoint %d: %s", v.Name, k+1, firstDiff("vector", want[k], "node", res.Checkpoints[k]))
			}
		}
	}
	if checkpoints == 0 {
		t.Fatal("no checkpoints compared")
	}
}
