package sortkeys

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGenCDeleteAfterRecreate deletes an activity of a HowTo grouping or a livestream session
// whose id an earlier, deleted one already used: the delete must reach the grouping or session the
// activity joined (the recreated one), whose timestamp or existence then decides where later
// activities go.
func TestGenCDeleteAfterRecreate(t *testing.T) {
	part := func(id, ts string) string {
		return `{"type":"message","id":"` + id + `","timestamp":"` + ts + `","entities":[{"type":"https://schema.org/Message",` +
			`"@type":"Message","@id":"","isPartOf":{"@id":"_:g","@type":"HowTo"},"position":1}]}`
	}
	stream := func(id, ts string) string {
		return `{"type":"typing","id":"` + id + `","timestamp":"` + ts + `","text":"x",` +
			`"channelData":{"streamType":"streaming","streamSequence":1}}`
	}
	plain := func(id, ts string) string {
		return `{"type":"message","id":"` + id + `","timestamp":"` + ts + `","text":"x"}`
	}
	for _, c := range []struct {
		name   string
		events []Event
		want   []string
	}{
		// b1 leaves the recreated grouping, whose timestamp drops to b2's: d1 comes after it.
		{"grouping", []Event{
			{Op: OpIncoming, Activity: json.RawMessage(part("a1", "2025-01-01T00:00:01Z"))},
			{Op: OpDelete, ActivityID: "a1"},
			{Op: OpIncoming, Activity: json.RawMessage(part("b1", "2025-01-01T00:00:05Z"))},
			{Op: OpIncoming, Activity: json.RawMessage(part("b2", "2025-01-01T00:00:03Z"))},
			{Op: OpDelete, ActivityID: "b1"},
			{Op: OpIncoming, Activity: json.RawMessage(plain("d1", "2025-01-01T00:00:04Z"))},
		}, []string{"b2", "d1"}},
		// The recreated session is deleted with its only activity: a third one with its id starts
		// a new session, after c1.
		{"session", []Event{
			{Op: OpIncoming, Activity: json.RawMessage(stream("s1", "2025-01-01T00:00:01Z"))},
			{Op: OpDelete, ActivityID: "s1"},
			{Op: OpIncoming, Activity: json.RawMessage(stream("s1", "2025-01-01T00:00:02Z"))},
			{Op: OpIncoming, Activity: json.RawMessage(plain("c1", "2025-01-01T00:00:09Z"))},
			{Op: OpDelete, ActivityID: "s1"},
			{Op: OpIncoming, Activity: json.RawMessage(stream("s1", "2025-01-01T00:00:10Z"))},
		}, []string{"c1", "s1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := New(Options{Profile: GenC, UserID: "u"})
			for _, ev := range c.events {
				if err := r.Apply(ev); err != nil {
					t.Fatal(err)
				}
			}
			if got := r.Names(); !slices.Equal(got, c.want) {
				t.Fatalf("order %q, want %q", got, c.want)
			}
		})
	}
}

// TestPrefetchLeaf asks for the leaf lines of units in a B-tree whose slot hints removals left
// stale, and of units out of the list: a prefetch must neither fault nor change the tree.
func TestPrefetchLeaf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fast, ref := newBtreeList(), &sliceList{}
	var in []*unit
	for n := 0; n < 3000; n++ {
		u := &unit{kind: unitActivity, ts: num(float64(rng.IntN(500)))}
		i := ref.FirstGreater(u)
		fast.Insert(u, i)
		ref.Insert(u, i)
		in = append(in, u)
	}
	for _, u := range in[:1000] {
		fast.Remove(u)
		ref.Remove(u)
	}
	prefetch(nil)
	for _, u := range in {
		prefetchLeaf(u)
	}
	for i := 0; i < ref.Len(); i++ {
		if fast.At(i) != ref.At(i) || fast.Index(ref.At(i)) != i {
			t.Fatalf("unit %d moved", i)
		}
	}
}
