package difftest

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/directline-go/directline/sortkeys"
)

// holdLength varies the size of the random logs of the reply hold: 2 to 30 events, each a
// checkpoint, so that a difference shows at the event that makes it.
func holdLength(seed uint64) int { return 2 + int(seed*7919%29) }

// holdGen makes logs for the reply hold: replies to ids delivered before, after or never, with
// replyToIds of every JSON type, chains of replies, updates, deletes, posts and echoes, on a
// clock that jumps across the 5 s hold.
type holdGen struct {
	rng    *rand.Rand
	n      int
	now    float64
	ids    []any // ids delivered so far
	future []any // ids that replies name before they arrive (some never do)
	sends  []string
	events []sortkeys.Event
}

func generateHold(seed uint64, events int) genLog {
	g := &holdGen{rng: rand.New(rand.NewPCG(seed, 0x401d))}
	for range events {
		g.step()
	}
	return genLog{Name: fmt.Sprintf("hold-%d", seed), UserID: userID, Events: g.events}
}

func (g *holdGen) pick(xs []any) any { return xs[g.rng.IntN(len(xs))] }

func (g *holdGen) fresh() string {
	g.n++
	return fmt.Sprintf("h%d", g.n)
}

// at moves the clock on, mostly by steps around the hold's 5 s; now and then it goes back or
// the event has no time.
func (g *holdGen) at() *float64 {
	switch g.rng.IntN(12) {
	case 0:
		return nil
	case 1:
		back := g.now - float64(g.rng.IntN(3000))
		return &back
	}
	g.now += []float64{0, 0, 1, 10, 100, 1000, 2500, 4999, 5000, 5001, 7000, 12000}[g.rng.IntN(12)]
	now := g.now
	return &now
}

func (g *holdGen) replyTo() any {
	switch r := g.rng.IntN(10); {
	case r < 2:
		return nil
	case r < 4 && len(g.ids) > 0:
		return g.pick(g.ids)
	case r < 7:
		if len(g.future) == 0 || g.rng.IntN(3) == 0 {
			g.future = append(g.future, g.fresh())
		}
		return g.pick(g.future)
	case r == 7:
		return fmt.Sprintf("never%d", g.rng.IntN(2))
	}
	return g.pick([]any{2.0, 3.0, 0.0, "", true, false, map[string]any{}, []any{}})
}

func (g *holdGen) id() any {
	switch r := g.rng.IntN(12); {
	case r == 0:
		return nil
	case r == 1:
		return float64(2 + g.rng.IntN(2))
	case r == 2 && len(g.ids) > 0:
		return g.pick(g.ids) // an update
	case r < 7 && len(g.future) > 0:
		i := g.rng.IntN(len(g.future))
		id := g.future[i]
		g.future = slices.Delete(g.future, i, i+1)
		return id
	}
	return g.fresh()
}

func (g *holdGen) delivered(id any) {
	if id != nil && !slices.Contains(g.ids, id) {
		g.ids = append(g.ids, id)
	}
}

func (g *holdGen) activity() obj {
	a := obj{"type": "message", "from": obj{"id": "bot"}}
	if id := g.id(); id != nil {
		a["id"] = id
		g.delivered(id)
	}
	if rt := g.replyTo(); rt != nil {
		a["replyToId"] = rt
	}
	switch r := g.rng.IntN(12); {
	case r < 3:
		a["from"] = obj{"id": userID}
	case r == 3:
		a["from"] = obj{"id": "x", "role": g.pick([]any{"user", "bot", "channel"})}
	case r == 4:
		delete(a, "from")
		a["type"] = "conversationUpdate"
	case r == 5:
		a["type"] = "typing"
	}
	if g.rng.IntN(3) == 0 {
		a["timestamp"] = isoMillis(int64(g.rng.IntN(60_000)))
	}
	return a
}

func (g *holdGen) step() {
	ev := sortkeys.Event{Op: sortkeys.OpIncoming}
	switch r := g.rng.IntN(20); {
	case r < 2:
		ev.Op = sortkeys.OpAdvance
	case r == 2 && len(g.ids) > 0:
		ev.Op = sortkeys.OpDelete
		if id, ok := g.pick(g.ids).(string); ok {
			ev.ActivityID = id
		} else {
			ev.ActivityID = "h1"
		}
	case r == 3:
		cid := fmt.Sprintf("c%d", g.rng.IntN(4))
		g.sends = append(g.sends, cid)
		a := obj{"type": "message", "text": "hi", "from": obj{"id": userID, "role": "user"},
			"channelData": obj{"clientActivityID": cid}}
		if g.rng.IntN(3) == 0 {
			a["replyToId"] = g.replyTo()
		}
		ev.Op, ev.Activity = sortkeys.OpPost, mustJSON(a)
	case r < 6 && len(g.sends) > 0:
		i := g.rng.IntN(len(g.sends))
		cid := g.sends[i]
		id := g.fresh()
		g.delivered(id)
		a := obj{"type": "message", "id": id, "text": "hi", "from": obj{"id": userID},
			"channelData": obj{"clientActivityID": cid}}
		if g.rng.IntN(3) == 0 {
			a["replyToId"] = g.replyTo()
		}
		ev.Activity = mustJSON(a)
		if r == 5 {
			// Completed now; an echo sent as incoming (r == 4) may be completed later.
			g.sends = slices.Delete(g.sends, i, i+1)
			ev.Op, ev.ClientActivityID = sortkeys.OpFulfilled, cid
		}
	default:
		ev.Activity = mustJSON(g.activity())
	}
	ev.At = g.at()
	g.events = append(g.events, ev)
}

// TestHoldAgreesWithWebChatCore runs random logs through Web Chat's own sagas (hold.mjs), reply
// hold included, and through the model with Options.ReplyHold, and compares the order after
// every event.
func TestHoldAgreesWithWebChatCore(t *testing.T) {
	requireNode(t)
	for _, profile := range []sortkeys.Profile{sortkeys.GenA, sortkeys.GenB} {
		t.Run(string(profile), func(t *testing.T) {
			t.Parallel()
			logs := make([]genLog, *randomLogs)
			batch := make([]any, len(logs))
			for i := range logs {
				seed := *firstSeed + uint64(i)
				logs[i] = generateHold(seed, holdLength(seed))
				batch[i] = genLog{Name: logs[i].Name, UserID: userID, Events: withCheckpoints(logs[i].Events, 1)}
			}
			var failing []string
			for i, res := range sagas.run(t, profile, batch) {
				events := batch[i].(genLog).Events
				if res.Error != "" {
					t.Errorf("%s: hold.mjs rejected the log: %s", logs[i].Name, res.Error)
					continue
				}
				model, err := sagas.model(profile, events)
				if d := difference(events, res, model, err); d != "" {
					if len(failing) == 0 {
						t.Errorf("%s (%s): %s\n%s", logs[i].Name, profile, d, sagas.shrinkReport(t, profile, logs[i]))
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

// TestHoldRegressionLogs replays the logs under testdata/hold, each once a difference between
// the model's reply hold and Web Chat's, through both.
func TestHoldRegressionLogs(t *testing.T) {
	logs := loadRegressionLogs(t, filepath.Join("testdata", "hold"))
	for _, profile := range []sortkeys.Profile{sortkeys.GenA, sortkeys.GenB} {
		sagas.check(t, profile, logs)
	}
}
