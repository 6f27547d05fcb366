package findings

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/directline-go/directline/sortkeys"
)

// findingsLog is a random log of n events that breaks many rules, among them those whose
// messages quote another activity (a sequence id's owner or the highest one's id, a post's
// clientActivityID or localTimestamp, a livestream's first grouping, the bubble a moved one is
// inverted with, the activity before in the service's order): pendingLog's posts and echoes
// mixed with bot messages, livestream revisions and grouped parts whose ids, sequence ids and
// timestamps repeat, go back or are missing.
func findingsLog(rng *rand.Rand, n int) []sortkeys.Event {
	evs := pendingLog(rng, n)
	for i := range evs {
		if rng.Intn(2) == 0 {
			continue
		}
		id := fmt.Sprint("b", rng.Intn(n/2+1))
		seq := rng.Intn(n/3 + 1)
		switch rng.Intn(6) {
		case 0:
			evs[i] = bot(id, seq, "")
		case 1:
			evs[i] = ts(id, fmt.Sprintf("%q", shapeTS(rng.Intn(n))))
		case 2:
			evs[i] = interim(id, fmt.Sprint("s", rng.Intn(4)), seq, fmt.Sprint(rng.Intn(4)))
		case 3:
			evs[i] = final(id, fmt.Sprint("s", rng.Intn(4)), seq)
		case 4:
			evs[i] = streamAt(id, fmt.Sprint("s", rng.Intn(4)), seq, rng.Intn(60))
			if rng.Intn(2) == 0 {
				evs[i] = part(id, seq, fmt.Sprint("_:g", rng.Intn(3)), fmt.Sprint(rng.Intn(5)))
			}
		default:
			evs[i] = in(fmt.Sprintf(`{"type":"message","id":%q,"timestamp":%q,"from":{"id":"bot","role":"bot"},"text":"r","replyToId":"m%d"}`, id, shapeTS(n-i), rng.Intn(5)))
		}
	}
	return evs
}

// keptFindings is the reference for MaxPerRule: every finding, formatted, then the first max of
// each rule in the report's order.
func keptFindings(all []Finding, max int) []Finding {
	kept := []Finding{}
	seen := map[string]int{}
	for _, f := range all {
		if seen[f.Rule]++; seen[f.Rule] <= max {
			kept = append(kept, f)
		}
	}
	return kept
}

// TestMaxPerRuleFormatsTheKeptFindings: Check formats a finding's message only when the report
// lists it. On random logs with each profile, the findings kept under a limit per rule must be
// those a check without limit lists first, with the same messages, and the summary the same.
func TestMaxPerRuleFormatsTheKeptFindings(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 50
	}
	for _, tc := range []struct {
		profile sortkeys.Profile
		max     int
	}{
		{sortkeys.GenA, 1}, {sortkeys.GenB, 2}, {sortkeys.GenC, 3}, {sortkeys.GenC, 1},
	} {
		findings, rules := 0, map[string]int{}
		for seed := range seeds {
			evs := findingsLog(rand.New(rand.NewSource(int64(seed))), 300)
			opts := Options{Profile: tc.profile, UserID: userID}
			all := Check(evs, opts)
			opts.MaxPerRule = tc.max
			limited := Check(evs, opts)
			if want := keptFindings(all.Findings, tc.max); !reflect.DeepEqual(limited.Findings, want) {
				t.Fatalf("%s, max %d, seed %d: findings\n%v\nwant\n%v", tc.profile, tc.max, seed, limited.Findings, want)
			}
			if !reflect.DeepEqual(limited.Summary, all.Summary) {
				t.Fatalf("%s, max %d, seed %d: summary %+v, want %+v", tc.profile, tc.max, seed, limited.Summary, all.Summary)
			}
			for _, f := range all.Findings {
				if f.Message == "" || strings.Contains(f.Message, "%!") {
					t.Fatalf("%s, seed %d: %s message %q", tc.profile, seed, f.Rule, f.Message)
				}
			}
			findings += all.Summary.Findings
			for r, k := range all.Summary.ByRule {
				rules[r] += k
			}
		}
		t.Logf("%s, max %d: %d findings on %d logs, by rule %v", tc.profile, tc.max, findings, seeds, rules)
	}
}
