package directline

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/websocket"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/stream"
)

// jwtClaims decodes a token's claims without verifying it, as Web Chat does.
func jwtClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	m := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(token, m); err != nil {
		t.Fatalf("token %q: %v", token, err)
	}
	return m
}

// checkStreamURL checks an absolute ws:// streamUrl of conv carrying watermark and a t= credential
// that expires 60 s after it was issued, and returns its query.
func checkStreamURL(t *testing.T, e *env, streamURL, conv, watermark string) url.Values {
	t.Helper()
	u, err := url.Parse(streamURL)
	if err != nil {
		t.Fatal(err)
	}
	wantPrefix := "ws://" + e.ts.Listener.Addr().String() + BasePath + "/conversations/" + conv + "/stream"
	if !strings.HasPrefix(streamURL, wantPrefix+"?") {
		t.Fatalf("streamUrl %s, want prefix %s", streamURL, wantPrefix)
	}
	q := u.Query()
	if got := q.Get("watermark"); got != watermark {
		t.Fatalf("streamUrl watermark %q, want %q", got, watermark)
	}
	c := jwtClaims(t, q.Get("t"))
	if c["conv"] != conv || c["use"] != useStream {
		t.Fatalf("stream credential claims %v", c)
	}
	if exp, nbf := c["exp"].(float64), c["nbf"].(float64); exp-nbf != 60 {
		t.Fatalf("stream credential lifetime %v s, want 60", exp-nbf)
	}
	if _, ok := c["texp"].(float64); !ok {
		t.Fatalf("stream credential without the conversation token's expiry: %v", c)
	}
	return q
}

