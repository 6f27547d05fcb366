package sortkeys

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

func at(ms float64, ev Event) Event {
	ev.At = &ms
	return ev
}

// reply is a bot message without timestamp (so the order shows the delivery order).
func reply(id, replyTo string) Event {
	rt := ""
	if replyTo != "" {
		rt = fmt.Sprintf(`,"replyToId":%q`, replyTo)
	}
	return in(fmt.Sprintf(`{"type":"message","id":%q,"text":%q,"from":{"id":"bot"}%s}`, id, id, rt))
}

// TestReplyHold replays Web Chat's replyToId tests (WEBCHAT-ORDERING §9.5, queueIncomingActivitySaga)
// on the simulated clock.
func TestReplyHold(t *testing.T) {
	type step struct {
		ev    Event
		order string
	}
	cases := []struct {
		name  string
		hold  bool
		steps []step
	}{
		{"first bot activity is never held", true, []step{
			{at(0, reply("1.0", "0.0")), "1.0"},
			{at(100, reply("2.0", "0.0")), "1.0,2.0"}, // another activity already replies to 0.0
		}},
		{"subsequent set is held until the 5 s hold expires", true, []step{
			{at(0, reply("1.0", "")), "1.0"},
			{at(1000, reply("2.0", "0.0")), "1.0"},
			{at(3000, reply("2.1", "0.0")), "1.0"},
			{at(5999, Event{Op: OpAdvance}), "1.0"},
			{at(6000, Event{Op: OpAdvance}), "1.0,2.0,2.1"},
			{at(6100, reply("3.0", "0.0")), "1.0,2.0,2.1,3.0"},
		}},
		{"held until the awaited activity arrives", true, []step{
			{at(0, reply("b0", "")), "b0"},
			{at(10, reply("b2", "u1")), "b0"},
			{at(20, reply("b3", "")), "b0,b3"},
			{at(30, in(`{"type":"message","id":"u1","text":"hi","from":{"id":"u-user"}}`)), "b0,b3,u1,b2"},
		}},
		{"expiry is checked when the clock moves on any event", true, []step{
			{at(0, reply("b0", "")), "b0"},
			{at(10, reply("b2", "zz")), "b0"},
			{at(9000, reply("b3", "")), "b0,b2,b3"},
		}},
		{"a clock going backwards is ignored", true, []step{
			{at(0, reply("b0", "")), "b0"},
			{at(4000, reply("b2", "zz")), "b0"},
			{at(1000, Event{Op: OpAdvance}), "b0"},
			{at(8999, Event{Op: OpAdvance}), "b0"},
			{at(9000, Event{Op: OpAdvance}), "b0,b2"},
		}},
		{"without ReplyHold nothing waits", false, []step{
			{at(0, reply("b0", "")), "b0"},
			{at(10, reply("b2", "u1")), "b0,b2"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range []Profile{GenA, GenB, GenC} {
				r := New(Options{Profile: p, UserID: "u-user", ReplyHold: c.hold})
				for i, s := range c.steps {
					if err := r.Apply(s.ev); err != nil {
						t.Fatalf("%s step %d: %v", p, i, err)
					}
					if want := names(s.order); !slices.Equal(r.Names(), want) {
						t.Fatalf("%s step %d: %s", p, i, firstDiff(r.Names(), want))
					}
				}
			}
		})
	}
}

func TestReplyHoldArrival(t *testing.T) {
	r := New(Options{UserID: "u-user", ReplyHold: true})
	for _, ev := range []Event{at(0, reply("b0", "")), at(10, reply("b2", "zz")), at(7000, Event{Op: OpAdvance})} {
		if err := r.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	got := r.Order()
	if len(got) != 2 || got[1].Name != "b2" || got[1].Arrival != 2 {
		t.Fatalf("b2 should arrive with the event that released it (index 2): %+v", got)
	}
	var a map[string]any
	if err := json.Unmarshal(got[1].Activity, &a); err != nil || a["replyToId"] != "zz" {
		t.Fatalf("Item.Activity = %s, %v", got[1].Activity, err)
	}
}
