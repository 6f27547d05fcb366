// Package bolt is the store.Store on a single bbolt file.
//
// Writes go through one writer goroutine that commits everything queued in one transaction and
// one fsync (group commit, see writer.go), so a durable append costs a share of an fsync. Reads
// are bbolt read transactions and run concurrently with the writer. The bucket layout and the
// record encoding are described in codec.go.
package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/directline-go/directline/store"
)

// Options configure a Store. The zero value is durable and uses the real clock.
type Options struct {
	// OnCommit, if set, receives each conversation's new entries (activities and revisions, in
	// seq order, each once; never duplicates) after every durable commit, from the writer
	// goroutine, before the writers are answered. It must not block.
	OnCommit store.CommitHook
	// Now is the clock for timestamps and creation times; nil means time.Now.
	Now func() time.Time
	// NoSync skips fsync on commit. Acknowledged writes may then be lost on a crash (DESIGN
	// invariant 5 no longer holds): for benchmarks and throwaway data only.
	NoSync bool
	// LockTimeout bounds the wait for the file lock when another process holds the file open;
	// 0 means 10 s.
	LockTimeout time.Duration
	// Logger receives storage failures; nil means slog.Default().
	Logger *slog.Logger
	// Observer, if set, receives the group commit writer's measurements; nil means none.
	Observer Observer
}

// Observer receives the writer's measurements; a metrics package implements it. It is called from
// the writer goroutine after every durable commit, before the writers are answered, and must not
// block.
type Observer interface {
	// Committed reports one write transaction: requests is how many writes it grouped (see
	// writer.go), entries how many log entries (activities and revisions) it appended, and d how
	// long bbolt took to commit it once every write was applied (page writes and fsync).
	Committed(requests, entries int, d time.Duration)
}

// Store is a store.Store backed by one bbolt file. Use Open; all methods are safe for
// concurrent use.
type Store struct {
	db       *bolt.DB
	now      func() time.Time
	onCommit store.CommitHook
	observer Observer
	log      *slog.Logger

	mu     sync.Mutex // guards queue and closed
	queue  []*request
	closed bool

	wake    chan struct{} // a request was queued, or the store is closing
	stopped chan struct{} // closed when the writer goroutine has exited

	// decodes counts activity JSON decodes and visits the log records ReadAfter looks at, so
	// tests can check that a read costs O(entries read), whatever the history before it.
	decodes, visits atomic.Uint64
	// commits counts write transactions, so benchmarks can report requests per commit.
	commits atomic.Uint64

	// nextPos is the log position of the next record; only the writer goroutine uses it.
	nextPos uint64
	// headCache holds the heads of conversations recent batches used, as committed, so the next
	// batch neither reads nor decodes them again; only the writer goroutine uses it (see
	// batch.conv and commit).
	headCache map[string]cachedHead
}

var _ store.Store = (*Store)(nil)

// openBolt is bolt.Open, with the panics bbolt raises on pages it cannot make sense of (a damaged
// freelist) turned into ErrDamaged.
func openBolt(path string, o *bolt.Options) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w: %s: %v", ErrDamaged, path, r)
		}
	}()
	return bolt.Open(path, 0o600, o)
}

// checkLength refuses a file shorter than its newest meta page says it is: bbolt maps the file
// and would touch the missing pages, which kills the process (SIGBUS) rather than fail. A missing
// or empty file is a new store. The meta page layout is bbolt's file format (version 2): after a
// 16-byte page header, magic, version and page size (uint32 each), flags, the root bucket (16
// bytes), the freelist page id, the high-water page id and the transaction id (uint64 each).
func checkLength(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store/bolt: open %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return err
	}
	const magic = 0xED0CDAED
	var hdr [72]byte
	var need, txid uint64
	for _, off := range []int64{0, -1} {
		if off < 0 {
			// The second meta page follows the first, one page further.
			off = int64(binary.LittleEndian.Uint32(hdr[24:28]))
		}
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return fmt.Errorf("%w: %s: its header is cut short", ErrDamaged, path)
		}
		if binary.LittleEndian.Uint32(hdr[16:20]) != magic {
			if off == 0 {
				return fmt.Errorf("%w: %s: not a bbolt file", ErrDamaged, path)
			}
			continue
		}
		pageSize := uint64(binary.LittleEndian.Uint32(hdr[24:28]))
		if id := binary.LittleEndian.Uint64(hdr[64:72]); id >= txid {
			txid, need = id, binary.LittleEndian.Uint64(hdr[56:64])*pageSize
		}
	}
	if uint64(info.Size()) < need {
		return fmt.Errorf("%w: %s: %d bytes where its header needs %d (a copy taken while the service wrote?)", ErrDamaged, path, info.Size(), need)
	}
	return nil
}

