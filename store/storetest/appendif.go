package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/directline-go/directline/store"
)

var errRefused = errors.New("refused by check")

// testAppendIf: the precondition sees the conversation's metadata, its error stores nothing and
// takes no seq, its Properties changes are stored with the entry (and survive a reopen), and a
// duplicate resend does not call it.
func testAppendIf(t *testing.T, f Factory) {
	var hooked atomic.Int64
	s, dir := open(t, f, Config{OnCommit: func(_ string, es []store.Entry) { hooked.Add(int64(len(es))) }})
	ctx := context.Background()
	createConversation(t, s, "c")
	appendOK(t, s, "c", message("one", ""))

	var sawSeq uint64
	r, err := s.AppendIf(ctx, "c", message("two", "c2"), func(cv *store.Conversation) error {
		sawSeq = cv.LastSeq
		if cv.Properties == nil {
			cv.Properties = map[string]string{}
		}
		cv.Properties["k"] = "v"
		return nil
	})
	if err != nil || r.Seq != 2 || r.Duplicate {
		t.Fatalf("AppendIf = seq %d duplicate %v, %v; want 2 false nil", r.Seq, r.Duplicate, err)
	}
	if sawSeq != 1 {
		t.Errorf("check saw LastSeq %d, want 1", sawSeq)
	}
	checkStamp(t, "c", 2, r.Activity)

	_, err = s.AppendIf(ctx, "c", message("three", ""), func(cv *store.Conversation) error {
		if cv.Properties["k"] != "v" {
			return fmt.Errorf("check saw properties %v", cv.Properties)
		}
		return errRefused
	})
	if !errors.Is(err, errRefused) {
		t.Fatalf("refused AppendIf: %v, want the check's error", err)
	}
	called := false
	dup, err := s.AppendIf(ctx, "c", message("two again", "c2"), func(*store.Conversation) error {
		called = true
		return errRefused
	})
	if err != nil || !dup.Duplicate || dup.Seq != 2 || called {
		t.Fatalf("resend through AppendIf = seq %d duplicate %v, %v, check called %v; want 2 true nil false", dup.Seq, dup.Duplicate, err, called)
	}
	if _, err := s.AppendIf(ctx, "nope", message("x", ""), nil); !errors.Is(err, store.ErrConversationNotFound) {
		t.Errorf("AppendIf on an unknown conversation: %v", err)
	}
	r, err = s.AppendIf(ctx, "c", message("four", ""), nil)
	if err != nil || r.Seq != 3 {
		t.Fatalf("AppendIf after a refusal = seq %d, %v; want 3 (a refusal takes no seq)", r.Seq, err)
	}
	checkLog(t, s, "c", 3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := hooked.Load(); n != 3 {
		t.Errorf("commit hook saw %d entries, want 3", n)
	}
	s = reopen(t, f, dir, Config{})
	cv, err := s.Conversation(ctx, "c")
	if err != nil || cv.Properties["k"] != "v" || cv.LastSeq != 3 {
		t.Fatalf("after reopen: %+v, %v; want properties k=v and LastSeq 3", cv, err)
	}
}

// testAppendIfConcurrent: a check-and-set in the precondition is atomic with the append: of many
// concurrent appends claiming the same property, exactly one is stored.
func testAppendIfConcurrent(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	createConversation(t, s, "c")
	var stored, refused atomic.Int64
	parallel(32, func(i int) {
		_, err := s.AppendIf(context.Background(), "c", message(fmt.Sprintf("try %d", i), ""), func(cv *store.Conversation) error {
			if cv.Properties["claimed"] != "" {
				return errRefused
			}
			if cv.Properties == nil {
				cv.Properties = map[string]string{}
			}
			cv.Properties["claimed"] = fmt.Sprint(i)
			return nil
		})
		switch {
		case err == nil:
			stored.Add(1)
		case errors.Is(err, errRefused):
			refused.Add(1)
		default:
			t.Errorf("AppendIf: %v", err)
		}
	})
	if stored.Load() != 1 || refused.Load() != 31 {
		t.Fatalf("%d stored, %d refused; want 1 and 31", stored.Load(), refused.Load())
	}
	checkLog(t, s, "c", 1)
}
