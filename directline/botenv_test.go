package directline

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/store"
)

// testBot is a bot endpoint on a loopback listener that records every activity it receives (with
// its Authorization header) and answers through handle, 200 by default.
type testBot struct {
	t   *testing.T
	srv *httptest.Server
	// arrived receives every activity as it arrives.
	arrived chan *activity.Activity

	mu     sync.Mutex
	got    []*activity.Activity
	auth   []string
	handle func(w http.ResponseWriter, a *activity.Activity)
}

func newTestBot(t *testing.T) *testBot {
	t.Helper()
	b := &testBot{t: t, arrived: make(chan *activity.Activity, 256)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		a, err := activity.Decode(data)
		if err != nil {
			t.Errorf("the bot got an undecodable activity %s: %v", data, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.got = append(b.got, a)
		b.auth = append(b.auth, r.Header.Get("Authorization"))
		handle := b.handle
		b.mu.Unlock()
		b.arrived <- a
		if handle != nil {
			handle(w, a)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *testBot) endpoint() string { return b.srv.URL + "/api/messages" }

func (b *testBot) setHandler(h func(w http.ResponseWriter, a *activity.Activity)) {
	b.mu.Lock()
	b.handle = h
	b.mu.Unlock()
}

// received returns what the bot got so far.
func (b *testBot) received() []*activity.Activity {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*activity.Activity(nil), b.got...)
}

// authHeaders returns the Authorization header of each delivery so far.
func (b *testBot) authHeaders() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.auth...)
}

// next waits for the next activity the bot receives; the deadline only guards against a hang.
func (b *testBot) next() *activity.Activity {
	b.t.Helper()
	select {
	case a := <-b.arrived:
		return a
	case <-time.After(10 * time.Second):
		b.t.Fatal("the bot received nothing")
		return nil
	}
}

// botClient is a bot.Client for tests, closed when the test ends.
func botClient(t *testing.T, o bot.Options) *bot.Client {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := bot.NewClient(o)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// newBotEnv starts a service whose default bot endpoint is endpoint, delivering with o.
func newBotEnv(t *testing.T, endpoint string, o bot.Options, mods ...func(*Options)) *env {
	t.Helper()
	delivery := &BotClient{Client: botClient(t, o), Endpoint: endpoint}
	return newEnv(t, append([]func(*Options){func(opts *Options) { opts.Bot = delivery }}, mods...)...)
}

// connectorURL is the absolute URL of a Bot Connector path; segments are escaped as botbuilder
// escapes them ("|" becomes %7C).
func (e *env) connectorURL(segments ...string) string {
	u := e.ts.URL + "/v3"
	for _, s := range segments {
		u += "/" + url.PathEscape(s)
	}
	return u
}

// connector makes a Bot Connector call as a bot without an app id does (no Authorization).
func (e *env) connector(method string, body any, segments ...string) response {
	e.t.Helper()
	return e.do(request{method: method, path: e.connectorURL(segments...), body: body})
}

// botSend sends an activity to the conversation as the bot (SendToConversation, or
// ReplyToActivity with replyTo) and returns the id the service gave it.
func (e *env) botSend(conv, replyTo string, a any) string {
	e.t.Helper()
	segs := []string{"conversations", conv, "activities"}
	if replyTo != "" {
		segs = append(segs, replyTo)
	}
	r := e.connector(http.MethodPost, a, segs...)
	mustStatus(e.t, r, http.StatusOK)
	var rr resourceResponse
	r.decode(e.t, &rr)
	if rr.ID == "" {
		e.t.Fatalf("bot send answered without id: %s", r.body)
	}
	return rr.ID
}

// replyInline makes the bot answer each message while the service's delivery is pending, as
// botbuilder and the demo bot do: a reply "echo: <text>" through ReplyToActivity, then 200.
func replyInline(e *env) func(w http.ResponseWriter, a *activity.Activity) {
	return func(w http.ResponseWriter, a *activity.Activity) {
		if a.Type == activity.TypeMessage {
			reply := map[string]any{"type": "message", "text": "echo: " + a.Text,
				"from": a.Recipient, "recipient": a.From, "replyToId": a.ID}
			body, _ := json.Marshal(reply)
			req, _ := http.NewRequest(http.MethodPost, strings.TrimRight(a.ServiceURL, "/")+"/v3/conversations/"+
				url.PathEscape(a.Conversation.ID)+"/activities/"+url.PathEscape(a.ID), strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				http.Error(w, "reply failed", http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	}
}

// seqOfActivity is an activity's sequence id, failing when it has none.
func seqOfActivity(t *testing.T, a *activity.Activity) uint64 {
	t.Helper()
	seq, ok := a.SequenceID()
	if !ok {
		t.Fatalf("activity %s without a sequence id", a.ID)
	}
	return seq
}

// storedConversation reads a conversation's metadata from the store.
func (e *env) storedConversation(id string) store.Conversation {
	e.t.Helper()
	c, err := e.store.Conversation(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// decodeMap turns a generic activity from a frame or history into an Activity.
func decodeMap(t *testing.T, m map[string]any) *activity.Activity {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	a, err := activity.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
