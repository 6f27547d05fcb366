package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directline-go/directline/directline/client"
	"github.com/directline-go/directline/directline/client/clienttest"
)

// session is one conversation with a subscription and its recorded events.
type session struct {
	t    *testing.T
	conv *client.Conversation
	sub  *client.Subscription

	mu     sync.Mutex
	events []client.Event
}

func open(t *testing.T, srv *clienttest.Server, tr client.Transport) *session {
	t.Helper()
	return openWith(t, srv, client.SubscribeOptions{Transport: tr})
}

// openWith is open with the subscription's options (OnEvent is set to record events).
func openWith(t *testing.T, srv *clienttest.Server, o client.SubscribeOptions) *session {
	t.Helper()
	c, err := client.New(client.Options{
		BaseURL:        srv.URL,
		Secret:         clienttest.Secret,
		UserID:         "u1",
		GapWait:        20 * time.Millisecond,
		PollInterval:   10 * time.Millisecond,
		ReconnectDelay: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conv, err := c.StartConversation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, conv: conv}
	o.OnEvent = func(e client.Event) {
		s.mu.Lock()
		s.events = append(s.events, e)
		s.mu.Unlock()
	}
	s.sub, err = conv.Subscribe(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.sub.Close() })
	return s
}

func (s *session) post(text string) string {
	s.t.Helper()
	id, err := s.conv.Post(context.Background(), client.NewMessage("", text, "c-"+text))
	if err != nil {
		s.t.Fatal(err)
	}
	return id
}

// receive reads n deliveries (no timeout: a missing activity hangs the test, which the test
// binary's -timeout reports).
func (s *session) receive(n int) []client.Delivery {
	s.t.Helper()
	var out []client.Delivery
	for len(out) < n {
		d, ok := <-s.sub.C
		if !ok {
			s.t.Fatalf("subscription ended after %d of %d deliveries: %v", len(out), n, s.sub.Err())
		}
		out = append(out, d)
	}
	return out
}

func (s *session) kinds() map[client.EventKind][]client.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[client.EventKind][]client.Event{}
	for _, e := range s.events {
		m[e.Kind] = append(m[e.Kind], e)
	}
	return m
}

// checkContiguous asserts deliveries are in strictly increasing, contiguous positions from first.
func checkContiguous(t *testing.T, ds []client.Delivery, first uint64, step uint64) {
	t.Helper()
	for i, d := range ds {
		if !d.HasSeq || d.Seq != first+uint64(i)*step {
			t.Fatalf("delivery %d has position %d (%v), want %d", i, d.Seq, d.HasSeq, first+uint64(i)*step)
		}
	}
}

func TestSubscriptionDeliversEchoesInOrder(t *testing.T) {
	for _, tr := range []client.Transport{client.WebSocket, client.Polling} {
		t.Run(fmt.Sprint(tr), func(t *testing.T) {
			s := open(t, clienttest.Start(t, clienttest.Options{}), tr)
			var ids []string
			for i := range 5 {
				ids = append(ids, s.post(fmt.Sprint("m", i)))
			}
			ds := s.receive(5)
			checkContiguous(t, ds, 1, 1)
			for i, d := range ds {
				if d.Activity.ID != ids[i] {
					t.Errorf("delivery %d is %s, want %s", i, d.Activity.ID, ids[i])
				}
			}
			for k, es := range s.kinds() {
				if k != client.EventGapSkipped {
					t.Errorf("unexpected %s events: %v", k, es)
				}
			}
		})
	}
}

func TestSubscriptionFillsDroppedActivityFromGET(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{Fault: clienttest.Drop(clienttest.Text("m2"))})
	s := open(t, srv, client.WebSocket)
	for i := range 5 {
		s.post(fmt.Sprint("m", i))
	}
	ds := s.receive(5)
	checkContiguous(t, ds, 1, 1)
	if ds[2].Source != client.SourceFill || ds[2].Activity.Text != "m2" {
		t.Errorf("third delivery %q came from %s, want m2 from fill", ds[2].Activity.Text, ds[2].Source)
	}
	k := s.kinds()
	if len(k[client.EventGapFilled]) != 1 || k[client.EventGapFilled][0].Seq != 3 {
		t.Errorf("gap_filled events %v, want one at 3", k[client.EventGapFilled])
	}
	if len(k[client.EventLost]) != 0 {
		t.Errorf("lost events %v", k[client.EventLost])
	}
}

func TestSubscriptionReportsDuplicateAndReorder(t *testing.T) {
	tests := []struct {
		name  string
		fault clienttest.Fault
		kind  client.EventKind
	}{
		{"duplicate", clienttest.Duplicate(clienttest.Text("m1")), client.EventDuplicate},
		// The bot's reply follows each echo, so the held echo of m1 comes after its reply.
		{"reorder", clienttest.Swap(clienttest.Text("m1")), client.EventOutOfOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t, clienttest.Start(t, clienttest.Options{Bot: true, Fault: tt.fault}), client.WebSocket)
			for i := range 3 {
				s.post(fmt.Sprint("m", i))
			}
			ds := s.receive(6)
			checkContiguous(t, ds, 1, 1)
			// The echo and the reply may share a frame, so one fault can show twice; when the
			// service put several activities in the frame Swap holds back, each of them arrives
			// after a higher position.
			if es := s.kinds()[tt.kind]; len(es) == 0 || len(es) > 6 {
				t.Errorf("%s events %v, want one to six", tt.kind, es)
			}
		})
	}
}

