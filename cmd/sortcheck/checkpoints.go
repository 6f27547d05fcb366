package main

import (
	"fmt"
	"strings"

	"github.com/directline-go/directline/sortkeys"
)

// checkpointResult is one expect checkpoint of a vector, replayed: Problem says where the
// model's order or screen first differs from what the vector expects ("" when it holds).
type checkpointResult struct {
	Checkpoint int    `json:"checkpoint"`
	Line       int    `json:"line"`
	Column     int    `json:"column"`
	Holds      bool   `json:"holds"`
	Problem    string `json:"problem,omitempty"`
	// shared says an event starts on the checkpoint's line too.
	shared bool
}

// place is where the checkpoint stands in the input: its line, and its column when an event
// starts on that line too, as findings name their places.
func (cp checkpointResult) place() string {
	if cp.shared {
		return fmt.Sprintf("line %d:%d", cp.Line, cp.Column)
	}
	return fmt.Sprintf("line %d", cp.Line)
}

// checkCheckpoints replays log's events with the profile and user id in effect and compares the
// order (state.activities) and, where the vector gives one, the screen at each expect checkpoint,
// as the conformance tests do (conformance README "expect"). An event the replay rejects is left
// out, as the findings report it (DL006).
func checkCheckpoints(log *Log, profile sortkeys.Profile, userID string) []checkpointResult {
	if len(log.Checkpoints) == 0 {
		return nil
	}
	// The keys walk after every event costs O(n) each; only a screen can depend on it.
	history := false
	for _, cp := range log.Checkpoints {
		history = history || cp.Screen != nil
	}
	r := sortkeys.New(sortkeys.Options{Profile: profile, UserID: userID, ScreenHistory: history})
	results := make([]checkpointResult, len(log.Checkpoints))
	next := 0
	for k, cp := range log.Checkpoints {
		for ; next < cp.After; next++ {
			_ = r.Apply(log.Events[next])
		}
		res := checkpointResult{Checkpoint: k + 1, Line: cp.Line, Column: cp.Column,
			shared: (cp.After > 0 && log.Lines[cp.After-1] == cp.Line) || (cp.After < len(log.Lines) && log.Lines[cp.After] == cp.Line)}
		if d := firstDifference(r.Names(), cp.Order); d != "" {
			res.Problem = "order: " + d
		} else if cp.Screen != nil {
			var shown []string
			for _, b := range r.Screen() {
				shown = append(shown, b.Name)
			}
			if d := firstDifference(shown, cp.Screen); d != "" {
				res.Problem = "screen: " + d
			}
		}
		res.Holds = res.Problem == ""
		results[k] = res
	}
	return results
}

// firstDifference describes the first place where got and want differ, "" when they are equal.
func firstDifference(got, want []string) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		g, w := "(end)", "(end)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("place %d is %s, the vector expects %s (model: %s; vector: %s)",
				i+1, g, w, strings.Join(got, " "), strings.Join(want, " "))
		}
	}
	return ""
}
