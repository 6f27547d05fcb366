package directline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// recordingBot is a Bot that records the deliveries of posted activities and answers them with
// err; conversationUpdates are acknowledged and not recorded.
type recordingBot struct {
	mu   sync.Mutex
	got  []*activity.Activity
	conv []string
	err  error
}

func (b *recordingBot) Deliver(_ context.Context, conv store.Conversation, a *activity.Activity, _ time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.Type == activity.TypeConversationUpdate {
		return nil
	}
	b.got = append(b.got, a)
	b.conv = append(b.conv, conv.ID)
	return b.err
}

func (b *recordingBot) deliveries() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.got)
}

// TestBotSeam: the stored, stamped activity is handed to the Bot after the append; a resend with
// the same clientActivityID is not delivered again; a bot failure is the catalogue's 502 while the
// activity stays stored.
func TestBotSeam(t *testing.T) {
	bot := &recordingBot{}
	e := newEnv(t, func(o *Options) { o.Bot = bot })
	conv := e.startConversation("u1")
	a := map[string]any{"type": "message", "text": "hi", "channelData": map[string]string{"clientActivityID": "c1"}}
	id := e.post(conv.Token, conv.ConversationID, a)
	if e.post(conv.Token, conv.ConversationID, a) != id {
		t.Fatal("resend got a new id")
	}
	if bot.deliveries() != 1 || bot.got[0].ID != id || bot.conv[0] != conv.ConversationID {
		t.Fatalf("deliveries %d", bot.deliveries())
	}
	if seq, ok := bot.got[0].SequenceID(); !ok || seq != 1 || bot.got[0].Timestamp == "" {
		t.Fatalf("the bot got an unstamped activity: %+v", bot.got[0])
	}

	bot.mu.Lock()
	bot.err = ErrBotRejectedActivity
	bot.mu.Unlock()
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/activities", auth: conv.Token, body: `{"type":"message","text":"fails"}`})
	mustStatus(t, r, http.StatusBadGateway)
	if code := r.errorCode(t); code != CodeBotRejectedActivity {
		t.Fatalf("code %s", code)
	}
	if acts, _ := e.history(conv.Token, conv.ConversationID, ""); len(acts) != 2 {
		t.Fatalf("history has %d activities, want 2 (the failed delivery stays stored)", len(acts))
	}
}

// TestLogExport: the secret-only export lists every entry, typing included, in seq order as JSON
// Lines.
func TestLogExport(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "one"})
	e.post(conv.Token, conv.ConversationID, map[string]any{"type": "typing"})
	e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "two"})
	r := e.do(request{method: http.MethodGet, path: "/conversations/" + conv.ConversationID + "/log", auth: testSecret})
	mustStatus(t, r, http.StatusOK)
	if ct := r.header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type %q", ct)
	}
	var lines []logLine
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		var l struct {
			Seq       uint64          `json:"seq"`
			Kind      string          `json:"kind"`
			Ephemeral bool            `json:"ephemeral"`
			Activity  json.RawMessage `json:"activity"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Bytes(), err)
		}
		a, err := activity.Decode(l.Activity)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, logLine{Seq: l.Seq, Kind: l.Kind, Ephemeral: l.Ephemeral, Activity: a})
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines: %s", len(lines), r.body)
	}
	for i, want := range []string{"message", "typing", "message"} {
		if lines[i].Seq != uint64(i+1) || lines[i].Activity.Type != want || lines[i].Kind != "activity" || lines[i].Ephemeral != (want == "typing") {
			t.Fatalf("line %d: %+v", i, lines[i])
		}
	}
	if acts, _ := e.history(conv.Token, conv.ConversationID, ""); len(acts) != 2 {
		t.Fatalf("GET activities returned typing: %v", acts)
	}
}

// panickingBot panics on delivery.
type panickingBot struct{}

func (panickingBot) Deliver(_ context.Context, _ store.Conversation, a *activity.Activity, _ time.Duration) error {
	if a.Type == activity.TypeConversationUpdate {
		return nil
	}
	panic("bot exploded")
}

// TestPanicIsServiceErrorWithCORS: a panic below a handler is a 500 ServiceError ErrorResponse that
// still carries the CORS headers (R20 step 4), and the server keeps serving.
func TestPanicIsServiceErrorWithCORS(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Bot = panickingBot{} })
	conv := e.startConversation("u1")
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/activities", auth: conv.Token,
		body: `{"type":"message"}`, header: map[string]string{"Origin": "https://chat.example"}})
	mustStatus(t, r, http.StatusInternalServerError)
	if code := r.errorCode(t); code != CodeServiceError {
		t.Fatalf("code %s", code)
	}
	if r.header.Get("Access-Control-Allow-Origin") == "" {
		t.Fatalf("500 without CORS headers: %v", r.header)
	}
	if strings.Contains(string(r.body), "exploded") {
		t.Fatalf("internal detail leaked: %s", r.body)
	}
	mustStatus(t, e.do(request{method: http.MethodGet, path: "/conversations/" + conv.ConversationID + "/activities", auth: conv.Token}), http.StatusOK)
}

// TestErrorHandlerRespectsCommittedResponse: once a response is committed (a WebSocket upgrade
// hijacks the connection) the error handler writes nothing.
func TestErrorHandlerRespectsCommittedResponse(t *testing.T) {
	e := newEnv(t)
	rec := httptest.NewRecorder()
	c := e.srv.echo.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec)
	c.Response().WriteHeader(http.StatusSwitchingProtocols)
	e.srv.handleError(ErrTokenExpired, c)
	if rec.Code != http.StatusSwitchingProtocols || rec.Body.Len() != 0 {
		t.Fatalf("wrote %d %q after commit", rec.Code, rec.Body.String())
	}
}