func TestSubscriptionSkipsTypingPositionsWhenPolling(t *testing.T) {
	s := open(t, clienttest.Start(t, clienttest.Options{Bot: true, Typing: true}), client.Polling)
	for i := range 3 {
		s.post(fmt.Sprint("m", i))
	}
	// Each message takes three positions: echo, typing (never in GET), reply.
	ds := s.receive(6)
	for i, d := range ds {
		want := uint64(1 + 3*(i/2) + 2*(i%2))
		if d.Seq != want {
			t.Fatalf("delivery %d at %d, want %d", i, d.Seq, want)
		}
	}
	k := s.kinds()
	if len(k[client.EventLost]) != 0 || len(k[client.EventDuplicate]) != 0 {
		t.Errorf("typing positions reported as problems: %v", k)
	}
	if len(k[client.EventGapSkipped]) == 0 {
		t.Error("no gap_skipped event for the typing positions")
	}
}

func TestSubscriptionResumesAfterDroppedSocket(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{})
	s := open(t, srv, client.WebSocket)
	s.post("before")
	s.receive(1)
	srv.DropStreams()
	s.post("after")
	ds := s.receive(1)
	if ds[0].Activity.Text != "after" || ds[0].Seq != 2 {
		t.Errorf("after the drop got %q at %d", ds[0].Activity.Text, ds[0].Seq)
	}
	s.post("again")
	checkContiguous(t, s.receive(1), 3, 1)
	k := s.kinds()
	if len(k[client.EventReconnect]) == 0 {
		t.Error("no reconnect event")
	}
	if len(k[client.EventDuplicate]) != 0 || len(k[client.EventLost]) != 0 {
		t.Errorf("resume showed problems: %v", k)
	}
}

func TestSubscriptionResumesOverTypingPositions(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{Bot: true, Typing: true})
	s := open(t, srv, client.WebSocket)
	s.post("m0")
	s.receive(3)
	srv.DropStreams()
	// Posted while the stream is down or reopening: the resumed stream replays the echo and the
	// reply but not the typing between them, whose position GET's watermark then passes.
	s.post("m1")
	s.post("m2")
	var texts []string
	for len(texts) < 4 {
		if d := s.receive(1)[0]; d.Activity.Type == "message" {
			texts = append(texts, d.Activity.Text)
		}
	}
	if got := fmt.Sprint(texts); got != "[m1 You said: m1 m2 You said: m2]" {
		t.Errorf("messages after the drop: %s", got)
	}
	k := s.kinds()
	if len(k[client.EventLost]) != 0 || len(k[client.EventDuplicate]) != 0 || len(k[client.EventOutOfOrder]) != 0 {
		t.Errorf("resume over typing positions showed problems: %v", k)
	}
}

