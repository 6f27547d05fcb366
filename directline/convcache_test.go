package directline

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
	"github.com/directline-go/directline/store/bolt"
)

// pausingStore lets a test hold a Conversation read after the store answered it.
type pausingStore struct {
	store.Store
	reads   int
	read    chan struct{} // receives once a read has its answer, when pause is set
	resume  chan struct{}
	pause   bool
	lastGot store.Conversation
}

func (p *pausingStore) Conversation(ctx context.Context, id string) (store.Conversation, error) {
	c, err := p.Store.Conversation(ctx, id)
	p.reads++
	if p.pause {
		p.pause = false
		p.read <- struct{}{}
		<-p.resume
	}
	return c, err
}

func openTestStore(t *testing.T) store.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "directline.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestConvCacheSeesEveryWrite: after each kind of metadata write the service makes, the next
// read returns the written metadata, not what was cached before; reads in between come from
// memory.
func TestConvCacheSeesEveryWrite(t *testing.T) {
	ctx := context.Background()
	ps := &pausingStore{Store: openTestStore(t)}
	c := &convCache{Store: ps}
	if _, _, err := c.CreateConversation(ctx, store.Conversation{ID: "c1", Created: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	read := func(step string) store.Conversation {
		t.Helper()
		conv, err := c.Conversation(ctx, "c1")
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return conv
	}
	read("created")
	before := ps.reads
	read("again")
	if ps.reads != before {
		t.Fatal("a second read went to the store")
	}

	writes := []struct {
		name  string
		write func() error
		check func(store.Conversation) bool
	}{
		{"UpdateConversation", func() error {
			_, err := c.UpdateConversation(ctx, "c1", func(cv *store.Conversation) error {
				cv.Members = append(cv.Members, store.Member{ID: "u1", Role: activity.RoleUser})
				return nil
			})
			return err
		}, func(cv store.Conversation) bool { return containsMember(cv.Members, "u1") }},
		{"AppendIf with a check", func() error {
			a := &activity.Activity{Type: activity.TypeMessage, From: &activity.ChannelAccount{ID: "bot", Role: activity.RoleBot}}
			_, err := c.AppendIf(ctx, "c1", a, func(cv *store.Conversation) error {
				cv.Properties = cloneProps(cv.Properties)
				cv.Properties[propBotID] = "named"
				return nil
			})
			return err
		}, func(cv store.Conversation) bool { return cv.Properties[propBotID] == "named" }},
		{"CreateConversation of an existing id", func() error {
			_, _, err := c.CreateConversation(ctx, store.Conversation{ID: "c1", Created: time.Now().UTC(), UserID: "ignored"})
			return err
		}, func(cv store.Conversation) bool { return containsMember(cv.Members, "u1") }},
	}
	for _, w := range writes {
		if err := w.write(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		if got := read(w.name); !w.check(got) {
			t.Fatalf("after %s the read returned %+v", w.name, got)
		}
	}
}

// TestConvCacheReadAcrossWrite: a read that got its answer from the store before a write
// committed returns that answer but does not keep it, so the read after the write sees the write.
func TestConvCacheReadAcrossWrite(t *testing.T) {
	ctx := context.Background()
	ps := &pausingStore{Store: openTestStore(t), read: make(chan struct{}), resume: make(chan struct{})}
	c := &convCache{Store: ps}
	if _, _, err := ps.CreateConversation(ctx, store.Conversation{ID: "c1", Created: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	ps.pause = true
	done := make(chan store.Conversation)
	go func() {
		conv, _ := c.Conversation(ctx, "c1")
		done <- conv
	}()
	<-ps.read // the read holds the metadata from before the write
	if _, err := c.UpdateConversation(ctx, "c1", func(cv *store.Conversation) error {
		cv.UserID = "u1"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	close(ps.resume)
	if old := <-done; old.UserID != "" {
		t.Fatalf("the paused read returned %+v", old)
	}
	if conv, err := c.Conversation(ctx, "c1"); err != nil || conv.UserID != "u1" {
		t.Fatalf("the read after the write returned %+v, %v", conv, err)
	}
}

// everyConversation answers every id with a conversation of that id.
type everyConversation struct{ store.Store }

func (everyConversation) Conversation(_ context.Context, id string) (store.Conversation, error) {
	return store.Conversation{ID: id}, nil
}

// TestConvCacheBounded: at most two generations are kept, and a conversation in use stays.
func TestConvCacheBounded(t *testing.T) {
	ctx := context.Background()
	c := &convCache{Store: everyConversation{}}
	for i := range 2*convCacheGeneration + 10 {
		if conv, err := c.Conversation(ctx, fmt.Sprint("c", i)); err != nil || conv.ID != fmt.Sprint("c", i) {
			t.Fatalf("c%d: %+v, %v", i, conv, err)
		}
		if _, err := c.Conversation(ctx, "c0"); err != nil {
			t.Fatal(err)
		}
		if size := len(c.cur) + len(c.prev); size > 2*convCacheGeneration {
			t.Fatalf("%d conversations kept, bound %d", size, 2*convCacheGeneration)
		}
	}
	_, hot := c.cur["c0"]
	_, cold := c.cur["c1"]
	_, coldPrev := c.prev["c1"]
	if !hot || cold || coldPrev {
		t.Fatalf("in use kept: %v; unused kept: %v", hot, cold || coldPrev)
	}
}