// TestFlow walks Web Chat's session with a generated token: generate, start (201), start again
// (200), post, read history, resume with a watermark, refresh, and the echo on the stream.
func TestFlow(t *testing.T) {
	e := newEnv(t)

	r := e.do(request{method: http.MethodPost, path: "/tokens/generate", auth: testSecret, body: `{"User":{"Id":"dl_alice","Name":"Alice"}}`})
	mustStatus(t, r, http.StatusOK)
	var gen conversationResponse
	r.decode(t, &gen)
	if gen.ConversationID == "" || gen.Token == "" || gen.ExpiresIn != 1800 || gen.StreamURL != "" {
		t.Fatalf("generate: %s", r.body)
	}
	if c := jwtClaims(t, gen.Token); c["conv"] != gen.ConversationID || c["user"] != "dl_alice" || c["nbf"] == nil || c["exp"] == nil {
		t.Fatalf("generated token claims %v", c)
	}
	conv := gen.ConversationID

	r = e.do(request{method: http.MethodPost, path: "/conversations", auth: gen.Token, body: `{"user":{"id":"r_page"},"locale":"en-US"}`})
	mustStatus(t, r, http.StatusCreated)
	var start conversationResponse
	r.decode(t, &start)
	if start.ConversationID != conv || start.Token == "" || start.ExpiresIn != 1800 {
		t.Fatalf("start: %s", r.body)
	}
	checkStreamURL(t, e, start.StreamURL, conv, "-")
	if c := jwtClaims(t, start.Token); c["user"] != "dl_alice" {
		t.Fatalf("start token user %v, want the generated token's dl_alice", c["user"])
	}

	r = e.do(request{method: http.MethodPost, path: "/conversations", auth: gen.Token})
	mustStatus(t, r, http.StatusOK)

	ws := e.dial(start.StreamURL)
	id := e.post(start.Token, conv, map[string]any{"type": "message", "text": "hello", "from": map[string]string{"id": "someone-else"}, "channelData": map[string]string{"clientActivityID": "c1"}})
	if want := conv + "|0000001"; id != want {
		t.Fatalf("id %q, want %q", id, want)
	}
	echoed, wm := readActivities(t, ws, 1)
	if echoed[0]["id"] != id || wm != "1" {
		t.Fatalf("stream echo %v watermark %s", echoed[0], wm)
	}
	if from := echoed[0]["from"].(map[string]any); from["id"] != "dl_alice" || from["role"] != "user" {
		t.Fatalf("from %v: the bound user must replace the client's from.id", from)
	}

	acts, wm := e.history(start.Token, conv, "")
	if len(acts) != 1 || acts[0]["id"] != id || wm != "1" {
		t.Fatalf("history %v watermark %s", acts, wm)
	}
	if acts[0]["channelId"] != "directline" || acts[0]["serviceUrl"] != e.ts.URL+"/" ||
		acts[0]["conversation"].(map[string]any)["id"] != conv {
		t.Fatalf("service-owned fields: %v", acts[0])
	}
	id2 := e.post(start.Token, conv, map[string]any{"type": "message", "text": "second"})

	// Resume after watermark 1: the new streamUrl carries it, and the stream replays only id2.
	r = e.do(request{method: http.MethodGet, path: "/conversations/" + conv + "?watermark=1", auth: start.Token})
	mustStatus(t, r, http.StatusOK)
	var re conversationResponse
	r.decode(t, &re)
	if re.ConversationID != conv || re.Token == "" {
		t.Fatalf("reconnect: %s", r.body)
	}
	checkStreamURL(t, e, re.StreamURL, conv, "1")
	resumed, wm := readActivities(t, e.dial(re.StreamURL), 1)
	if resumed[0]["id"] != id2 || wm != "2" {
		t.Fatalf("resumed stream %v watermark %s, want only %s", resumed, wm, id2)
	}

	r = e.do(request{method: http.MethodPost, path: "/tokens/refresh", auth: start.Token})
	mustStatus(t, r, http.StatusOK)
	var ref conversationResponse
	r.decode(t, &ref)
	if ref.ConversationID != conv || ref.Token == "" || ref.Token == start.Token || ref.ExpiresIn != 1800 {
		t.Fatalf("refresh: %s", r.body)
	}
	if c := jwtClaims(t, ref.Token); c["user"] != "dl_alice" || c["conv"] != conv {
		t.Fatalf("refreshed claims %v", c)
	}
	acts, _ = e.history(ref.Token, conv, "1")
	if len(acts) != 1 || acts[0]["id"] != id2 {
		t.Fatalf("history after 1 with refreshed token: %v", acts)
	}
}

// TestStartWithSecret: a secret starts a new conversation each time (201), binding the body's user
// (given PascalCase, as in the Direct Line docs' samples).
func TestStartWithSecret(t *testing.T) {
	e := newEnv(t)
	r := e.do(request{method: http.MethodPost, path: "/conversations", auth: testSecret, body: `{"User":{"Id":"dl_x"}}`})
	mustStatus(t, r, http.StatusCreated)
	var a conversationResponse
	r.decode(t, &a)
	checkStreamURL(t, e, a.StreamURL, a.ConversationID, "-")
	if c := jwtClaims(t, a.Token); c["user"] != "dl_x" || c["conv"] != a.ConversationID {
		t.Fatalf("claims %v", c)
	}
	b := e.startConversation("")
	if b.ConversationID == a.ConversationID {
		t.Fatal("a secret start must create a new conversation")
	}
	if c := jwtClaims(t, b.Token); c["user"] != nil {
		t.Fatalf("unbound start: token has user %v", c["user"])
	}
}

