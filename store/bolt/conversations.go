package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/directline-go/directline/store"
)

// errConflict: the metadata changed between UpdateConversation's read and its write.
var errConflict = errors.New("store/bolt: conversation changed concurrently")

// CreateConversation creates c (Created defaults to the clock; LastSeq is ignored) if no
// conversation with c.ID exists, and returns the stored conversation and whether it was created
// now. An empty c.ID, or one longer than maxConversationID (32 KiB less 18 bytes), is an error.
func (s *Store) CreateConversation(ctx context.Context, c store.Conversation) (store.Conversation, bool, error) {
	if c.ID == "" || len(c.ID) > maxConversationID {
		return store.Conversation{}, false, fmt.Errorf("store/bolt: conversation id must be 1 to %d bytes", maxConversationID)
	}
	c = cloneConversation(c)
	c.LastSeq = 0
	if c.Created.IsZero() {
		c.Created = s.now()
	}
	c.Created = c.Created.UTC().Round(0)
	var (
		stored  store.Conversation
		created bool
	)
	err := s.submit(ctx, func(b *batch) error {
		if cs, err := b.conv(c.ID); err == nil {
			m, err := cs.metadata()
			if err != nil {
				return err
			}
			stored = cloneConversation(*m)
			return nil
		} else if !errors.Is(err, store.ErrConversationNotFound) {
			return err
		}
		cb, err := b.conversations.CreateBucket([]byte(c.ID))
		if err != nil {
			return fatal(err)
		}
		if _, err := cb.CreateBucket(bucketAttachments); err != nil {
			return fatal(err)
		}
		m := cloneConversation(c)
		b.convs[c.ID] = &convState{
			convLog:   convLog{bucketSet: b.bucketSet, id: c.ID, key: convKey(c.ID), head: head{recent: make([]recentEntry, 0, indexChunk)}},
			bucket:    cb,
			meta:      &m,
			metaDirty: true,
			headDirty: true,
		}
		stored, created = cloneConversation(c), true
		return nil
	})
	if err != nil {
		return store.Conversation{}, false, err
	}
	return stored, created, nil
}

// Conversation returns a conversation's metadata, or store.ErrConversationNotFound.
func (s *Store) Conversation(ctx context.Context, id string) (store.Conversation, error) {
	var c store.Conversation
	err := s.view(ctx, func(tx *bolt.Tx) error {
		var err error
		c, err = readConversation(buckets(tx), id)
		return err
	})
	if err != nil {
		return store.Conversation{}, err
	}
	return c, nil
}

// UpdateConversation applies fn to a copy of the stored metadata and stores the result, unless
// the metadata changed meanwhile, in which case it reads again and runs fn again (optimistic
// concurrency: fn runs outside the writer goroutine, so a slow or panicking fn cannot stall other
// writes). ID and LastSeq changes are ignored. Errors: store.ErrConversationNotFound, fn's error.
func (s *Store) UpdateConversation(ctx context.Context, id string, fn func(*store.Conversation) error) (store.Conversation, error) {
	for {
		cur, err := s.Conversation(ctx, id)
		if err != nil {
			return store.Conversation{}, err
		}
		next := cloneConversation(cur)
		if err := fn(&next); err != nil {
			return store.Conversation{}, err
		}
		next.ID = id
		next.Created = next.Created.UTC().Round(0)
		var stored store.Conversation
		err = s.submit(ctx, func(b *batch) error {
			cs, err := b.conv(id)
			if err != nil {
				return err
			}
			m, err := cs.metadata()
			if err != nil {
				return err
			}
			if !sameMetadata(*m, cur) {
				return errConflict
			}
			next.LastSeq = cs.head.seq
			cs.meta, cs.metaDirty = &next, true
			stored = cloneConversation(next)
			return nil
		})
		if errors.Is(err, errConflict) {
			continue
		}
		if err != nil {
			return store.Conversation{}, err
		}
		return stored, nil
	}
}

// sameMetadata compares two conversations' metadata, ignoring LastSeq, which appends change
// without touching the rest.
func sameMetadata(a, b store.Conversation) bool {
	a.LastSeq, b.LastSeq = 0, 0
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// Conversations lists conversations with id > after in id order (bytewise), at most limit
// (limit <= 0: all).
func (s *Store) Conversations(ctx context.Context, after string, limit int) ([]store.Conversation, error) {
	var out []store.Conversation
	err := s.view(ctx, func(tx *bolt.Tx) error {
		bs := buckets(tx)
		c := bs.conversations.Cursor()
		k, v := c.Seek([]byte(after))
		if k != nil && string(k) == after {
			k, v = c.Next()
		}
		for ; k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
			if v != nil {
				continue // not a bucket
			}
			c, err := readConversation(bs, string(k))
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return nil
	})
	return out, err
}

func cloneConversation(c store.Conversation) store.Conversation {
	c.Members = slices.Clone(c.Members)
	c.Properties = maps.Clone(c.Properties)
	return c
}

// readConversation returns a conversation's metadata, LastSeq included.
func readConversation(bs bucketSet, id string) (store.Conversation, error) {
	if id == "" {
		return store.Conversation{}, store.ErrConversationNotFound
	}
	cb := bs.conversations.Bucket([]byte(id))
	hv := bs.heads.Get([]byte(id))
	if cb == nil || hv == nil {
		return store.Conversation{}, store.ErrConversationNotFound
	}
	c, err := decodeMeta(cb.Get(keyMeta))
	if err != nil {
		return store.Conversation{}, err
	}
	h, err := decodeHead(hv)
	if err != nil {
		return store.Conversation{}, err
	}
	c.LastSeq = h.seq
	return c, nil
}
