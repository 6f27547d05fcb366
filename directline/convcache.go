package directline

import (
	"context"
	"sync"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// convCacheGeneration bounds each of convCache's two generations.
const convCacheGeneration = 4096

// convCache is the Server's store with the metadata of recently used conversations kept in
// memory: every POST of an activity, from a client or a bot, needs its conversation (bot account,
// bound user, members, bot endpoint), and reading and decoding it from the store each time cost
// as much as a tenth of the service's CPU.
//
// Only reads fill it. Every metadata write the service makes (CreateConversation,
// UpdateConversation, AppendIf, whose check may change properties) drops the conversation once
// the store has committed it, and a read that started before a drop does not fill, so a cached
// value is never older than the last committed write. It assumes, as the Server does, that no one
// else changes conversation metadata in the same store. The cached values are shared: callers
// only read them. LastSeq in them is not kept current (the reads that need it use Server.current). Two
// generations bound it like verifiedTokens.
type convCache struct {
	store.Store

	mu        sync.Mutex
	cur, prev map[string]store.Conversation
	// drops counts writes; a read fills only if none happened while it read the store.
	drops uint64
}

// Conversation returns the conversation's metadata from memory, else from the store.
func (c *convCache) Conversation(ctx context.Context, id string) (store.Conversation, error) {
	c.mu.Lock()
	conv, ok := c.cur[id]
	if !ok {
		if conv, ok = c.prev[id]; ok {
			delete(c.prev, id)
			c.putLocked(id, conv)
		}
	}
	drops := c.drops
	c.mu.Unlock()
	if ok {
		return conv, nil
	}
	conv, err := c.Store.Conversation(ctx, id)
	if err != nil {
		return conv, err
	}
	c.mu.Lock()
	if c.drops == drops {
		c.putLocked(id, conv)
	}
	c.mu.Unlock()
	return conv, nil
}

func (c *convCache) putLocked(id string, conv store.Conversation) {
	if len(c.cur) >= convCacheGeneration {
		c.prev, c.cur = c.cur, nil
	}
	if c.cur == nil {
		c.cur = make(map[string]store.Conversation)
	}
	c.cur[id] = conv
}

// drop forgets a conversation after a write to its metadata.
func (c *convCache) drop(id string) {
	c.mu.Lock()
	delete(c.cur, id)
	delete(c.prev, id)
	c.drops++
	c.mu.Unlock()
}

func (c *convCache) CreateConversation(ctx context.Context, conv store.Conversation) (store.Conversation, bool, error) {
	defer c.drop(conv.ID)
	return c.Store.CreateConversation(ctx, conv)
}

func (c *convCache) UpdateConversation(ctx context.Context, id string, fn func(*store.Conversation) error) (store.Conversation, error) {
	defer c.drop(id)
	return c.Store.UpdateConversation(ctx, id, fn)
}

func (c *convCache) AppendIf(ctx context.Context, id string, a *activity.Activity, check func(*store.Conversation) error) (store.AppendResult, error) {
	if check == nil {
		return c.Store.AppendIf(ctx, id, a, nil)
	}
	defer c.drop(id)
	return c.Store.AppendIf(ctx, id, a, check)
}
