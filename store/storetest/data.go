package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// testConversations: create (once), read, update and list conversation metadata.
func testConversations(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	ctx := context.Background()
	created := time.Date(2024, 5, 1, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	in := store.Conversation{
		ID: "conv-b", Created: created, UserID: "dl_u1", BotEndpoint: "http://127.0.0.1:3978/api/messages",
		Members: []store.Member{{ID: "dl_u1", Name: "You", Role: "user"}}, LastSeq: 42,
		Properties: map[string]string{"locale": "ja-JP"},
	}
	c, ok, err := s.CreateConversation(ctx, in)
	if err != nil || !ok {
		t.Fatalf("CreateConversation = %v, %v", ok, err)
	}
	if c.LastSeq != 0 || !c.Created.Equal(created) || c.UserID != "dl_u1" || len(c.Members) != 1 || c.Properties["locale"] != "ja-JP" {
		t.Errorf("created %+v, want the input with LastSeq 0", c)
	}
	again, ok, err := s.CreateConversation(ctx, store.Conversation{ID: "conv-b", UserID: "someone else"})
	if err != nil || ok || again.UserID != "dl_u1" {
		t.Errorf("second CreateConversation = %+v, %v, %v; want the stored one, false", again, ok, err)
	}
	withDefault, _, err := s.CreateConversation(ctx, store.Conversation{ID: "conv-a"})
	if err != nil || withDefault.Created.IsZero() {
		t.Errorf("CreateConversation without Created: %+v, %v; want Created set", withDefault, err)
	}
	for _, id := range []string{"conv-d", "conv-c"} {
		createConversation(t, s, id)
	}
	appendOK(t, s, "conv-b", message("hi", ""))

	got, err := s.Conversation(ctx, "conv-b")
	if err != nil {
		t.Fatal(err)
	}
	if got.LastSeq != 1 || !got.Created.Equal(created) || !slices.Equal(got.Members, in.Members) || got.BotEndpoint != in.BotEndpoint {
		t.Errorf("Conversation = %+v", got)
	}

	updated, err := s.UpdateConversation(ctx, "conv-b", func(c *store.Conversation) error {
		c.ID, c.LastSeq = "hijack", 99
		c.Started = true
		c.Members = append(c.Members, store.Member{ID: "bot", Role: "bot"})
		c.Properties["botFlag"] = "1"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if updated.ID != "conv-b" || updated.LastSeq != 1 || !updated.Started || len(updated.Members) != 2 || updated.Properties["botFlag"] != "1" {
		t.Errorf("UpdateConversation = %+v: want ID and LastSeq kept, the rest applied", updated)
	}
	if got, _ := s.Conversation(ctx, "conv-b"); mustJSON(t, got) != mustJSON(t, updated) {
		t.Errorf("stored %s, UpdateConversation answered %s", mustJSON(t, got), mustJSON(t, updated))
	}
	errFn := errors.New("refused")
	if _, err := s.UpdateConversation(ctx, "conv-b", func(c *store.Conversation) error {
		c.UserID = "changed"
		return errFn
	}); !errors.Is(err, errFn) {
		t.Errorf("UpdateConversation with failing fn: %v, want its error", err)
	}
	if got, _ := s.Conversation(ctx, "conv-b"); got.UserID != "dl_u1" {
		t.Errorf("failed UpdateConversation changed UserID to %q", got.UserID)
	}

	ids := func(cs []store.Conversation) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	for _, tc := range []struct {
		after string
		limit int
		want  []string
	}{
		{"", 0, []string{"conv-a", "conv-b", "conv-c", "conv-d"}},
		{"", 2, []string{"conv-a", "conv-b"}},
		{"conv-b", 2, []string{"conv-c", "conv-d"}},
		{"conv-bb", 10, []string{"conv-c", "conv-d"}},
		{"conv-d", 10, nil},
	} {
		cs, err := s.Conversations(ctx, tc.after, tc.limit)
		if err != nil || !slices.Equal(ids(cs), tc.want) {
			t.Errorf("Conversations(%q, %d) = %v, %v; want %v", tc.after, tc.limit, ids(cs), err, tc.want)
		}
	}
}

// testUpdateConversationConcurrent: concurrent read-modify-write updates are not lost.
func testUpdateConversationConcurrent(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	createConversation(t, s, "cnt")
	const n = 16
	parallel(n, func(i int) {
		if _, err := s.Append(context.Background(), "cnt", message("m", "")); err != nil {
			t.Errorf("Append: %v", err)
		}
		_, err := s.UpdateConversation(context.Background(), "cnt", func(c *store.Conversation) error {
			v, _ := strconv.Atoi(c.Properties["count"])
			if c.Properties == nil {
				c.Properties = map[string]string{}
			}
			c.Properties["count"] = strconv.Itoa(v + 1)
			return nil
		})
		if err != nil {
			t.Errorf("UpdateConversation: %v", err)
		}
	})
	c, err := s.Conversation(context.Background(), "cnt")
	if err != nil {
		t.Fatal(err)
	}
	if c.Properties["count"] != strconv.Itoa(n) || c.LastSeq != n {
		t.Errorf("count %q LastSeq %d, want %d %d", c.Properties["count"], c.LastSeq, n, n)
	}
}

// r22 is field case R22's activity, plus unknown members at every level.
const r22 = `{"type":"message","text":"hi","localTimestamp":"2024-05-01T19:00:00.123+09:00","localTimezone":"Asia/Tokyo",
 "from":{"id":"u1","name":"U","role":"user","avatarUrl":"x.png"},
 "conversation":{"id":"lossless","tenantId":"t"},
 "channelData":{"clientActivityID":"c9","custom":{"nested":[1, 2.50,"x"],"big":12345678901234567890}},
 "entities":[{"type":"ClientCapabilities","requiresBotState":true}],
 "attachments":[{"contentType":"application/vnd.microsoft.card.adaptive","content":{"type":"AdaptiveCard","body":[]},"futureAttachmentField":1}],
 "value":{"x":null,"y":[]},"futureField":{"a":[1,2]},"locale":"ja-JP"}`

// testLossless (DESIGN invariant 3, field case R22): what the client sent comes back unchanged
// from every read path and after reopen; only id, timestamp and the sequence id are added.
func testLossless(t *testing.T, f Factory) {
	var (
		mu     sync.Mutex
		hooked []store.Entry
	)
	cfg := Config{OnCommit: func(_ string, es []store.Entry) {
		mu.Lock()
		defer mu.Unlock()
		hooked = append(hooked, es...)
	}}
	s, dir := open(t, f, cfg)
	ctx := context.Background()
	createConversation(t, s, "lossless")
	in, err := activity.Decode([]byte(r22))
	if err != nil {
		t.Fatal(err)
	}
	r := appendOK(t, s, "lossless", in)
	check := func(what string, a *activity.Activity) {
		t.Helper()
		checkStamp(t, "lossless", 1, a)
		if got := string(a.Extra["localTimestamp"]); got != `"2024-05-01T19:00:00.123+09:00"` {
			t.Errorf("%s: localTimestamp %s, want it byte-identical", what, got)
		}
		// Numbers keep their spelling (2.50, 20 digits); only insignificant white space may change.
		if got, want := compact(t, a.ChannelData["custom"]), compact(t, in.ChannelData["custom"]); got != want {
			t.Errorf("%s: channelData.custom %s, want %s", what, got, want)
		}
		if got, want := withoutStamp(t, a), generic(t, []byte(r22)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: activity without the stamped keys is\n%v\nwant\n%v", what, got, want)
		}
	}
	check("Append result", r.Activity)
	es, _ := readAfter(t, s, "lossless", 0, 10)
	if len(es) != 1 {
		t.Fatalf("ReadAfter: %d entries, want 1", len(es))
	}
	check("ReadAfter", es[0].Activity)
	check("ReadLog", readLog(t, s, "lossless")[0].Activity)
	a, err := s.Activity(ctx, "lossless", r.Activity.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("Activity", a)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(hooked) != 1 {
		t.Fatalf("hook saw %d entries, want 1", len(hooked))
	}
	check("commit hook", hooked[0].Activity)
	mu.Unlock()
	s = reopen(t, f, dir, Config{})
	es, _ = readAfter(t, s, "lossless", 0, 10)
	check("ReadAfter after reopen", es[0].Activity)
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// withoutStamp is a's JSON as generic values, without the members the store stamps.
func withoutStamp(t *testing.T, a *activity.Activity) map[string]any {
	t.Helper()
	m := generic(t, []byte(mustJSON(t, a)))
	delete(m, "id")
	delete(m, "timestamp")
	cd := m["channelData"].(map[string]any)
	delete(cd, activity.KeySequenceID)
	return m
}

// generic decodes JSON keeping numbers as written, dropping top-level nulls as the activity
// type does.
func generic(t *testing.T, data []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	for k, v := range m {
		if v == nil {
			delete(m, k)
		}
	}
	return m
}

// testCallerActivityUnchanged: Append and Update stamp a copy; the caller's value is untouched.
func testCallerActivityUnchanged(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	createConversation(t, s, "copy")
	in := message("hello", "c1")
	before := mustJSON(t, in)
	r := appendOK(t, s, "copy", in)
	if got := mustJSON(t, in); got != before {
		t.Errorf("Append changed its argument: %s, was %s", got, before)
	}
	if r.Activity == in {
		t.Errorf("Append returned the caller's pointer")
	}
	r.Activity.Text = "changed by the caller"
	if es, _ := readAfter(t, s, "copy", 0, 1); es[0].Activity.Text != "hello" {
		t.Errorf("changing a result changed the store: %q", es[0].Activity.Text)
	}
}

// testReopen (DESIGN invariants 1, 2, 5, 6): after Close and reopen, everything is there, the
// sequence and the timestamps continue, and the resend index still works.
func testReopen(t *testing.T, f Factory) {
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	s, dir := open(t, f, Config{Now: func() time.Time { return t0 }})
	ctx := context.Background()
	conv, _, err := s.CreateConversation(ctx, store.Conversation{ID: "keep", UserID: "u1", Members: []store.Member{{ID: "u1"}}, Properties: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	m1 := appendOK(t, s, "keep", message("m1", "c1"))
	appendOK(t, s, "keep", typing())
	appendOK(t, s, "keep", message("m2", ""))
	if _, err := s.Update(ctx, "keep", m1.Activity.ID, message("m1 v2", "")); err != nil {
		t.Fatal(err)
	}
	att := store.Attachment{ID: "att1", ContentType: "image/png", Name: "a.png", Data: []byte{0, 1, 2, 255}, Created: t0}
	if err := s.PutAttachment(ctx, "keep", att); err != nil {
		t.Fatal(err)
	}
	wantLog := mustJSON(t, readLog(t, s, "keep"))
	wantHistory, _ := readAfter(t, s, "keep", 0, 0)
	lastTs := readLog(t, s, "keep")[2].Activity.Timestamp
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	var hooked []uint64
	s = reopen(t, f, dir, Config{
		Now:      func() time.Time { return t0.Add(-time.Hour) }, // the clock went back meanwhile
		OnCommit: func(_ string, es []store.Entry) { hooked = append(hooked, seqs(es)...) },
	})
	got, err := s.Conversation(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	conv.LastSeq = 4
	if mustJSON(t, got) != mustJSON(t, conv) {
		t.Errorf("conversation after reopen %s, want %s", mustJSON(t, got), mustJSON(t, conv))
	}
	if got := mustJSON(t, readLog(t, s, "keep")); got != wantLog {
		t.Errorf("log after reopen\n%s\nwant\n%s", got, wantLog)
	}
	if history, wm := readAfter(t, s, "keep", 0, 0); mustJSON(t, history) != mustJSON(t, wantHistory) || wm != 4 {
		t.Errorf("history after reopen %s wm %d, want %s wm 4", mustJSON(t, history), wm, mustJSON(t, wantHistory))
	}
	if r := appendOK(t, s, "keep", message("m1", "c1")); !r.Duplicate || r.Seq != 1 {
		t.Errorf("resend after reopen: duplicate %v seq %d, want true 1", r.Duplicate, r.Seq)
	}
	next := appendOK(t, s, "keep", message("m3", ""))
	if next.Seq != 5 || next.Activity.ID != activity.FormatID("keep", 5) {
		t.Errorf("append after reopen: seq %d id %q, want 5", next.Seq, next.Activity.ID)
	}
	if next.Activity.Timestamp <= lastTs {
		t.Errorf("append after reopen: timestamp %s not after %s", next.Activity.Timestamp, lastTs)
	}
	checkLog(t, s, "keep", 5)
	gotAtt, err := s.Attachment(ctx, "keep", "att1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotAtt.Data, att.Data) || gotAtt.ContentType != att.ContentType || gotAtt.Name != att.Name || !gotAtt.Created.Equal(t0) {
		t.Errorf("attachment after reopen %+v, want %+v", gotAtt, att)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hooked, []uint64{5}) {
		t.Errorf("hook after reopen saw %v, want [5]", hooked)
	}
}

// testAttachments: attachments are stored per conversation, replaced by id, and found only
// where they were put.
func testAttachments(t *testing.T, f Factory) {
	now := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	s, _ := open(t, f, Config{Now: func() time.Time { return now }})
	ctx := context.Background()
	createConversation(t, s, "files")
	createConversation(t, s, "other")
	big := bytes.Repeat([]byte("0123456789"), 100_000)
	if err := s.PutAttachment(ctx, "files", store.Attachment{ID: "a", ContentType: "text/plain", Name: "a.txt", Data: []byte("v1")}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAttachment(ctx, "files", store.Attachment{ID: "a", ContentType: "application/octet-stream", Data: big}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Attachment(ctx, "files", "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "a" || got.ContentType != "application/octet-stream" || got.Name != "" || !bytes.Equal(got.Data, big) || !got.Created.Equal(now) {
		t.Errorf("attachment = id %q type %q name %q %d bytes created %v", got.ID, got.ContentType, got.Name, len(got.Data), got.Created)
	}
	for _, tc := range []struct{ conv, id string }{{"files", "b"}, {"other", "a"}, {"files", ""}} {
		if _, err := s.Attachment(ctx, tc.conv, tc.id); !errors.Is(err, store.ErrAttachmentNotFound) {
			t.Errorf("Attachment(%q, %q): %v, want ErrAttachmentNotFound", tc.conv, tc.id, err)
		}
	}
	if lastSeq(t, s, "files") != 0 {
		t.Errorf("attachments took a seq")
	}
}

// allCalls calls every Store method (except Close) on conversation conv and returns the errors
// by method name.
func allCalls(s store.Store, ctx context.Context, conv string) map[string]error {
	errs := map[string]error{}
	_, errs["Conversation"] = s.Conversation(ctx, conv)
	_, errs["UpdateConversation"] = s.UpdateConversation(ctx, conv, func(*store.Conversation) error { return nil })
	_, errs["Append"] = s.Append(ctx, conv, message("x", "cx"))
	_, errs["Update"] = s.Update(ctx, conv, activity.FormatID(conv, 1), message("x", ""))
	errs["Delete"] = s.Delete(ctx, conv, activity.FormatID(conv, 1))
	_, errs["Activity"] = s.Activity(ctx, conv, activity.FormatID(conv, 1))
	_, _, errs["ReadAfter"] = s.ReadAfter(ctx, conv, 0, 10)
	_, errs["ReadLog"] = s.ReadLog(ctx, conv, 0, 10)
	errs["PutAttachment"] = s.PutAttachment(ctx, conv, store.Attachment{ID: "a", Data: []byte("x")})
	_, errs["Attachment"] = s.Attachment(ctx, conv, "a")
	return errs
}

// testUnknownConversation: every per-conversation method answers ErrConversationNotFound for a
// conversation never created, and none of them creates it.
func testUnknownConversation(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	createConversation(t, s, "exists")
	for _, conv := range []string{"missing", "exist", ""} {
		for name, err := range allCalls(s, context.Background(), conv) {
			if !errors.Is(err, store.ErrConversationNotFound) {
				t.Errorf("%s(%q): %v, want ErrConversationNotFound", name, conv, err)
			}
		}
	}
	cs, err := s.Conversations(context.Background(), "", 0)
	if err != nil || len(cs) != 1 {
		t.Errorf("Conversations = %d, %v; want only the one created", len(cs), err)
	}
}

// testClosed: after Close every method answers ErrClosed, Close included.
func testClosed(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	ctx := context.Background()
	createConversation(t, s, "c")
	appendOK(t, s, "c", message("m", ""))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	errs := allCalls(s, ctx, "c")
	_, _, errs["CreateConversation"] = s.CreateConversation(ctx, store.Conversation{ID: "new"})
	_, errs["Conversations"] = s.Conversations(ctx, "", 10)
	errs["Close"] = s.Close()
	for name, err := range errs {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// testContextCancelled: a request whose context is already done is refused and stores nothing.
func testContextCancelled(t *testing.T, f Factory) {
	s, _ := open(t, f, Config{})
	createConversation(t, s, "ctx")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, err := range allCalls(s, ctx, "ctx") {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", name, err)
		}
	}
	if n := lastSeq(t, s, "ctx"); n != 0 {
		t.Errorf("LastSeq %d after cancelled appends, want 0", n)
	}
	if _, err := s.Attachment(context.Background(), "ctx", "a"); !errors.Is(err, store.ErrAttachmentNotFound) {
		t.Errorf("cancelled PutAttachment stored something: %v", err)
	}
	if _, _, err := s.CreateConversation(ctx, store.Conversation{ID: "late"}); !errors.Is(err, context.Canceled) {
		t.Errorf("CreateConversation with a cancelled context: %v", err)
	}
	if _, err := s.Conversation(context.Background(), "late"); !errors.Is(err, store.ErrConversationNotFound) {
		t.Errorf("cancelled CreateConversation created the conversation: %v", err)
	}
}