// TestTokenExpiryR10 follows field case R10 with a fake clock and a 1800 s token lifetime.
func TestTokenExpiryR10(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	t0 := clock.Now()
	e := newEnv(t, func(o *Options) { o.Now = clock.Now; o.TokenLifetime = 1800 * time.Second })

	r := e.do(request{method: http.MethodPost, path: "/tokens/generate", auth: testSecret})
	mustStatus(t, r, http.StatusOK)
	var t1 conversationResponse
	r.decode(t, &t1)
	conv := t1.ConversationID
	mustStatus(t, e.do(request{method: http.MethodPost, path: "/conversations", auth: t1.Token}), http.StatusCreated)
	for i := 0; i < 5; i++ {
		e.post(testSecret, conv, map[string]any{"type": "message", "text": "m", "from": map[string]string{"id": "u1"}})
	}

	// Step 2: refresh at t=1500 s works, same conversation.
	clock.Set(t0.Add(1500 * time.Second))
	r = e.do(request{method: http.MethodPost, path: "/tokens/refresh", auth: t1.Token})
	mustStatus(t, r, http.StatusOK)
	var t2 conversationResponse
	r.decode(t, &t2)
	if t2.ConversationID != conv || t2.ExpiresIn != 1800 {
		t.Fatalf("refresh at 1500 s: %s", r.body)
	}

	// Steps 3 and 4: at t=1900 s the old token is expired: 403 TokenExpired JSON for refresh,
	// reconnect and posts; the refreshed token still works. Once as the running service has the
	// token verified already, once after a restart, which starts with none verified.
	clock.Set(t0.Add(1900 * time.Second))
	for _, restart := range []bool{false, true} {
		if restart {
			e.reopen()
		}
		for _, rq := range []request{
			{method: http.MethodPost, path: "/tokens/refresh", auth: t1.Token},
			{method: http.MethodGet, path: "/conversations/" + conv + "?watermark=5", auth: t1.Token},
			{method: http.MethodPost, path: "/conversations/" + conv + "/activities", auth: t1.Token, body: `{"type":"message"}`},
		} {
			r := e.do(rq)
			mustStatus(t, r, http.StatusForbidden)
			if code := r.errorCode(t); code != CodeTokenExpired {
				t.Fatalf("restart %v: %s %s: code %s", restart, rq.method, rq.path, code)
			}
		}
	}
	mustStatus(t, e.do(request{method: http.MethodGet, path: "/conversations/" + conv + "?watermark=5", auth: t2.Token}), http.StatusOK)

	// Step 6: a secret reconnect returns a new token bound to the conversation and a streamUrl
	// resuming after watermark 5; the history continues there.
	r = e.do(request{method: http.MethodGet, path: "/conversations/" + conv + "?watermark=5", auth: testSecret})
	mustStatus(t, r, http.StatusOK)
	var t3 conversationResponse
	r.decode(t, &t3)
	if t3.ConversationID != conv || jwtClaims(t, t3.Token)["conv"] != conv {
		t.Fatalf("secret reconnect: %s", r.body)
	}
	checkStreamURL(t, e, t3.StreamURL, conv, "5")
	id := e.post(t3.Token, conv, map[string]any{"type": "message", "text": "after", "from": map[string]string{"id": "u1"}})
	acts, wm := e.history(t3.Token, conv, "5")
	if len(acts) != 1 || acts[0]["id"] != id || wm != "6" {
		t.Fatalf("history after 5: %v %s", acts, wm)
	}

	// A stream credential older than 60 s is refused.
	clock.Set(t0.Add(1900*time.Second + 61*time.Second))
	r = e.do(request{method: http.MethodGet, path: strings.Replace(t3.StreamURL, "ws://", "http://", 1)})
	mustStatus(t, r, http.StatusForbidden)
}

var timestampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// TestClientFieldsSurviveR01R22: what the client sent comes back byte-identical in history and on
// the stream; the service stamps server UTC timestamps and integer sequence ids (R05-B); the POST's
// id equals the echo's id (R01-B, R04).
func TestClientFieldsSurviveR01R22(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	ws := e.dial(conv.StreamURL)
	body := `{"type":"message","text":"hi","localTimestamp":"2024-05-01T19:00:00.123+09:00","localTimezone":"Asia/Tokyo",` +
		`"locale":"ja-JP","entities":[{"type":"ClientCapabilities","requiresBotState":true}],` +
		`"channelData":{"clientActivityID":"c9","custom":{"n":1.50}},"timestamp":"1999-01-01T00:00:00Z","id":"client-id"}`
	before := time.Now().UTC().Add(-time.Second)
	id := e.post(conv.Token, conv.ConversationID, json.RawMessage(body))
	after := time.Now().UTC().Add(time.Second)

	raw := e.do(request{method: http.MethodGet, path: "/conversations/" + conv.ConversationID + "/activities", auth: conv.Token})
	for _, want := range []string{`"localTimestamp":"2024-05-01T19:00:00.123+09:00"`, `"localTimezone":"Asia/Tokyo"`, `"custom":{"n":1.50}`} {
		if !strings.Contains(string(raw.body), want) {
			t.Fatalf("history lost %s: %s", want, raw.body)
		}
	}
	streamed, _ := readActivities(t, ws, 1)
	acts, _ := e.history(conv.Token, conv.ConversationID, "")
	for name, a := range map[string]map[string]any{"history": acts[0], "stream": streamed[0]} {
		if a["id"] != id {
			t.Fatalf("%s: id %v, POST returned %s", name, a["id"], id)
		}
		if a["localTimestamp"] != "2024-05-01T19:00:00.123+09:00" || a["localTimezone"] != "Asia/Tokyo" || a["locale"] != "ja-JP" {
			t.Fatalf("%s: client fields changed: %v", name, a)
		}
		cd := a["channelData"].(map[string]any)
		if cd["clientActivityID"] != "c9" {
			t.Fatalf("%s: clientActivityID %v", name, cd["clientActivityID"])
		}
		if seq, ok := cd["webchat:sequence-id"].(float64); !ok || seq != 1 {
			t.Fatalf("%s: sequence id %#v, want the JSON integer 1", name, cd["webchat:sequence-id"])
		}
		ts, _ := a["timestamp"].(string)
		if !timestampRE.MatchString(ts) {
			t.Fatalf("%s: timestamp %q", name, ts)
		}
		if when, _ := time.Parse(time.RFC3339Nano, ts); when.Before(before) || when.After(after) {
			t.Fatalf("%s: timestamp %s is not the server's time", name, ts)
		}
		if _, has := a["rawLocalTimestamp"]; has {
			t.Fatalf("%s: localTimestamp was moved to rawLocalTimestamp", name)
		}
	}
	if !strings.Contains(string(raw.body), `"webchat:sequence-id":1`) {
		t.Fatalf("sequence id is not a bare JSON integer: %s", raw.body)
	}
}

// TestIdempotentResendR07: a second POST with the same clientActivityID returns the original id
// and stores nothing.
func TestIdempotentResendR07(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	a := map[string]any{"type": "message", "text": "once", "channelData": map[string]string{"clientActivityID": "c1"}}
	first := e.post(conv.Token, conv.ConversationID, a)
	other := e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "other", "channelData": map[string]string{"clientActivityID": "c2"}})
	again := e.post(conv.Token, conv.ConversationID, a)
	if again != first || other == first {
		t.Fatalf("resend id %s, first %s, other %s", again, first, other)
	}
	acts, wm := e.history(conv.Token, conv.ConversationID, "")
	if len(acts) != 2 || wm != "2" {
		t.Fatalf("resend stored something: %d activities, watermark %s", len(acts), wm)
	}
}

