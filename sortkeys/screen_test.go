package sortkeys

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestBubbleIDs: every bubble lists the ids of its key's revisions in the UI list, pending ones
// left out.
func TestBubbleIDs(t *testing.T) {
	msg := func(id string, sec int) Event {
		return in(botMsg(id, fmt.Sprintf(`,"timestamp":"2024-05-01T10:00:%02d.000Z"`, sec)))
	}
	interim := func(id, streamID string, sec, streamSeq int) Event {
		sid := ""
		if streamID != "" {
			sid = fmt.Sprintf(`,"streamId":%q`, streamID)
		}
		return in(fmt.Sprintf(`{"type":"typing","id":%q,"timestamp":"2024-05-01T10:00:%02d.000Z","from":{"id":"bot","role":"bot"},"text":"chunk","channelData":{"streamType":"streaming","streamSequence":%d%s}}`, id, sec, streamSeq, sid))
	}
	sent := func(cid string) Event {
		return post(fmt.Sprintf(`{"type":"message","localTimestamp":"2024-05-01T10:00:00.000Z","from":{"id":"u-user","role":"user"},"text":"hi","channelData":{"clientActivityID":%q}}`, cid))
	}
	echo := func(cid, id string, sec int, from string) string {
		return fmt.Sprintf(`{"type":"message","id":%q,"timestamp":"2024-05-01T10:00:%02d.000Z","localTimestamp":"2024-05-01T10:00:00.000Z","from":%s,"text":"hi","channelData":{"clientActivityID":%q}}`, id, sec, from, cid)
	}
	fulfilled := func(cid, id string, sec int) Event {
		return Event{Op: OpFulfilled, ClientActivityID: cid, Activity: json.RawMessage(echo(cid, id, sec, `{"id":"u-user","role":"user"}`))}
	}
	del := func(id string) Event { return Event{Op: OpDelete, ActivityID: id} }
	cases := []struct {
		name    string
		profile Profile
		events  []Event
		// want is each bubble as "name:id id ...".
		want string
	}{
		{"livestream", GenC, []Event{interim("r1", "", 1, 1), msg("x", 2), interim("r2", "r1", 3, 2)}, "r2:r1 r2,x:x"},
		{"livestream (gen-a)", GenA, []Event{interim("r1", "", 1, 1), msg("x", 2), interim("r2", "r1", 3, 2)}, "r2:r1 r2,x:x"},
		{"echo", GenC, []Event{sent("c1"), msg("b", 1), fulfilled("c1", "u1", 2), sent("c2")}, "b:b,u1:u1,c2:"},
		// An echo from another id without from.role is a bot's activity: the post stays pending
		// in the store, and the echo joins its bubble by clientActivityID (conformance
		// outgoing-echo-without-user-role).
		{"echo without role", GenC, []Event{sent("c1"), msg("b", 1), in(echo("c1", "u1", 2, `{"id":"dl_other-id"}`))}, "u1:u1,b:b"},
		{"update", GenC, []Event{msg("a", 1), msg("b", 2), msg("a", 3)}, "b:b,a:a"},
		{"deleted ghost", GenC, []Event{msg("a", 1), msg("b", 2), del("a")}, "a:a,b:b"},
		{"deleted ghost and redelivery", GenC, []Event{msg("a", 1), msg("b", 2), del("a"), msg("a", 3)}, "a:a a,b:b"},
	}
	for _, tc := range cases {
		for _, history := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/history=%v", tc.name, history), func(t *testing.T) {
				r := New(Options{Profile: tc.profile, UserID: "u-user", ScreenHistory: history})
				for i, ev := range tc.events {
					if err := r.Apply(ev); err != nil {
						t.Fatalf("event %d: %v", i, err)
					}
				}
				screen := r.Screen()
				var got []string
				for _, b := range screen {
					got = append(got, b.Name+":"+strings.Join(b.IDs, " "))
				}
				if strings.Join(got, ",") != tc.want {
					t.Fatalf("bubbles %q, want %q", strings.Join(got, ","), tc.want)
				}
				// The windows share one array: growing one must leave the next alone.
				for i := 0; i+1 < len(screen); i++ {
					next := slices.Clone(screen[i+1].IDs)
					_ = append(screen[i].IDs, "grown")
					if !slices.Equal(screen[i+1].IDs, next) {
						t.Fatalf("appending to bubble %d changed bubble %d: %v", i, i+1, screen[i+1].IDs)
					}
				}
			})
		}
	}
}
