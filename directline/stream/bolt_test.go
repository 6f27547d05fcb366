package stream

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
	"github.com/directline-go/directline/store/bolt"
)

// boltEnv serves a hub over a real bbolt store whose commit hook feeds the hub.
func boltEnv(t *testing.T) (*env, *bolt.Store) {
	t.Helper()
	var hub *Hub
	st, err := bolt.Open(filepath.Join(t.TempDir(), "directline.db"), bolt.Options{
		OnCommit: func(conv string, entries []store.Entry) { hub.OnCommit(conv, entries) },
		NoSync:   true,
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, Options{}, false, st)
	hub = e.hub
	t.Cleanup(func() { st.Close() })
	if _, _, err := st.CreateConversation(context.Background(), store.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	return e, st
}

func mustAppend(t *testing.T, st *bolt.Store, a *activity.Activity) store.Entry {
	t.Helper()
	r, err := st.Append(context.Background(), "c", a)
	if err != nil {
		t.Fatal(err)
	}
	return r.Entry
}

// R08 and R24 over the real store: history after the watermark once, typing live only, a
// revision live with its own watermark and in history at its original place.
func TestBoltStoreResumeTypingAndRevisionR08R24(t *testing.T) {
	e, st := boltEnv(t)
	ctx := context.Background()
	for _, text := range []string{"U1", "B1", "U2", "B2"} { // seqs 1..4
		mustAppend(t, st, message(text))
	}
	live := e.dial(q("c", "watermark", "3"), 1)
	mustAppend(t, st, typing())                                                                     // 5
	mustAppend(t, st, message("B3"))                                                                // 6
	if _, err := st.Update(ctx, "c", activity.FormatID("c", 2), message("B1 edited")); err != nil { // 7
		t.Fatal(err)
	}
	var got []uint64
	var last map[string]any
	for {
		f := mustReadFrame(t, live)
		got = append(got, f.seqs(t)...)
		last = f.Activities[len(f.Activities)-1]
		if f.Watermark == "7" {
			break
		}
	}
	// Sequence ids: B2 from history, typing and B3 live, then the revision of B1 (keeps 2).
	if want := []uint64{4, 5, 6, 2}; !slices.Equal(got, want) || last["text"] != "B1 edited" {
		t.Fatalf("sequence ids %v, last %v; want %v ending with B1 edited", got, last, want)
	}
	resumed := e.dial(q("c", "watermark", "1"), 2)
	f := mustReadFrame(t, resumed)
	if want := []uint64{2, 3, 4, 6}; !slices.Equal(f.seqs(t), want) || f.Activities[0]["text"] != "B1 edited" {
		t.Fatalf("resumed history %v %v, want %v with B1 edited", f.seqs(t), f.Activities, want)
	}
}

// Invariant 7 over the real store: concurrent writers, one socket dropped and resumed by
// watermark; every message arrives once, in seq order.
func TestBoltStoreResumeWhileWritingInvariant7(t *testing.T) {
	e, st := boltEnv(t)
	const writers, each = 4, 40
	ws := e.dial(q("c"), 1)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				mustAppend(t, st, message(strconv.Itoa(w)+"-"+strconv.Itoa(i)))
			}
		}()
	}
	var got []uint64
	for len(got) < 30 {
		got = append(got, mustReadFrame(t, ws).seqs(t)...)
	}
	ws.Close()
	ws2 := e.dialRaw(q("c", "watermark", strconv.FormatUint(got[len(got)-1], 10)), nil)
	got = append(got, readSeqs(t, ws2, writers*each)...)
	wg.Wait()
	if want := seqRange(1, writers*each); !slices.Equal(got, want) {
		t.Fatalf("got %v, want 1..%d", got, writers*each)
	}
}