// TestStreamResumeR08: streams resume exactly after the watermark in the streamUrl; with an empty
// one the stream replays the whole history (the hub's documented behaviour, R08 step 6). Without
// the parameter it holds only what comes after the reconnect (DIRECTLINE.md §1.2); a watermark
// past the end resumes from the end, so the client misses nothing that comes later.
func TestStreamResumeR08(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	var ids []string
	for _, text := range []string{"U1", "B1", "U2", "B2"} {
		ids = append(ids, e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": text}))
	}
	const end = -1 // the newest entry's seq, len(ids) as of the subtest's start
	tests := []struct {
		query  string
		wantWM string // "" = end
		from   int    // the replay is ids[from:]; end = nothing
		// dialWM replaces the streamUrl's watermark before dialing, as a client resuming on its
		// own might ("" = as given).
		dialWM string
	}{
		{"?watermark=4", "4", 4, ""},
		{"?watermark=1", "1", 1, ""},
		{"?watermark=", "-", 0, ""},
		{"", "", end, ""},
		{"?watermark=99", "", end, ""},
		{"?watermark=2", "2", end, "99"},
	}
	for _, tt := range tests {
		t.Run("query="+tt.query+",dial="+tt.dialWM, func(t *testing.T) {
			r := e.do(request{method: http.MethodGet, path: "/conversations/" + conv.ConversationID + tt.query, auth: conv.Token})
			mustStatus(t, r, http.StatusOK)
			var re conversationResponse
			r.decode(t, &re)
			wantWM := tt.wantWM
			if wantWM == "" {
				wantWM = strconv.Itoa(len(ids))
			}
			if tt.from == end {
				tt.from = len(ids)
			}
			checkStreamURL(t, e, re.StreamURL, conv.ConversationID, wantWM)
			streamURL := re.StreamURL
			if tt.dialWM != "" {
				u, err := url.Parse(streamURL)
				if err != nil {
					t.Fatal(err)
				}
				q := u.Query()
				q.Set("watermark", tt.dialWM)
				u.RawQuery = q.Encode()
				streamURL = u.String()
			}
			ws := e.dial(streamURL)
			if want := ids[tt.from:]; len(want) > 0 {
				got, _ := readActivities(t, ws, len(want))
				if len(got) != len(want) {
					t.Fatalf("replayed %d activities, want %d", len(got), len(want))
				}
				for i, a := range got {
					if a["id"] != want[i] {
						t.Fatalf("replay[%d] = %v, want %s", i, a["id"], want[i])
					}
				}
			}
			// The next new activity is the next frame: nothing else was replayed.
			next := e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "B3"})
			got, _ := readActivities(t, ws, 1)
			if len(got) != 1 || got[0]["id"] != next {
				t.Fatalf("after replay got %v, want only %s", got, next)
			}
			ids = append(ids, next)
		})
	}
}

// TestStreamURLNotEscaped: the streamUrl is written with a literal "&", not "\u0026".
func TestStreamURLNotEscaped(t *testing.T) {
	e := newEnv(t)
	r := e.do(request{method: http.MethodPost, path: "/conversations", auth: testSecret})
	mustStatus(t, r, http.StatusCreated)
	if !strings.Contains(string(r.body), "?watermark=-&t=") {
		t.Fatalf("streamUrl escaped: %s", r.body)
	}
}

// TestStreamEndsWhenTokenExpiresR10: the stream URL carries the conversation token's expiry, and
// the stream is closed with the hub's "token expired" code then (R10 step 5).
func TestStreamEndsWhenTokenExpiresR10(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TokenLifetime = 2 * time.Second })
	conv := e.startConversation("u1")
	q := checkStreamURL(t, e, conv.StreamURL, conv.ConversationID, "-")
	if texp, exp := jwtClaims(t, q.Get("t"))["texp"], jwtClaims(t, conv.Token)["exp"]; texp != exp {
		t.Fatalf("stream credential texp %v, conversation token exp %v", texp, exp)
	}
	ws := e.dial(conv.StreamURL)
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var err error
	for err == nil {
		_, _, err = ws.ReadMessage()
	}
	if !websocket.IsCloseError(err, stream.CloseTokenExpired) {
		t.Fatalf("stream ended with %v, want close %d", err, stream.CloseTokenExpired)
	}
}

