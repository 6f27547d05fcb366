package bolt

import (
	"bytes"
	"context"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/directline-go/directline/store"
)

// Group commit. Every write is a request queued for one writer goroutine, which takes everything
// queued (up to maxBatch requests) and runs it in one bbolt write transaction: many appends to
// many conversations share one fsync. A request that fails on its own input (unknown
// conversation, unknown activity, a conflict) records its error and leaves the transaction
// untouched, so it does not fail the others; only a storage error (a failed Put or commit) fails
// the whole batch, and then bbolt's rollback takes every seq of the batch with it (DESIGN
// invariant 1).
//
// Request functions run on the writer goroutine only, so they need no locking. The only caller
// code that runs there is AppendIf's precondition, which must be quick; UpdateConversation's fn
// runs on the caller's goroutine (optimistic concurrency, see UpdateConversation).

// maxBatch bounds one transaction, so one commit's memory and latency stay bounded however long
// the queue gets.
const maxBatch = 1024

// maxLinger bounds how long the writer waits for a batch to fill (see linger).
const maxLinger = 2 * time.Millisecond

type request struct {
	// op runs inside the batch transaction. It must validate before it mutates: an error it
	// returns is the request's own, unless it is a *storageError, which fails the batch.
	op   func(b *batch) error
	err  error
	done chan struct{}
}

// storageError marks an error that leaves the transaction in an unknown state.
type storageError struct{ err error }

func (e *storageError) Error() string { return e.err.Error() }
func (e *storageError) Unwrap() error { return e.err }

func fatal(err error) error {
	if err == nil {
		return nil
	}
	return &storageError{err: err}
}

// batch is the state of one write transaction.
type batch struct {
	s *Store
	bucketSet
	convs map[string]*convState
	// order lists the conversations with new entries, in the order of their first new entry.
	order []*convState
	// appended counts the log entries written, for the Observer (order is only kept for OnCommit).
	appended int
}

// convState caches a conversation's head and buckets for the duration of one batch; the head is
// read once and written back once per batch, the JSON metadata only when needed.
type convState struct {
	convLog
	// bucket is the conversation's own bucket once a request needed it (nil before): appends do
	// not.
	bucket    *bolt.Bucket
	headDirty bool
	// meta is the decoded metadata once a request needed it (nil before).
	meta      *store.Conversation
	metaDirty bool
	// entries are the batch's new entries for the commit hook, in seq order.
	entries []store.Entry
}

// maxCachedHeads bounds Store.headCache: a few KiB at most per head, so a few MiB in all.
const maxCachedHeads = 1024

// cachedHead is a conversation's head as last committed, with its convKey.
type cachedHead struct {
	key  []byte
	head head
}

// conv returns the batch's state for a conversation, or store.ErrConversationNotFound.
func (b *batch) conv(id string) (*convState, error) {
	if c, ok := b.convs[id]; ok {
		return c, nil
	}
	if ch, ok := b.s.headCache[id]; ok {
		// The batch changes its copy of the head; commit caches it again only if the batch
		// commits. Appends may reuse the room after the entries of the cached recent slice, and
		// moving a full chunk to the index rewrites it from the start, so a failed batch drops
		// the whole cache.
		c := &convState{convLog: convLog{bucketSet: b.bucketSet, id: id, key: ch.key, head: ch.head}}
		b.convs[id] = c
		return c, nil
	}
	// The head is decoded from a copy: its clientActivityIDs are written again as index keys.
	l, err := openConvLog(b.bucketSet, id, bytes.Clone(b.heads.Get([]byte(id))))
	if err != nil {
		return nil, err
	}
	c := &convState{convLog: l}
	b.convs[id] = c
	return c, nil
}

// ownBucket returns the conversation's own bucket (metadata and attachments).
func (c *convState) ownBucket() (*bolt.Bucket, error) {
	if c.bucket == nil {
		if c.bucket = c.conversations.Bucket([]byte(c.id)); c.bucket == nil {
			return nil, errors.New("store/bolt: conversation " + c.id + " is missing its bucket")
		}
	}
	return c.bucket, nil
}

// add stores record v as the conversation's next entry at the log's next position, and returns
// its seq.
func (b *batch) add(c *convState, v, cid []byte) (uint64, error) {
	seq, err := c.add(b.s.nextPos, v, cid)
	if err != nil {
		return 0, err
	}
	b.s.nextPos++
	c.headDirty = true
	return seq, nil
}

// metadata returns the conversation's metadata, LastSeq included.
func (c *convState) metadata() (*store.Conversation, error) {
	if c.meta == nil {
		cb, err := c.ownBucket()
		if err != nil {
			return nil, err
		}
		m, err := decodeMeta(cb.Get(keyMeta))
		if err != nil {
			return nil, err
		}
		c.meta = &m
	}
	c.meta.LastSeq = c.head.seq
	return c.meta, nil
}