// ErrDamaged is returned by Open for a file that is not a whole bbolt file: cut short (a copy
// taken while the service wrote, a full disk) or overwritten.
var ErrDamaged = errors.New("store/bolt: the data file is damaged")

// Open opens or creates the store file at path (mode 0600) and starts its writer. Errors:
// ErrDamaged (wrapped, naming the file), a lock timeout, I/O errors.
func Open(path string, opts Options) (*Store, error) {
	timeout := opts.LockTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	if err := checkLength(path); err != nil {
		return nil, err
	}
	db, err := openBolt(path, &bolt.Options{
		Timeout:      timeout,
		NoSync:       opts.NoSync,
		FreelistType: bolt.FreelistMapType,
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("store/bolt: open %s: the file is locked by another process (is another instance running on it?): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("store/bolt: open %s: %w", path, err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	var nextPos uint64
	if err := db.Update(func(tx *bolt.Tx) error {
		var err error
		nextPos, err = prepare(tx, path, logger)
		return err
	}); err != nil {
		db.Close()
		return nil, err
	}
	s := &Store{
		db:       db,
		now:      opts.Now,
		onCommit: opts.OnCommit,
		observer: opts.Observer,
		log:      logger,
		nextPos:  nextPos,
		wake:     make(chan struct{}, 1),
		stopped:  make(chan struct{}),
	}
	if s.now == nil {
		s.now = time.Now
	}
	go s.run()
	return s, nil
}

// Close waits for the queued writes to commit (and their commit hook calls to return) and closes
// the file. Later calls, Close included, return store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.stopped
	return s.db.Close()
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// view runs fn in a read transaction.
func (s *Store) view(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.isClosed() {
		return store.ErrClosed
	}
	err := s.db.View(fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return store.ErrClosed
	}
	return err
}

// prepare makes the file ready for format 2: it creates the buckets of a new file, migrates a
// format 1 file, and refuses a file of another format. It returns the next log position.
func prepare(tx *bolt.Tx, path string, logger *slog.Logger) (uint64, error) {
	if fb := tx.Bucket(bucketFormat); fb != nil {
		if v := fb.Get(keyVersion); string(v) != formatVersion {
			return 0, fmt.Errorf("store/bolt: %s has data format %q, this version reads format %s only", path, v, formatVersion)
		}
	} else {
		format1 := tx.Bucket(bucketConversations) != nil
		for _, name := range [][]byte{bucketFormat, bucketLog, bucketHeads, bucketIndex, bucketClientIDs, bucketConversations} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return 0, fmt.Errorf("store/bolt: initialise %s: %w", path, err)
			}
		}
		if format1 {
			n, err := migrateFormat1(buckets(tx))
			if err != nil {
				return 0, fmt.Errorf("store/bolt: migrate %s from data format 1: %w", path, err)
			}
			logger.Info("store data file migrated to format "+formatVersion, "path", path, "conversations", n)
		}
		if err := tx.Bucket(bucketFormat).Put(keyVersion, []byte(formatVersion)); err != nil {
			return 0, fmt.Errorf("store/bolt: initialise %s: %w", path, err)
		}
	}
	bs := buckets(tx)
	if bs.log == nil || bs.heads == nil || bs.index == nil || bs.clientIDs == nil || bs.conversations == nil {
		return 0, fmt.Errorf("store/bolt: %s is missing a bucket of data format %s", path, formatVersion)
	}
	if k, _ := bs.log.Cursor().Last(); k != nil {
		return keySeq(k) + 1, nil
	}
	return 1, nil
}

func conversationBucket(tx *bolt.Tx, id string) (*bolt.Bucket, error) {
	if id == "" {
		return nil, store.ErrConversationNotFound
	}
	cb := tx.Bucket(bucketConversations).Bucket([]byte(id))
	if cb == nil {
		return nil, store.ErrConversationNotFound
	}
	return cb, nil
}

// nowMs is the clock in Unix milliseconds, the resolution of activity timestamps.
func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

func unixNanoUTC(n int64) time.Time { return time.Unix(0, n).UTC() }
