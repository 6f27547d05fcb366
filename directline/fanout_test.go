package directline

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
)

// idsOf lists the ids of activities, and separately the ids of the typing ones.
func idsOf(acts []map[string]any) (all []string, typing map[string]bool) {
	typing = map[string]bool{}
	for _, a := range acts {
		id, _ := a["id"].(string)
		all = append(all, id)
		if a["type"] == "typing" {
			typing[id] = true
		}
	}
	return all, typing
}

// seqOf reads channelData["webchat:sequence-id"] as an integer.
func seqOf(t *testing.T, a map[string]any) int {
	t.Helper()
	cd, _ := a["channelData"].(map[string]any)
	n, ok := cd["webchat:sequence-id"].(float64)
	if !ok || n != float64(int(n)) {
		t.Fatalf("activity %v has no integer sequence id", a["id"])
	}
	return int(n)
}

// TestTwoSocketsAndPollerSameOrderInvariant7 guards DESIGN invariants 7 and 8 end to end through the
// HTTP routes: two sockets on one conversation and one poller see the same activities in the same
// (sequence) order while several clients post concurrently; typing activities arrive live on the
// sockets but never in GET; a socket dropped mid-stream and resumed with its last watermark
// receives exactly the activities it missed.
func TestTwoSocketsAndPollerSameOrderInvariant7(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	cid := conv.ConversationID
	reconnect := func(watermark string) string {
		r := e.do(request{method: http.MethodGet, path: "/conversations/" + cid + "?watermark=" + watermark, auth: conv.Token})
		mustStatus(t, r, http.StatusOK)
		var re conversationResponse
		r.decode(t, &re)
		return re.StreamURL
	}
	a := e.dial(conv.StreamURL)
	b := e.dial(reconnect(""))
	c := e.dial(reconnect(""))

	const writers, perWriter = 4, 15
	post := func(w, n int) {
		typ := "message"
		if n%5 == 4 {
			typ = "typing"
		}
		e.post(conv.Token, cid, map[string]any{"type": typ, "text": fmt.Sprintf("w%d-%d", w, n),
			"channelData": map[string]any{"clientActivityID": fmt.Sprintf("w%d-%d", w, n)}})
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perWriter {
				post(w, n)
			}
		}()
	}

	// c reads the first part, then drops while the writers go on.
	first, cWatermark := readActivities(t, c, 20)
	c.Close()
	wg.Wait()

	const total = writers * perWriter
	gotA, _ := readActivities(t, a, total)
	gotB, _ := readActivities(t, b, total)
	idsA, typing := idsOf(gotA)
	idsB, _ := idsOf(gotB)
	if len(idsA) != total || fmt.Sprint(idsA) != fmt.Sprint(idsB) {
		t.Fatalf("the two sockets disagree:\nA %v\nB %v", idsA, idsB)
	}
	for i, act := range gotA {
		if got := seqOf(t, act); got != i+1 {
			t.Fatalf("socket activity %d has sequence id %d, want %d (gap, duplicate or reorder)", i, got, i+1)
		}
	}
	if len(typing) != writers*(perWriter/5) {
		t.Fatalf("%d typing activities arrived live, want %d", len(typing), writers*(perWriter/5))
	}

	// The poller pages through history: the same order without the typing activities.
	var polled []string
	watermark := ""
	for {
		acts, wm := e.history(conv.Token, cid, watermark)
		if len(acts) == 0 {
			break
		}
		ids, _ := idsOf(acts)
		polled = append(polled, ids...)
		watermark = wm
	}
	var wantPolled []string
	for _, id := range idsA {
		if !typing[id] {
			wantPolled = append(wantPolled, id)
		}
	}
	if fmt.Sprint(polled) != fmt.Sprint(wantPolled) {
		t.Fatalf("poller saw\n%v\nwant (socket order without typing)\n%v", polled, wantPolled)
	}
	if watermark != strconv.Itoa(total) {
		t.Errorf("final GET watermark %q, want %d (it covers the typing activities)", watermark, total)
	}

	// c resumes from its last watermark: exactly the missed replayable activities, then live ones.
	firstIDs, _ := idsOf(first)
	if fmt.Sprint(firstIDs) != fmt.Sprint(idsA[:len(firstIDs)]) {
		t.Fatalf("dropped socket saw %v before dropping, want a prefix of %v", firstIDs, idsA)
	}
	resumedAt, err := strconv.Atoi(cWatermark)
	if err != nil || resumedAt < len(firstIDs) {
		t.Fatalf("watermark of the dropped socket %q after %d activities", cWatermark, len(firstIDs))
	}
	var missed []string
	for _, id := range idsA[resumedAt:] {
		if !typing[id] {
			missed = append(missed, id)
		}
	}
	c2 := e.dial(reconnect(cWatermark))
	resumed, _ := readActivities(t, c2, len(missed))
	if got, _ := idsOf(resumed); fmt.Sprint(got) != fmt.Sprint(missed) {
		t.Fatalf("resumed socket got\n%v\nwant exactly the missed activities\n%v", got, missed)
	}
	post(9, 4) // typing
	post(9, 0) // message
	live, _ := readActivities(t, c2, 2)
	if live[0]["type"] != "typing" || live[1]["type"] != "message" || seqOf(t, live[0]) != total+1 || seqOf(t, live[1]) != total+2 {
		t.Fatalf("after resume the live activities are %v", live)
	}
	if acts, _ := e.history(conv.Token, cid, strconv.Itoa(total)); len(acts) != 1 || acts[0]["type"] != "message" {
		t.Fatalf("GET after the live typing returned %v, want only the message", acts)
	}
}
