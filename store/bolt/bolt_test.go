package bolt

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
	"github.com/directline-go/directline/store/storetest"
)

func openForSuite(t testing.TB, dir string, cfg storetest.Config) store.Store {
	t.Helper()
	s, err := Open(filepath.Join(dir, "directline.db"), Options{OnCommit: cfg.OnCommit, Now: cfg.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Factory{Open: openForSuite})
}

// openConversation opens a store in a fresh folder with opts and creates conversation id in it;
// the store is closed when the test ends.
func openConversation(t *testing.T, opts Options, id string) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "test.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, _, err := s.CreateConversation(context.Background(), store.Conversation{ID: id}); err != nil {
		t.Fatal(err)
	}
	return s
}

func message(text, clientActivityID string) *activity.Activity {
	a := &activity.Activity{Type: activity.TypeMessage, Text: text}
	if clientActivityID != "" {
		a.SetChannelData(activity.KeyClientActivityID, []byte(strconv.Quote(clientActivityID)))
	}
	return a
}

// TestReadAfterCostIsLimit: reading near the end of a long history decodes only the entries it
// returns; skipped ephemeral entries are judged by their header alone (store.go: "Cost is a
// cursor seek plus the entries read").
func TestReadAfterCostIsLimit(t *testing.T) {
	s := openConversation(t, Options{NoSync: true}, "long")
	ctx := context.Background()
	// Odd seqs are messages, even seqs typing.
	for i := range 1000 {
		a := message(fmt.Sprintf("m%d", i), "")
		if i%2 == 1 {
			a = &activity.Activity{Type: activity.TypeTyping}
		}
		if _, err := s.Append(ctx, "long", a); err != nil {
			t.Fatal(err)
		}
	}
	// A revised activity near the end costs one decode too: its latest content only.
	es, _, err := s.ReadAfter(ctx, "long", 990, 1)
	if err != nil || len(es) != 1 {
		t.Fatalf("ReadAfter: %v, %v", es, err)
	}
	if _, err := s.Update(ctx, "long", es[0].Activity.ID, message("revised", "")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		watermark uint64
		limit     int
	}{{950, 10}, {0, 10}, {980, 5}, {500, 3}} {
		decodes, visits := s.decodes.Load(), s.visits.Load()
		es, wm, err := s.ReadAfter(ctx, "long", tc.watermark, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		decodes, visits = s.decodes.Load()-decodes, s.visits.Load()-visits
		if len(es) != tc.limit || decodes != uint64(tc.limit) {
			t.Errorf("ReadAfter(%d, %d): %d entries, %d decodes; want %d of each", tc.watermark, tc.limit, len(es), decodes, tc.limit)
		}
		// From an even watermark, limit messages are the next 2*limit-1 records.
		if want := 2*uint64(tc.limit) - 1; visits != want || wm != tc.watermark+want {
			t.Errorf("ReadAfter(%d, %d): looked at %d records, watermark %d; want %d records, watermark %d",
				tc.watermark, tc.limit, visits, wm, want, tc.watermark+want)
		}
	}
}

// crashDirEnv makes the test binary a writer child for TestCrashKeepsAcknowledged.
const crashDirEnv = "DIRECTLINE_STORE_CRASH_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// crashChild appends from many goroutines until it is killed, printing "ack <conv> <seq> <cid>"
// after each Append returns.
func crashChild(dir string) {
	s, err := Open(filepath.Join(dir, "crash.db"), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	for c := range 4 {
		if _, _, err := s.CreateConversation(ctx, store.Conversation{ID: fmt.Sprintf("c%d", c)}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	pid := os.Getpid()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				conv := fmt.Sprintf("c%d", (w+i)%4)
				cid := fmt.Sprintf("p%d-w%d-%d", pid, w, i)
				r, err := s.Append(ctx, conv, message(cid, cid))
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Fprintf(out, "ack %s %d %s\n", conv, r.Seq, cid)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestCrashKeepsAcknowledged (DESIGN invariants 1 and 5): a writer process killed with SIGKILL
// in the middle of group commits loses no acknowledged append and leaves no hole; after reopen
// the sequence continues.
func TestCrashKeepsAcknowledged(t *testing.T) {
	dir := t.TempDir()
	acked := map[string]map[uint64]string{} // conv → seq → clientActivityID
	for round := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		n := 0
		for sc.Scan() {
			var (
				conv, cid string
				seq       uint64
			)
			if _, err := fmt.Sscanf(sc.Text(), "ack %s %d %s", &conv, &seq, &cid); err != nil {
				t.Fatalf("child wrote %q: %v", sc.Text(), err)
			}
			if acked[conv] == nil {
				acked[conv] = map[uint64]string{}
			}
			if prev, ok := acked[conv][seq]; ok {
				t.Fatalf("%s seq %d acknowledged twice: %s and %s", conv, seq, prev, cid)
			}
			acked[conv][seq] = cid
			if n++; n == 200 {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
			}
		}
		cmd.Wait()
		if n < 200 {
			t.Fatalf("round %d: child stopped after %d acks: %s", round, n, stderr.String())
		}
	}
	s, err := Open(filepath.Join(dir, "crash.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for conv, bySeq := range acked {
		log, err := s.ReadLog(ctx, conv, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for i, e := range log {
			if e.Seq != uint64(i+1) {
				t.Fatalf("%s: entry %d has seq %d: hole after a crash", conv, i, e.Seq)
			}
			cid := e.Activity.ClientActivityID()
			if seen[cid] {
				t.Fatalf("%s: %s stored twice", conv, cid)
			}
			seen[cid] = true
		}
		for seq, cid := range bySeq {
			if seq > uint64(len(log)) || log[seq-1].Activity.ClientActivityID() != cid {
				t.Errorf("%s: acknowledged seq %d (%s) lost after the crash", conv, seq, cid)
			}
		}
		c, err := s.Conversation(ctx, conv)
		if err != nil || c.LastSeq != uint64(len(log)) {
			t.Errorf("%s: LastSeq %d, log %d, %v", conv, c.LastSeq, len(log), err)
		}
		r, err := s.Append(ctx, conv, message("after", ""))
		if err != nil || r.Seq != uint64(len(log))+1 {
			t.Errorf("%s: append after the crash got seq %d, %v; want %d", conv, r.Seq, err, len(log)+1)
		}
	}
}

// TestOpenLockedFileSaysSo: a second process (here a second Open) on the same file gets an error
// that names the lock rather than a bare timeout.
func TestOpenLockedFileSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dl.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(path, Options{LockTimeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("second Open: %v", err)
	}
}

// TestOpenDamagedFile: a file cut short, overwritten or not bbolt at all is ErrDamaged naming
// it, never a crash of the process; an empty file is a new store.
func TestOpenDamagedFile(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good.db")
	s, err := Open(good, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateConversation(context.Background(), store.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if _, err := s.Append(context.Background(), "c", message(strings.Repeat("x", 200), fmt.Sprintf("c%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	noise := bytes.Repeat([]byte{0xA5, 0x3C, 0xFF, 0x01}, 1024)
	// The newest meta page names the freelist page (bbolt's layout, as checkLength reads it).
	pageSize := int(binary.LittleEndian.Uint32(data[24:28]))
	meta := data[:80]
	if second := data[pageSize : pageSize+80]; binary.LittleEndian.Uint64(second[64:72]) > binary.LittleEndian.Uint64(meta[64:72]) {
		meta = second
	}
	freelist := int(binary.LittleEndian.Uint64(meta[48:56])) * pageSize
	overwritten := append([]byte(nil), data...)
	copy(overwritten[freelist:], noise[:pageSize])
	for _, tc := range []struct {
		name    string
		content []byte
		damaged bool
	}{
		{"cut short after its meta pages", data[:8192], true},
		{"cut short in its header", data[:100], true},
		{"freelist overwritten", overwritten, true},
		{"not a bbolt file", bytes.Repeat([]byte("{}\n"), 5000), true},
		{"empty", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dl.db")
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			st, err := Open(path, Options{LockTimeout: time.Second})
			if st != nil {
				st.Close()
			}
			if got := errors.Is(err, ErrDamaged); got != tc.damaged || (tc.damaged && !strings.Contains(err.Error(), path)) {
				t.Fatalf("Open: %v; want damaged %v, naming the file", err, tc.damaged)
			}
		})
	}
}

// TestLongClientActivityIDs: clientActivityIDs of any length are deduplicated before and after
// their entries move to the index, and a long one does not make the conversation's head (which
// every append rewrites) long.
func TestLongClientActivityIDs(t *testing.T) {
	s := openConversation(t, Options{NoSync: true}, "c")
	ctx := context.Background()
	cids := []string{"short", strings.Repeat("m", maxHeadClientID), strings.Repeat("l", maxHeadClientID+1), strings.Repeat("x", 5000)}
	for _, cid := range cids {
		if _, err := s.Append(ctx, "c", message(cid[:1], cid)); err != nil {
			t.Fatal(err)
		}
	}
	headSize := func() int {
		var n int
		if err := s.db.View(func(tx *bolt.Tx) error {
			n = len(tx.Bucket(bucketHeads).Get([]byte("c")))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := headSize(); n > 24+4*(9+2)+len("short")+maxHeadClientID {
		t.Errorf("head is %d bytes with a %d-byte clientActivityID", n, len(cids[3]))
	}
	resend := func(when string) {
		for i, cid := range cids {
			r, err := s.Append(ctx, "c", message("again", cid))
			if err != nil || !r.Duplicate || r.Seq != uint64(i+1) {
				t.Errorf("%s: resend of the %d-byte clientActivityID: seq %d duplicate %v, %v; want seq %d", when, len(cid), r.Seq, r.Duplicate, err, i+1)
			}
		}
	}
	resend("in the head")
	for i := range indexChunk {
		if _, err := s.Append(ctx, "c", message("more", fmt.Sprintf("more-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	resend("in the index")
}

// TestAppendEntryJSON: an append's entry carries the stamped activity's encoding, the same bytes
// for the caller and the commit hook, whatever id, timestamp or sequence id the writer sent; the
// record read back decodes to the same activity.
func TestAppendEntryJSON(t *testing.T) {
	var hooked []store.Entry
	s, err := Open(filepath.Join(t.TempDir(), "json.db"), Options{NoSync: true, OnCommit: func(_ string, entries []store.Entry) {
		hooked = append(hooked, entries...)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, _, err := s.CreateConversation(ctx, store.Conversation{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	inputs := []string{
		`{"type":"message","text":"plain"}`,
		`{"type":"message","id":"forged","timestamp":"2000-01-01T00:00:00.000Z","channelData":{"webchat:sequence-id":99,"zz":1,"a":[1, 2]},"from":{"id":"u","x":{ }},"locale":"en-US"}`,
		`{"type":"typing","entities":[{"type":"streaminfo"}]}`,
		`{"text":"no type","channelData":{}}`,
	}
	for i, in := range inputs {
		a, err := activity.Decode([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Append(ctx, "c", a)
		if err != nil {
			t.Fatal(err)
		}
		want, err := activity.Encode(res.Activity)
		if err != nil {
			t.Fatal(err)
		}
		if string(res.JSON) != string(want) {
			t.Errorf("%s: result JSON\n %s\nwant %s", in, res.JSON, want)
		}
		if h := hooked[i]; string(h.JSON) != string(want) || h.Seq != res.Seq {
			t.Errorf("%s: hook entry seq %d JSON %s, want seq %d %s", in, h.Seq, h.JSON, res.Seq, want)
		}
		log, err := s.ReadLog(ctx, "c", res.Seq-1, 1)
		if err != nil || len(log) != 1 {
			t.Fatalf("ReadLog: %v %v", log, err)
		}
		if got, _ := activity.Encode(log[0].Activity); string(got) != string(want) {
			t.Errorf("%s: read back as %s, want %s", in, got, want)
		}
	}
	// A revision carries the original's id, timestamp and sequence id in its JSON too.
	first, err := s.Activity(ctx, "c", activity.FormatID("c", 1))
	if err != nil {
		t.Fatal(err)
	}
	revised, err := activity.Decode([]byte(`{"type":"message","text":"revised","channelData":{"webchat:sequence-id":7}}`))
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Update(ctx, "c", first.ID, revised)
	if err != nil {
		t.Fatal(err)
	}
	want, err := activity.Encode(e.Activity)
	if err != nil {
		t.Fatal(err)
	}
	if seq, _ := e.Activity.SequenceID(); string(e.JSON) != string(want) || e.Activity.ID != first.ID || e.Activity.Timestamp != first.Timestamp || seq != 1 {
		t.Errorf("revision %+v JSON %s, want %s with the original's stamp", e.Activity, e.JSON, want)
	}
	if h := hooked[len(hooked)-1]; string(h.JSON) != string(want) || h.Seq != e.Seq || h.Kind != store.KindRevision {
		t.Errorf("hook revision seq %d kind %d JSON %s, want seq %d %s", h.Seq, h.Kind, h.JSON, e.Seq, want)
	}
}

// TestFailedBatchDropsCachedHeads: the writer keeps each conversation's head between batches;
// a batch that fails must not leave its changes in that cache. Here the failed batch fills a
// chunk, which rewrites the head's recent entries from the start, so a cache kept after it would
// lose the first clientActivityID and the position of seq 1.
func TestFailedBatchDropsCachedHeads(t *testing.T) {
	s := openConversation(t, Options{NoSync: true}, "c")
	ctx := context.Background()
	for i := 1; i < indexChunk; i++ {
		if _, err := s.Append(ctx, "c", message(fmt.Sprint("text-", i), fmt.Sprint("cid-", i))); err != nil {
			t.Fatal(err)
		}
	}
	injected := errors.New("injected storage failure")
	err := s.submit(ctx, func(b *batch) error {
		c, err := b.conv("c")
		if err != nil {
			return err
		}
		for _, cid := range []string{"lost-1", "lost-2"} {
			if _, err := b.add(c, encodeRecord(header{kind: store.KindActivity}, []byte(`{"type":"message"}`)), []byte(cid)); err != nil {
				return fatal(err)
			}
		}
		return fatal(injected)
	})
	if !errors.Is(err, injected) {
		t.Fatalf("failing batch: %v", err)
	}
	r, err := s.Append(ctx, "c", message("again", "cid-1"))
	if err != nil || !r.Duplicate || r.Seq != 1 || r.Activity.Text != "text-1" {
		t.Fatalf("resend of cid-1: seq %d duplicate %v text %q, %v; want the original seq 1", r.Seq, r.Duplicate, r.Activity.Text, err)
	}
	r, err = s.Append(ctx, "c", message("next", "lost-2"))
	if err != nil || r.Duplicate || r.Seq != indexChunk {
		t.Fatalf("append after the failed batch: seq %d duplicate %v, %v; want a new seq %d", r.Seq, r.Duplicate, err, indexChunk)
	}
	entries, _, err := s.ReadAfter(ctx, "c", 0, 2*indexChunk)
	if err != nil || len(entries) != indexChunk || entries[0].Activity.Text != "text-1" {
		t.Fatalf("history: %d entries, %v", len(entries), err)
	}
}
