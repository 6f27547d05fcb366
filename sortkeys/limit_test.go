package sortkeys

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

// TestLogTooLong starts replays with their counters at the limit of a record's 32-bit numbers:
// the last event that fits is applied, the next one is refused and changes nothing.
func TestLogTooLong(t *testing.T) {
	msg := in(`{"type":"message","id":"m","from":{"id":"bot"}}`)
	// A fulfilled event without an earlier echo makes two revisions.
	echo := Event{Op: OpFulfilled, ClientActivityID: "c",
		Activity: json.RawMessage(`{"type":"message","id":"e","from":{"id":"u","role":"user"},"channelData":{"clientActivityID":"c"}}`)}
	for _, p := range []Profile{GenC, GenA} {
		for _, c := range []struct {
			name         string
			events, revs int
			ev           Event
			want         error
		}{
			{"last event", math.MaxInt32 - 1, 0, msg, nil},
			{"one event more", math.MaxInt32, 0, msg, ErrLogTooLong},
			{"last two revisions", 0, math.MaxInt32 - 2, echo, nil},
			{"one revision more", 0, math.MaxInt32 - 1, echo, ErrLogTooLong},
		} {
			r := New(Options{Profile: p})
			r.st.events, r.st.revs = c.events, c.revs
			if err := r.Apply(c.ev); !errors.Is(err, c.want) {
				t.Errorf("%s/%s: %v, want %v", p, c.name, err, c.want)
				continue
			}
			if c.want != nil {
				if r.Len() != 0 || r.st.events != c.events || r.st.revs != c.revs {
					t.Errorf("%s/%s: the refused event was applied", p, c.name)
				}
			} else if got := r.Order()[0].Arrival; got != c.events {
				t.Errorf("%s/%s: arrival %d, want %d", p, c.name, got, c.events)
			}
		}
	}
}

// TestActivityTooLarge lowers the longest activity a record holds: one of that length is applied,
// a byte more is refused and changes nothing, whichever event delivers it.
func TestActivityTooLarge(t *testing.T) {
	defer func(n int) { maxActivityLen = n }(maxActivityLen)
	fits := `{"type":"message","id":"m","from":{"id":"bot"}}`
	maxActivityLen = len(fits)
	over := `{"type":"message","id":"m2","from":{"id":"bot"}}`
	for _, p := range []Profile{GenC, GenA} {
		for _, c := range []struct {
			name string
			ev   Event
			want error
		}{
			{"incoming that fits", in(fits), nil},
			{"incoming a byte longer", in(over), ErrActivityTooLarge},
			{"post a byte longer", Event{Op: OpPost, Activity: json.RawMessage(over)}, ErrActivityTooLarge},
			{"echo a byte longer", Event{Op: OpFulfilled, ClientActivityID: "c", Activity: json.RawMessage(over)}, ErrActivityTooLarge},
		} {
			r := New(Options{Profile: p})
			if err := r.Apply(c.ev); !errors.Is(err, c.want) {
				t.Errorf("%s/%s: %v, want %v", p, c.name, err, c.want)
				continue
			}
			want := 1
			if c.want != nil {
				want = 0
			}
			if r.Len() != want {
				t.Errorf("%s/%s: %d activities, want %d", p, c.name, r.Len(), want)
			}
		}
	}
}
