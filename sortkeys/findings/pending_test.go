package findings

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/directline-go/directline/sortkeys"
)

// scanPendingWithText is pendingWithText by a walk: one list per type and text, whose posts no
// longer pending at its head it drops, then a walk over the rest for a pending post a's sender may
// have sent. It is the reference TestPendingWithTextMatchesScan compares with.
func scanPendingWithText(byText map[string][]*post, posts map[string]*post, a *act) *post {
	text := a.text()
	if text == "" {
		return nil
	}
	k := textKey(a.typ, text)
	ps := byText[k]
	for len(ps) > 0 && (ps[0].echoed || posts[ps[0].cid] != ps[0]) {
		ps = ps[1:]
	}
	if len(ps) == 0 {
		delete(byText, k)
		return nil
	}
	byText[k] = ps
	for _, p := range ps {
		pending := !p.echoed && posts[p.cid] == p
		if pending && (p.fromID == "" || len(a.from.id) == 0 || p.fromID == string(a.from.id)) {
			return p
		}
	}
	return nil
}

// pendingLog is a random log of posts sharing a few texts, clientActivityIDs posted again, and
// user activities with and without clientActivityIDs, ids and from.ids, echoing some of them.
func pendingLog(rng *rand.Rand, n int) []sortkeys.Event {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	from := func() string {
		return pick(`,"from":{"id":"u-user","role":"user"}`, `,"from":{"id":"dl_u-user","role":"user"}`,
			`,"from":{"id":"other","role":"user"}`, `,"from":{"role":"user"}`, `,"from":{"id":"","role":"user"}`,
			`,"from":{"id":5,"role":"user"}`, `,"from":{"id":"u-user"}`, ``)
	}
	text := func() string { return pick(`,"text":"hi"`, `,"text":"hi"`, `,"text":"yo"`, `,"text":""`, ``) }
	typ := func() string { return pick("message", "message", "message", "event") }
	cid := func() string { return fmt.Sprintf("c%d", rng.Intn(12)) }
	evs := make([]sortkeys.Event, n)
	for i := range evs {
		stamp := fmt.Sprintf(`"timestamp":%q,"localTimestamp":%q`, shapeTS(i), shapeTS(i))
		switch r := rng.Intn(100); {
		case r < 40:
			cd := fmt.Sprintf(`,"channelData":{"clientActivityID":%q}`, cid())
			if rng.Intn(20) == 0 {
				cd = ""
			}
			evs[i] = posted(fmt.Sprintf(`{"type":%q,"localTimestamp":%q%s%s%s}`, typ(), shapeTS(i), from(), text(), cd))
		case r < 80:
			id := ""
			if rng.Intn(5) > 0 {
				id = fmt.Sprintf(`,"id":"a%d"`, i)
			}
			cd := ""
			switch rng.Intn(4) {
			case 0:
				cd = fmt.Sprintf(`,"channelData":{"clientActivityID":%q}`, cid())
			case 1:
				cd = fmt.Sprintf(`,"channelData":{"clientActivityID":"x%d"}`, rng.Intn(3))
			}
			evs[i] = in(fmt.Sprintf(`{"type":%q,%s%s%s%s%s}`, typ(), stamp, id, from(), text(), cd))
		case r < 90:
			c := cid()
			evs[i] = fulfilled(c, fmt.Sprintf(`{"type":"message",%s,"id":"f%d"%s%s,"channelData":{"clientActivityID":%q}}`, stamp, i, from(), text(), c))
		default:
			evs[i] = in(fmt.Sprintf(`{"type":"message",%s,"id":"b%d","from":{"id":"bot","role":"bot"}%s}`, stamp, i, text()))
		}
	}
	return evs
}

// TestPendingWithTextMatchesScan replays random logs through the checker and, before each
// delivery, asks pendingWithText and the reference scan which post it may echo: they must name
// the same one. The suspects the delivery itself records must name it too. Passed over counts
// the lookups whose earliest pending post has another sender.
func TestPendingWithTextMatchesScan(t *testing.T) {
	seeds, n := 300, 400
	if testing.Short() {
		seeds = 100
	}
	asked, found, passedOver, suspects := 0, 0, 0, 0
	for seed := 1; seed <= seeds; seed++ {
		rng := rand.New(rand.NewSource(int64(seed)))
		evs := pendingLog(rng, n)
		c := newChecker(Options{UserID: userID}, evs)
		ref := map[string][]*post{}
		for i, ev := range evs {
			var a act
			if !a.parse(ev.Activity, userID) {
				t.Fatalf("seed %d event %d: not an object", seed, i)
			}
			if ev.Op != sortkeys.OpPost {
				want := scanPendingWithText(ref, c.posts, &a)
				if got := c.pendingWithText(&a); got != want {
					t.Fatalf("seed %d event %d: pendingWithText gives %+v, the scan %+v", seed, i, got, want)
				}
				asked++
				if want != nil {
					found++
				}
				if ps := ref[textKey(a.typ, a.text())]; a.text() != "" && len(ps) > 0 && ps[0] != want {
					passedOver++
				}
				before := len(c.suspects)
				c.event(i, ev)
				if len(c.suspects) > before {
					suspects++
					if got := c.suspects[before].post; got != want {
						t.Fatalf("seed %d event %d: the suspect names %+v, the scan %+v", seed, i, got, want)
					}
				}
				continue
			}
			c.event(i, ev)
			if text := a.text(); a.clientID != "" && text != "" {
				k := textKey(a.typ, text)
				ref[k] = append(ref[k], c.posts[a.clientID])
			}
		}
	}
	t.Logf("%d seeds of %d events: %d lookups, %d found a post, %d passed over the earliest pending one, %d suspects", seeds, n, asked, found, passedOver, suspects)
	if found == 0 || passedOver == 0 || suspects == 0 || found == asked {
		t.Fatalf("the logs do not exercise the lookup: %d of %d found, %d passed over, %d suspects", found, asked, passedOver, suspects)
	}
}
