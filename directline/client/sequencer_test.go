package client

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
)

func act(seq uint64, text string) *activity.Activity {
	a := &activity.Activity{Type: activity.TypeMessage, Text: text}
	a.Stamp(activity.FormatID("c1", seq), seq, "2026-01-01T00:00:00.000Z")
	return a
}

// step is one input to the sequencer: an activity, a frame end (frameWM) or a GET watermark
// (cover), or a give-up.
type step struct {
	a       *activity.Activity
	src     Source
	frameWM uint64
	cover   uint64
	giveUp  bool
}

func TestSequencerOrdersByPosition(t *testing.T) {
	rev := act(2, "two, edited")
	noSeq := &activity.Activity{Type: activity.TypeMessage, ID: "uuid-1", Text: "x"}
	tests := []struct {
		name      string
		watermark string
		steps     []step
		want      []string // delivered texts, "*" marks a revision
		events    []string
	}{
		{"in order", "", []step{{a: act(1, "1")}, {a: act(2, "2")}, {a: act(3, "3")}}, []string{"1", "2", "3"}, nil},
		{"reordered pair is delivered in order", "", []step{{a: act(1, "1")}, {a: act(3, "3")}, {a: act(2, "2")}}, []string{"1", "2", "3"}, []string{"out_of_order 2"}},
		{"duplicate is dropped and reported", "", []step{{a: act(1, "1")}, {a: act(2, "2")}, {a: act(2, "2")}}, []string{"1", "2"}, []string{"duplicate 2"}},
		{"duplicate while pending", "", []step{{a: act(1, "1")}, {a: act(3, "3")}, {a: act(3, "3")}, {a: act(2, "2")}}, []string{"1", "2", "3"}, []string{"duplicate 3", "out_of_order 2"}},
		{"revision is delivered again", "", []step{{a: act(1, "1")}, {a: act(2, "2")}, {a: rev, frameWM: 3}, {a: act(4, "4")}}, []string{"1", "2", "two, edited*", "4"}, nil},
		// The stream dropped position 3, the last of a frame whose watermark still names it.
		{"new activity before a dropped one is no revision", "", []step{{a: act(1, "1")}, {a: act(2, "2"), frameWM: 3}, {a: act(4, "4")}, {a: act(3, "3"), src: SourceFill}, {cover: 4}}, []string{"1", "2", "3", "4"}, []string{"gap_filled 3"}},
		{"start at zero", "", []step{{a: act(0, "0")}, {a: act(1, "1")}}, []string{"0", "1"}, nil},
		{"resume after watermark", "5", []step{{a: act(6, "6")}, {a: act(5, "5")}}, []string{"6"}, []string{"duplicate 5"}},
		{"hole filled from GET", "", []step{{a: act(1, "1")}, {a: act(3, "3")}, {a: act(2, "2"), src: SourceFill}, {a: act(3, "3"), src: SourceFill}, {cover: 3}}, []string{"1", "2", "3"}, []string{"gap_filled 2"}},
		{"typing hole covered by GET watermark", "", []step{{a: act(1, "1")}, {a: act(3, "3")}, {a: act(3, "3"), src: SourceFill}, {cover: 3}}, []string{"1", "3"}, []string{"gap_skipped 2-2"}},
		{"hole GET cannot cover is lost", "", []step{{a: act(1, "1")}, {a: act(4, "4")}, {cover: 2}, {giveUp: true}}, []string{"1", "4"}, []string{"gap_skipped 2-2", "lost 3-3"}},
		{"activities without position keep arrival order", "", []step{{a: noSeq}, {a: noSeq}}, []string{"x"}, []string{"duplicate 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got, events []string
			q := newSequencer("c1", tt.watermark, func(d Delivery) {
				s := d.Activity.Text
				if d.Revision {
					s += "*"
				}
				got = append(got, s)
			}, func(e Event) {
				switch e.Kind {
				case EventGapSkipped, EventLost:
					events = append(events, fmt.Sprintf("%s %d-%d", e.Kind, e.From, e.To))
				default:
					events = append(events, fmt.Sprintf("%s %d", e.Kind, e.Seq))
				}
			})
			for _, s := range tt.steps {
				switch {
				case s.giveUp:
					q.giveUp()
				case s.a == nil:
					q.coverTo(s.cover, q.highest())
				default:
					src := s.src
					if src == 0 {
						src = SourceStream
					}
					q.feed(s.a, encodedDigest(s.a), src, time.Now())
					if s.frameWM != 0 {
						q.frameEnd(s.a, s.frameWM)
					}
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("delivered %q, want %q", got, tt.want)
			}
			if !reflect.DeepEqual(events, tt.events) {
				t.Errorf("events %q, want %q", events, tt.events)
			}
			if q.gapOpen() {
				t.Errorf("a hole is still open at %d", q.next)
			}
		})
	}
}

func TestSequencerPositionFromID(t *testing.T) {
	q := newSequencer("c1", "", func(Delivery) {}, func(Event) {})
	a := &activity.Activity{ID: "c1|0000042"}
	if s, ok := q.position(a); !ok || s != 42 {
		t.Errorf("position of %s = %d, %v", a.ID, s, ok)
	}
	a.ChannelData = map[string]json.RawMessage{activity.KeySequenceID: json.RawMessage("7")}
	if s, ok := q.position(a); !ok || s != 7 {
		t.Errorf("sequence-id wins: got %d, %v", s, ok)
	}
	if _, ok := q.position(&activity.Activity{ID: "other|0000001"}); ok {
		t.Error("an id of another conversation has no position")
	}
}

// TestActivitySetDigests: the digest of a received activity is the same in a compact frame and in
// an indented answer, changes with the content, and equals the digest of the activity's own
// encoding; null entries stay nil.
func TestActivitySetDigests(t *testing.T) {
	const (
		compact  = `{"activities":[{"type":"message","id":"c1|0000001","text":"a <b> & c"},null],"watermark":"1"}`
		indented = "{\n  \"activities\": [\n    {\n      \"type\": \"message\",\n      \"id\": \"c1|0000001\",\n      \"text\": \"a <b> & c\"\n    },\n    null\n  ],\n  \"watermark\": 1\n}"
		revised  = `{"activities":[{"type":"message","id":"c1|0000001","text":"a <b> & d"},null],"watermark":"1"}`
	)
	decode := func(data string) ActivitySet {
		t.Helper()
		var s ActivitySet
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Activities) != 2 || s.Activities[0] == nil || s.Activities[1] != nil || s.Watermark != "1" {
			t.Fatalf("decoded %+v", s)
		}
		return s
	}
	c, i, r := decode(compact), decode(indented), decode(revised)
	if c.digest(0) != i.digest(0) {
		t.Error("the same activity has different digests compact and indented")
	}
	if c.digest(0) == r.digest(0) {
		t.Error("a revised activity has the digest of the original")
	}
	built := ActivitySet{Activities: []*activity.Activity{c.Activities[0]}}
	if built.digest(0) != c.digest(0) {
		t.Error("the digest of an encoded activity differs from the digest of the same JSON received")
	}
}

// TestSequencerDigestsTellRevisions: through a subscription's feed, a repeat with the same JSON
// is a duplicate and a repeat with other JSON under the same id is a revision.
func TestSequencerDigestsTellRevisions(t *testing.T) {
	var got []string
	var events []EventKind
	q := newSequencer("c1", "", func(d Delivery) {
		got = append(got, fmt.Sprintf("%s %s revision=%v", d.Activity.ID, d.Activity.Text, d.Revision))
	}, func(e Event) { events = append(events, e.Kind) })
	for _, data := range []string{
		`{"activities":[{"type":"message","id":"c1|0000001","text":"one"}],"watermark":"1"}`,
		`{"activities":[{"type":"message","id":"c1|0000001","text":"one"}],"watermark":"1"}`,
		`{"activities":[{"type":"message","id":"c1|0000001","text":"uno"}],"watermark":"2"}`,
	} {
		var s ActivitySet
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			t.Fatal(err)
		}
		q.feed(s.Activities[0], s.digest(0), SourceStream, time.Now())
	}
	want := []string{"c1|0000001 one revision=false", "c1|0000001 uno revision=true"}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(events, []EventKind{EventDuplicate}) {
		t.Fatalf("delivered %q, events %v", got, events)
	}
}