// emit records a new entry for the commit hook. Its activity must be the hook's own copy, so
// fan-out never shares memory with the caller's result.
func (b *batch) emit(c *convState, e store.Entry) {
	if len(c.entries) == 0 {
		b.order = append(b.order, c)
	}
	c.entries = append(c.entries, e)
}

// flush writes back the state changed in this batch.
func (b *batch) flush() error {
	for _, c := range b.convs {
		if c.headDirty {
			if err := b.heads.Put([]byte(c.id), c.head.encode()); err != nil {
				return err
			}
		}
		if c.metaDirty {
			v, err := encodeMeta(*c.meta)
			if err != nil {
				return err
			}
			cb, err := c.ownBucket()
			if err != nil {
				return err
			}
			if err := cb.Put(keyMeta, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// submit queues op and waits for its batch to commit. A cancelled ctx is honoured until the
// request is queued; after that the request completes, so the caller learns its outcome.
func (s *Store) submit(ctx context.Context, op func(b *batch) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{op: op, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	s.queue = append(s.queue, r)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-r.done
	return r.err
}

// run is the writer goroutine. It exits once the store is closed and the queue is drained.
func (s *Store) run() {
	defer close(s.stopped)
	var (
		prev     int           // size of the previous batch
		prevTook time.Duration // duration of the previous commit
	)
	for {
		s.mu.Lock()
		n, closed := len(s.queue), s.closed
		s.mu.Unlock()
		if n == 0 {
			if closed {
				return
			}
			<-s.wake
			continue
		}
		if n < prev && !closed {
			s.linger(prev, min(prevTook/4, maxLinger))
		}
		s.mu.Lock()
		reqs := s.queue
		if len(reqs) > maxBatch {
			reqs = reqs[:maxBatch:maxBatch]
			s.queue = s.queue[maxBatch:]
		} else {
			s.queue = nil
		}
		s.mu.Unlock()
		prev = len(reqs)
		start := time.Now()
		s.commit(reqs)
		prevTook = time.Since(start)
	}
}

// linger waits up to d for the queue to reach want requests. Right after a commit the writers
// it answered are still on their way back; committing the first one alone would cost a whole
// fsync and halve the next batch. Waiting for as many as the previous batch had, for at most a
// quarter of the previous commit's duration, keeps batches full under load (the slower the disk,
// the more a full batch is worth) and costs nothing to a lone writer, whose previous batch had
// one request.
func (s *Store) linger(want int, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-s.wake:
		case <-timer.C:
			return
		}
		s.mu.Lock()
		n, closed := len(s.queue), s.closed
		s.mu.Unlock()
		if n >= want || closed {
			return
		}
	}
}

// commit runs one batch: all requests in one transaction and one durable commit, then the commit
// hook per conversation in seq order, then the callers are woken.
func (s *Store) commit(reqs []*request) {
	s.commits.Add(1)
	b := &batch{s: s, convs: make(map[string]*convState)}
	var applied time.Time // when every write was applied and bbolt's commit began
	err := s.db.Update(func(tx *bolt.Tx) error {
		b.bucketSet = buckets(tx)
		// The log only grows at its end: full pages instead of bbolt's half-full splits.
		b.log.FillPercent = 0.95
		for _, r := range reqs {
			err := r.op(b)
			var se *storageError
			if errors.As(err, &se) {
				return se.err
			}
			r.err = err
		}
		err := b.flush()
		applied = time.Now()
		return err
	})
	if err != nil {
		s.log.Error("store commit failed", "requests", len(reqs), "err", err)
		clear(s.headCache)
		for _, r := range reqs {
			if r.err == nil {
				r.err = err
			}
		}
	} else {
		s.cacheHeads(b)
		if s.observer != nil {
			s.observer.Committed(len(reqs), b.appended, time.Since(applied))
		}
		if s.onCommit != nil {
			for _, c := range b.order {
				s.onCommit(c.id, c.entries)
			}
		}
	}
	for _, r := range reqs {
		close(r.done)
	}
}

// cacheHeads keeps the heads of a committed batch's conversations for the next batches, making
// room by dropping arbitrary other heads when the cache is full.
func (s *Store) cacheHeads(b *batch) {
	if s.headCache == nil {
		s.headCache = make(map[string]cachedHead, len(b.convs))
	}
	for id, c := range b.convs {
		if _, ok := s.headCache[id]; !ok && len(s.headCache) >= maxCachedHeads {
			for old := range s.headCache {
				delete(s.headCache, old)
				break
			}
		}
		s.headCache[id] = cachedHead{key: c.key, head: c.head}
	}
}