// TestHistoryPaging: GET activities returns at most 100 activities; the watermark pages through
// the rest, and an empty page still carries the watermark.
func TestHistoryPaging(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	const n = 130
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := &activity.Activity{Type: "message", Text: "m", From: &activity.ChannelAccount{ID: "u1"}}
			if _, err := e.store.Append(context.Background(), conv.ConversationID, a); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	page, wm := e.history(conv.Token, conv.ConversationID, "")
	if len(page) != historyPageSize || wm != "100" {
		t.Fatalf("first page: %d activities, watermark %s", len(page), wm)
	}
	page, wm = e.history(conv.Token, conv.ConversationID, wm)
	if len(page) != n-historyPageSize || wm != "130" {
		t.Fatalf("second page: %d activities, watermark %s", len(page), wm)
	}
	page, wm = e.history(conv.Token, conv.ConversationID, wm)
	if len(page) != 0 || wm != "130" {
		t.Fatalf("past the end: %d activities, watermark %s", len(page), wm)
	}
	// A watermark the service never gave (another data file, a typo) is answered with the end, so
	// the next poll gets what comes later instead of skipping it.
	page, wm = e.history(conv.Token, conv.ConversationID, "999")
	if len(page) != 0 || wm != "130" {
		t.Fatalf("ahead of the end: %d activities, watermark %s, want 130", len(page), wm)
	}
}

// TestStartOnce: concurrent starts with one token start the conversation exactly once (one 201,
// the rest 200), also for a token whose conversation is not in the store yet.
func TestStartOnce(t *testing.T) {
	e := newEnv(t)
	r := e.do(request{method: http.MethodPost, path: "/tokens/generate", auth: testSecret})
	mustStatus(t, r, http.StatusOK)
	var gen conversationResponse
	r.decode(t, &gen)
	unstored, _, err := e.srv.tokens.conversationToken("not-in-the-store", "u9")
	if err != nil {
		t.Fatal(err)
	}
	for name, token := range map[string]string{"generated": gen.Token, "unstored": unstored} {
		t.Run(name, func(t *testing.T) {
			const n = 8
			statuses := make(chan int, n)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req, _ := http.NewRequest(http.MethodPost, e.url("/conversations"), nil)
					req.Header.Set("Authorization", "Bearer "+token)
					resp, err := e.ts.Client().Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					statuses <- resp.StatusCode
				}()
			}
			wg.Wait()
			close(statuses)
			count := map[int]int{}
			for s := range statuses {
				count[s]++
			}
			if count[http.StatusCreated] != 1 || count[http.StatusOK] != n-1 {
				t.Fatalf("statuses %v, want one 201 and %d 200", count, n-1)
			}
		})
	}
}

// TestPublicURLWithPrefix: behind a reverse proxy with a path prefix and TLS, every absolute URL the
// service hands out uses the public base: wss:// stream URLs, serviceUrl and download links.
func TestPublicURLWithPrefix(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.PublicURL = "https://chat.example.com/dl/" })
	conv := e.startConversation("u1")
	if want := "wss://chat.example.com/dl/v3/directline/conversations/" + conv.ConversationID + "/stream?watermark=-&t="; !strings.HasPrefix(conv.StreamURL, want) {
		t.Fatalf("streamUrl %s, want prefix %s", conv.StreamURL, want)
	}
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/upload", auth: conv.Token, body: "x", header: map[string]string{"Content-Type": "text/plain"}})
	mustStatus(t, r, http.StatusOK)
	acts, _ := e.history(conv.Token, conv.ConversationID, "")
	if acts[0]["serviceUrl"] != "https://chat.example.com/dl/" {
		t.Fatalf("serviceUrl %v", acts[0]["serviceUrl"])
	}
	link := acts[0]["attachments"].([]any)[0].(map[string]any)["contentUrl"].(string)
	if want := "https://chat.example.com/dl/v3/directline/conversations/" + conv.ConversationID + "/attachments/"; !strings.HasPrefix(link, want) {
		t.Fatalf("contentUrl %s, want prefix %s", link, want)
	}
}