func TestSubscriptionEndsOnRefusedCredential(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{})
	c, err := client.New(client.Options{BaseURL: srv.URL, Secret: "wrong", PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.StartConversation(context.Background())
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 403 && e.Status != 401 {
		t.Fatalf("start with a wrong secret: %v", err)
	}
	sub, err := c.Conversation("nope").Subscribe(context.Background(), client.SubscribeOptions{Transport: client.Polling})
	if err != nil {
		t.Fatal(err)
	}
	for range sub.C {
	}
	if !errors.As(sub.Err(), &e) {
		t.Errorf("polling with a wrong secret ended with %v", sub.Err())
	}
}

// offlineDirectLine mimics offline-directline's routes: /directline prefix, no token and a
// camelCase expiresIn in the start answer, uuid-like ids without a sequence, a numeric watermark
// that counts activities, and no stream.
func offlineDirectLine(t *testing.T) string {
	var mu sync.Mutex
	var history []map[string]any
	mux := http.NewServeMux()
	mux.HandleFunc("POST /directline/conversations", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"conversationId":"3f1c","expiresIn":1800}`)
	})
	mux.HandleFunc("POST /directline/conversations/3f1c/activities", func(w http.ResponseWriter, r *http.Request) {
		var a map[string]any
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		a["id"] = fmt.Sprintf("uuid-%d", len(history))
		history = append(history, a)
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"id": a["id"]})
	})
	mux.HandleFunc("GET /directline/conversations/3f1c/activities", func(w http.ResponseWriter, r *http.Request) {
		w0, _ := strconv.Atoi(r.URL.Query().Get("watermark"))
		mu.Lock()
		page := append([]map[string]any{}, history[min(w0, len(history)):]...)
		n := len(history)
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"activities": page, "watermark": n})
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/directline"
}

func TestClientSpeaksToOfflineDirectLine(t *testing.T) {
	c, err := client.New(client.Options{BaseURL: offlineDirectLine(t), UserID: "u1", PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conv, err := c.StartConversation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if conv.ID != "3f1c" || conv.Token != "" || conv.ExpiresIn != 30*time.Minute || conv.StreamURL != "" {
		t.Errorf("conversation %+v", conv)
	}
	if _, err := conv.Subscribe(ctx, client.SubscribeOptions{Transport: client.WebSocket}); err == nil {
		t.Error("a WebSocket subscription without stream succeeded")
	}
	sub, err := conv.Subscribe(ctx, client.SubscribeOptions{Transport: client.Polling})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i := range 3 {
		if _, err := conv.Post(ctx, client.NewMessage("", fmt.Sprint("m", i), "")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		d := <-sub.C
		if d.HasSeq || d.Activity.Text != fmt.Sprint("m", i) || d.Activity.From == nil || d.Activity.From.ID != "u1" {
			t.Errorf("delivery %d: %+v", i, d)
		}
	}
}

func TestSubscribeWithStaleStreamURLReconnects(t *testing.T) {
	srv := clienttest.Start(t, clienttest.Options{})
	c, err := client.New(client.Options{BaseURL: srv.URL, Secret: clienttest.Secret, UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conv, err := c.StartConversation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A stream credential the service refuses, as an expired one would be.
	conv.StreamURL = strings.Replace(conv.StreamURL, "&t=", "&t=x", 1)
	sub, err := conv.Subscribe(ctx, client.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := conv.Post(ctx, client.NewMessage("", "hi", "")); err != nil {
		t.Fatal(err)
	}
	if d := <-sub.C; d.Activity.Text != "hi" || d.Source != client.SourceStream {
		t.Errorf("got %+v", d)
	}
}

// TestSparseSubscription: a sparse subscription delivers the same positions, matching keys and
// events as a full one, over the stream, a gap fill and polling, and leaves the other members
// unset; PostJSON posts an encoded activity as it is.
func TestSparseSubscription(t *testing.T) {
	tests := []struct {
		name  string
		tr    client.Transport
		fault clienttest.Fault
		kind  client.EventKind
	}{
		{"stream", client.WebSocket, nil, 0},
		{"duplicate on the stream", client.WebSocket, clienttest.Duplicate(clienttest.Text("m1")), client.EventDuplicate},
		{"reordered stream", client.WebSocket, clienttest.Swap(clienttest.Text("m1")), client.EventOutOfOrder},
		{"dropped echo filled from GET", client.WebSocket, clienttest.Drop(clienttest.Text("m1")), client.EventGapFilled},
		{"polling", client.Polling, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openWith(t, clienttest.Start(t, clienttest.Options{Bot: true, Fault: tt.fault}), client.SubscribeOptions{Transport: tt.tr, Sparse: true})
			var ids []string
			for i := range 3 {
				text := fmt.Sprint("m", i)
				id, err := s.conv.PostJSON(context.Background(), []byte(`{"type":"message","from":{"id":"u1","role":"user"},"text":"`+text+`","channelData":{"clientActivityID":"c-`+text+`"}}`))
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			ds := s.receive(6)
			checkContiguous(t, ds, 1, 1)
			for i, d := range ds {
				a := d.Activity
				if a.Text != "" || a.Recipient != nil || a.Conversation != nil || a.ChannelID != "" {
					t.Errorf("delivery %d decoded more than the sparse members: %+v", i, a)
				}
				if seq, ok := a.SequenceID(); !ok || seq != d.Seq || a.Timestamp == "" || a.Type != "message" {
					t.Errorf("delivery %d at %d: sequence id %d %v, timestamp %q, type %q", i, d.Seq, seq, ok, a.Timestamp, a.Type)
				}
				switch {
				case i%2 == 0 && (a.ID != ids[i/2] || a.ClientActivityID() != fmt.Sprint("c-m", i/2) || a.From == nil || a.From.Role != "user" || a.From.ID != "u1"):
					t.Errorf("echo %d: %+v (from %+v), want id %s", i, a, a.From, ids[i/2])
				case i%2 == 1 && (a.ReplyToID != ids[i/2] || a.From == nil || a.From.Role != "bot"):
					t.Errorf("reply %d: %+v (from %+v), want a reply to %s", i, a, a.From, ids[i/2])
				}
			}
			k := s.kinds()
			// A frame Swap holds back may hold several activities (see
			// TestSubscriptionReportsDuplicateAndReorder).
			if tt.kind != 0 && (len(k[tt.kind]) == 0 || len(k[tt.kind]) > 6) {
				t.Errorf("%s events %v, want one to six", tt.kind, k[tt.kind])
			}
			for kind, es := range k {
				if kind != tt.kind && kind != client.EventGapSkipped {
					t.Errorf("unexpected %s events: %v", kind, es)
				}
			}
		})
	}
}
