package demobot

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
)

// posted is one Bot Connector call the fake connector received.
type posted struct {
	uri      string // request URI as sent, path ids still escaped
	auth     bool   // an Authorization header was present
	activity *activity.Activity
	id       string // the id the connector answered with
}

// connector is a fake Bot Connector (the service side of serviceUrl): it records the activities
// posted to it, answers {id: "conv|000000N"} and serves files under /files/ for uploads.
type connector struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	calls  []posted
	next   int
	status int // answer status; 0 means 200

	inFlight, maxInFlight int
}

func newConnector(t *testing.T) *connector {
	c := &connector{t: t, next: 1}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v3/conversations/{conv}/activities", c.serveActivity)
	mux.HandleFunc("POST /v3/conversations/{conv}/activities/{id}", c.serveActivity)
	mux.HandleFunc("GET /files/a.bin", func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, 1234))
	})
	c.srv = httptest.NewServer(mux)
	t.Cleanup(c.srv.Close)
	return c
}

func (c *connector) serveActivity(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.inFlight++
	c.maxInFlight = max(c.maxInFlight, c.inFlight)
	c.mu.Unlock()
	// Hold each call briefly so that overlapping sends would be seen in maxInFlight.
	time.Sleep(2 * time.Millisecond)
	body, _ := io.ReadAll(r.Body)
	a, err := activity.Decode(body)
	if err != nil {
		c.t.Errorf("connector got a bad activity: %v\n%s", err, body)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight--
	if r.PathValue("id") != "" && a != nil && a.ReplyToID != r.PathValue("id") {
		c.t.Errorf("ReplyToActivity path id %q but replyToId %q", r.PathValue("id"), a.ReplyToID)
	}
	if c.status != 0 {
		w.WriteHeader(c.status)
		return
	}
	c.next++
	id := fmt.Sprintf("conv|%07d", c.next)
	c.calls = append(c.calls, posted{uri: r.RequestURI, auth: r.Header.Get("Authorization") != "", activity: a, id: id})
	json.NewEncoder(w).Encode(map[string]string{"id": id})
}

func (c *connector) posted() []posted {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// startBot runs the demo bot with Start, as cmd does.
func startBot(t *testing.T) string {
	t.Helper()
	u, stop, err := Start("127.0.0.1:0", Options{StreamDelay: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(context.Background()) })
	return u + "/api/messages"
}

// inbound builds an activity as the service delivers it, sent from user u1 to the bot.
func inbound(c *connector, typ, text string) map[string]any {
	return map[string]any{
		"type": typ, "id": "conv|0000001", "timestamp": "2026-01-01T00:00:00.000Z", "channelId": "directline",
		"serviceUrl":   c.srv.URL + "/",
		"from":         map[string]any{"id": "u1", "name": "User", "role": "user"},
		"recipient":    map[string]any{"id": "demo-bot", "name": "Demo bot", "role": "bot"},
		"conversation": map[string]any{"id": "conv"},
		"text":         text,
	}
}

func deliver(t *testing.T, endpoint string, body any) (int, string) {
	t.Helper()
	var data []byte
	switch b := body.(type) {
	case string:
		data = []byte(b)
	default:
		data, _ = json.Marshal(b)
	}
	resp, err := http.Post(endpoint, "application/json", strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(got)
}

func mustDeliver(t *testing.T, endpoint string, body any) {
	t.Helper()
	if status, got := deliver(t, endpoint, body); status != http.StatusOK || got != "" {
		t.Fatalf("bot answered %d %q, want 200 with an empty body", status, got)
	}
}

// checkReply checks the addressing of a reply to the inbound activity conv|0000001.
func checkReply(t *testing.T, p posted, typ string) {
	t.Helper()
	a := p.activity
	if p.uri != "/v3/conversations/conv/activities/conv%7C0000001" {
		t.Errorf("reply posted to %s", p.uri)
	}
	if p.auth {
		t.Error("reply carries an Authorization header")
	}
	if a.Type != typ || a.ReplyToID != "conv|0000001" || a.ChannelID != "directline" ||
		a.From == nil || a.From.ID != "demo-bot" || a.Recipient == nil || a.Recipient.ID != "u1" ||
		a.Conversation == nil || a.Conversation.ID != "conv" {
		j, _ := activity.Encode(a)
		t.Errorf("badly addressed %s reply: %s", typ, j)
	}
}

func TestEcho(t *testing.T) {
	c := newConnector(t)
	bot := startBot(t)
	mustDeliver(t, bot, inbound(c, "message", "Hello there"))
	calls := c.posted()
	if len(calls) != 1 {
		t.Fatalf("%d replies, want 1", len(calls))
	}
	checkReply(t, calls[0], "message")
	if calls[0].activity.Text != "You said: Hello there" {
		t.Fatalf("text %q", calls[0].activity.Text)
	}
}

func TestCardSubmitIsAnswered(t *testing.T) {
	c := newConnector(t)
	bot := startBot(t)
	in := inbound(c, "message", "")
	in["value"] = map[string]any{"action": "cardSubmit", "comment": "hi"}
	mustDeliver(t, bot, in)
	calls := c.posted()
	if len(calls) != 1 || !strings.HasPrefix(calls[0].activity.Text, "You submitted: ") || !strings.Contains(calls[0].activity.Text, `"comment":"hi"`) {
		t.Fatalf("replies %+v", calls)
	}
}

// R15: the livestream uses the id returned for its first revision as streamId, counts
// streamSequence up, and ends with a final message; Web Chat's reader must see one session.
func TestLivestream(t *testing.T) {
	c := newConnector(t)
	bot := startBot(t)
	mustDeliver(t, bot, inbound(c, "message", "stream"))
	calls := c.posted()
	if len(calls) < 11 {
		t.Fatalf("%d activities, want at least 10 revisions and a final", len(calls))
	}
	session := calls[0].id
	prev := ""
	for i, p := range calls {
		a := p.activity
		checkReply(t, p, map[bool]string{true: "message", false: "typing"}[i == len(calls)-1])
		var md struct {
			StreamID       *string `json:"streamId"`
			StreamType     string  `json:"streamType"`
			StreamSequence *int    `json:"streamSequence"`
		}
		raw, _ := json.Marshal(a.ChannelData)
		if err := json.Unmarshal(raw, &md); err != nil {
			t.Fatal(err)
		}
		switch {
		case i == 0:
			if md.StreamID != nil || md.StreamType != "streaming" || md.StreamSequence == nil || *md.StreamSequence != 1 {
				t.Fatalf("first revision channelData %s", raw)
			}
		case i < len(calls)-1:
			if md.StreamID == nil || *md.StreamID != session || md.StreamType != "streaming" || md.StreamSequence == nil || *md.StreamSequence != i+1 {
				t.Fatalf("revision %d channelData %s", i+1, raw)
			}
		default:
			if md.StreamID == nil || *md.StreamID != session || md.StreamType != "final" || md.StreamSequence != nil {
				t.Fatalf("final channelData %s", raw)
			}
		}
		if !strings.HasPrefix(a.Text, prev) || len(a.Text) <= len(prev) {
			t.Fatalf("revision %d text %q does not grow from %q", i+1, a.Text, prev)
		}
		prev = a.Text
		// As stored by the service, with the id it returned: Web Chat's reader sees one session.
		a.ID = p.id
		ls, ok := a.Livestream()
		wantKind := activity.LivestreamInterim
		if i == len(calls)-1 {
			wantKind = activity.LivestreamFinal
		}
		if !ok || ls.SessionID != session || ls.Kind != wantKind {
			t.Fatalf("activity %d: livestream %+v, %v", i, ls, ok)
		}
	}
	if c.maxInFlight != 1 {
		t.Fatalf("%d sends overlapped: each reply must wait for the previous one", c.maxInFlight)
	}
}

// R16: four parts of one HowTo grouping, sent out of position order.
func TestSteps(t *testing.T) {
	c := newConnector(t)
	bot := startBot(t)
	mustDeliver(t, bot, inbound(c, "message", "steps"))
	mustDeliver(t, bot, inbound(c, "message", "steps"))
	calls := c.posted()
	if len(calls) != 8 {
		t.Fatalf("%d activities, want 4 per request", len(calls))
	}
	groups := map[string]bool{}
	for req := range 2 {
		var positions []int
		group := ""
		for _, p := range calls[req*4 : req*4+4] {
			checkReply(t, p, "message")
			g, pos, ok := p.activity.PartGrouping()
			if !ok || pos == nil {
				t.Fatalf("not a part of a HowTo grouping: %s", p.activity.Entities)
			}
			if group == "" {
				group = g
			}
			if g != group || !strings.HasPrefix(g, "_:") {
				t.Fatalf("group %q, want %q (blank node)", g, group)
			}
			n := int(*pos)
			if !strings.HasPrefix(p.activity.Text, fmt.Sprintf("Step %d", n)) {
				t.Fatalf("position %d has text %q", n, p.activity.Text)
			}
			var e map[string]any
			json.Unmarshal(p.activity.Entities[0], &e)
			if e["type"] != "https://schema.org/Message" || e["@context"] != "https://schema.org" || e["@id"] != "" || e["@type"] != "Message" {
				t.Fatalf("entity %s", p.activity.Entities[0])
			}
			positions = append(positions, n)
		}
		if slices.IsSorted(positions) {
			t.Fatalf("positions %v sent in order", positions)
		}
		slices.Sort(positions)
		if !slices.Equal(positions, []int{1, 2, 3, 4}) {
			t.Fatalf("positions %v", positions)
		}
		groups[group] = true
	}
	if len(groups) != 2 {
		t.Fatal("two requests shared a grouping id")
	}
}

func TestCard(t *testing.T) {
	c := newConnector(t)
	bot := startBot(t)
	mustDeliver(t, bot, inbound(c, "message", "Card"))
	calls := c.posted()
	if len(calls) != 1 {
		t.Fatalf("%d replies", len(calls))
	}
	checkReply(t, calls[0], "message")
	atts := calls[0].activity.Attachments
	if len(atts) != 1 || atts[0].ContentType != "application/vnd.microsoft.card.adaptive" {
		t.Fatalf("attachments %+v", atts)
	}
	var card struct {
		Type    string           `json:"type"`
		Version string           `json:"version"`
		Body    []map[string]any `json:"body"`
	}
	if err := json.Unmarshal(atts[0].Content, &card); err != nil || card.Type != "AdaptiveCard" || card.Version == "" || len(card.Body) == 0 {
		t.Fatalf("card %s: %v", atts[0].Content, err)
	}
}

func TestUpload(t *testing.T) {
	c := newConnector(t)
	bot := startBot(t)
	in := inbound(c, "message", "")
	in["attachments"] = []any{
		map[string]any{"name": "a.bin", "contentType": "application/octet-stream", "contentUrl": c.srv.URL + "/files/a.bin"},
		map[string]any{"name": "photo.png", "contentType": "image/png", "contentUrl": "blob:http://localhost/1"},
		map[string]any{"name": "gone.txt", "contentType": "text/plain", "contentUrl": c.srv.URL + "/files/gone.txt"},
	}
	in["channelData"] = map[string]any{"attachmentSizes": []int{1234, 777}}
	mustDeliver(t, bot, in)
	mustDeliver(t, bot, inbound(c, "message", "upload"))
	calls := c.posted()
	if len(calls) != 2 {
		t.Fatalf("%d replies", len(calls))
	}
	checkReply(t, calls[0], "message")
	text := calls[0].activity.Text
	for _, want := range []string{
		"3 attachments",
		"a.bin, application/octet-stream, 1234 bytes", // measured by download
		"photo.png, image/png, 777 bytes",             // from channelData.attachmentSizes
		"gone.txt, text/plain, size unknown",          // download failed, no size given
	} {
		if !strings.Contains(text, want) {
			t.Errorf("reply %q lacks %q", text, want)
		}
	}
	if !strings.Contains(calls[1].activity.Text, "Attach a file") {
		t.Errorf("upload without files answered %q", calls[1].activity.Text)
	}
}

// R17: one welcome per conversationUpdate that adds someone other than the bot.
func TestWelcome(t *testing.T) {
	bot := map[string]any{"id": "demo-bot", "role": "bot"}
	user := map[string]any{"id": "dl_u1", "role": "user"}
	cases := []struct {
		name    string
		members map[string]any // extra members of the update
		want    int
	}{
		{"bot and user", map[string]any{"membersAdded": []any{bot, user}}, 1},
		{"user only", map[string]any{"membersAdded": []any{user}}, 1},
		{"bot only", map[string]any{"membersAdded": []any{bot}}, 0},
		{"member removed", map[string]any{"membersRemoved": []any{user}}, 0},
		{"no members", map[string]any{}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newConnector(t)
			endpoint := startBot(t)
			in := inbound(c, "conversationUpdate", "")
			delete(in, "text")
			in["from"] = map[string]any{"id": "conv"}
			for k, v := range tc.members {
				in[k] = v
			}
			mustDeliver(t, endpoint, in)
			calls := c.posted()
			if len(calls) != tc.want {
				t.Fatalf("%d welcomes, want %d", len(calls), tc.want)
			}
			for _, p := range calls {
				a := p.activity
				if p.uri != "/v3/conversations/conv/activities" || a.ReplyToID != "" || a.Type != "message" ||
					a.From.ID != "demo-bot" || a.Conversation.ID != "conv" {
					j, _ := activity.Encode(a)
					t.Fatalf("welcome %s posted to %s", j, p.uri)
				}
				for _, cmd := range []string{"stream", "steps", "card", "upload"} {
					if !strings.Contains(a.Text, cmd) {
						t.Errorf("welcome %q does not mention %s", a.Text, cmd)
					}
				}
			}
		})
	}
}

func TestIgnoredActivities(t *testing.T) {
	c := newConnector(t)
	endpoint := startBot(t)
	for _, typ := range []string{"typing", "event", "endOfConversation", "invoke"} {
		mustDeliver(t, endpoint, inbound(c, typ, "stream"))
	}
	if n := len(c.posted()); n != 0 {
		t.Fatalf("%d replies to ignored activities", n)
	}
}

func TestBadInput(t *testing.T) {
	c := newConnector(t)
	endpoint := startBot(t)
	noServiceURL := inbound(c, "message", "hi")
	delete(noServiceURL, "serviceUrl")
	noConversation := inbound(c, "message", "hi")
	delete(noConversation, "conversation")
	cases := []struct {
		name string
		body any
		want int
	}{
		{"not JSON", "hello", 400},
		{"array", "[]", 400},
		{"string", `"message"`, 400},
		{"no type", `{"text":"hi"}`, 400},
		{"empty type", `{"type":""}`, 400},
		{"type not a string", `{"type":1}`, 400},
		{"empty body", "", 400},
		{"no serviceUrl", noServiceURL, 400},
		{"no conversation", noConversation, 400},
		{"too large", `{"type":"message","text":"` + strings.Repeat("x", maxActivityBytes) + `"}`, 413},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if status, _ := deliver(t, endpoint, tc.body); status != tc.want {
				t.Fatalf("status %d, want %d", status, tc.want)
			}
		})
	}
	if n := len(c.posted()); n != 0 {
		t.Fatalf("%d replies to bad input", n)
	}
	resp, err := http.Get(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	resp, err = http.Post(strings.TrimSuffix(endpoint, "/api/messages")+"/other", "application/json", strings.NewReader(`{"type":"message"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("POST /other: %d", resp.StatusCode)
	}
}

func TestConnectorErrorFailsTheTurn(t *testing.T) {
	c := newConnector(t)
	c.status = http.StatusForbidden
	endpoint := startBot(t)
	if status, body := deliver(t, endpoint, inbound(c, "message", "hi")); status != 500 || !strings.Contains(body, "403") {
		t.Fatalf("got %d %q", status, body)
	}
}

func TestStartListensOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "[::]:0", "example.com:0", "nonsense"} {
		if _, _, err := Start(addr, Options{}); err == nil {
			t.Errorf("%q accepted", addr)
		}
	}
	for _, addr := range []string{"", ":0", "127.0.0.1:0"} {
		u, stop, err := Start(addr, Options{})
		if err != nil {
			t.Fatalf("%q: %v", addr, err)
		}
		if !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Errorf("%q: url %s", addr, u)
		}
		if err := stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
