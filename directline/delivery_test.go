package directline

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/directline/botauth"
	"github.com/directline-go/directline/store"
)

// checkEnvelope is the strict schema check of field case R19: every activity the service sends a
// bot carries type, id, timestamp, serviceUrl, channelId, from{id, role user}, recipient{id, role
// bot} and conversation{id}.
func checkEnvelope(t *testing.T, e *env, a *activity.Activity) {
	t.Helper()
	switch {
	case a.Type == "", a.ID == "", a.ChannelID != channelID, a.ServiceURL != e.srv.serviceURL:
		t.Errorf("%s activity %q: incomplete envelope (channelId %q, serviceUrl %q)", a.Type, a.ID, a.ChannelID, a.ServiceURL)
	case a.From == nil || a.From.ID == "" || a.From.Role != activity.RoleUser:
		t.Errorf("%s activity %q: from %+v, want {id, role user}", a.Type, a.ID, a.From)
	case a.Recipient == nil || a.Recipient.ID == "" || a.Recipient.Role != activity.RoleBot:
		t.Errorf("%s activity %q: recipient %+v, want {id, role bot}", a.Type, a.ID, a.Recipient)
	case a.Conversation == nil || a.Conversation.ID == "":
		t.Errorf("%s activity %q: no conversation.id", a.Type, a.ID)
	}
	if _, err := activity.ParseTimestamp(a.Timestamp); err != nil {
		t.Errorf("%s activity %q: timestamp %q: %v", a.Type, a.ID, a.Timestamp, err)
	}
}

// membersAdded returns the ids in a conversationUpdate's membersAdded.
func membersAdded(t *testing.T, a *activity.Activity) []string {
	t.Helper()
	var added []activity.ChannelAccount
	if err := json.Unmarshal(a.Extra["membersAdded"], &added); err != nil {
		t.Fatalf("membersAdded %s: %v", a.Extra["membersAdded"], err)
	}
	ids := make([]string, len(added))
	for i, m := range added {
		ids[i] = m.ID
	}
	return ids
}

// TestEnvelopeR19: a minimal client activity of each type reaches the bot as a complete inbound
// activity with the id, timestamp and sequence id clients see; the conversationUpdate too.
func TestEnvelopeR19(t *testing.T) {
	b := newTestBot(t)
	e := newBotEnv(t, b.endpoint(), bot.Options{})
	conv := e.startConversation("")
	cu := b.next()
	if cu.Type != activity.TypeConversationUpdate {
		t.Fatalf("first delivery %s, want conversationUpdate", cu.Type)
	}
	checkEnvelope(t, e, cu)
	for _, typ := range []string{"message", "typing", "event"} {
		id := e.post(conv.Token, conv.ConversationID, map[string]any{"type": typ, "text": "hi", "from": map[string]string{"id": "u1"},
			"localTimestamp": "2026-11-30T10:00:00.000+01:00"})
		got := b.next()
		if got.Type == activity.TypeConversationUpdate {
			checkEnvelope(t, e, got)
			got = b.next()
		}
		checkEnvelope(t, e, got)
		if got.ID != id || got.Type != typ || got.Text != "hi" || got.LocalTimestamp() != "2026-11-30T10:00:00.000+01:00" {
			t.Fatalf("%s: the bot got %+v, want the posted activity with id %s", typ, got, id)
		}
		if seq := seqOfActivity(t, got); strconv.FormatUint(seq, 10) == "" {
			t.Fatal("no sequence id")
		}
	}
}

// TestConversationUpdateR17: case A, the token binds the user: one conversationUpdate with [bot,
// user] at start. Case B, no user at start: one with [bot] at start and one with [user] right
// before the user's first activity. Neither case sends another for later messages, a second
// start, reconnects or refreshes; a client may not send one (400), and clients never see one.
func TestConversationUpdateR17(t *testing.T) {
	for _, tc := range []struct {
		name        string
		user        string
		wantStart   []string
		wantUpdates int
	}{
		{"A_user_in_token", "dl_u1", []string{DefaultBotID, "dl_u1"}, 1},
		{"B_no_user", "", []string{DefaultBotID}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBot(t)
			e := newBotEnv(t, b.endpoint(), bot.Options{})
			body := map[string]any{}
			if tc.user != "" {
				body["user"] = map[string]string{"id": tc.user}
			}
			r := e.do(request{method: http.MethodPost, path: "/tokens/generate", auth: testSecret, body: body})
			mustStatus(t, r, http.StatusOK)
			var gen conversationResponse
			r.decode(t, &gen)
			if len(b.received()) != 0 {
				t.Fatal("generate contacted the bot; only start does")
			}
			r = e.do(request{method: http.MethodPost, path: "/conversations", auth: gen.Token})
			mustStatus(t, r, http.StatusCreated)
			var start conversationResponse
			r.decode(t, &start)
			cu := b.next()
			if cu.Type != activity.TypeConversationUpdate || !equalStrings(membersAdded(t, cu), tc.wantStart) {
				t.Fatalf("start sent %s %v, want conversationUpdate %v", cu.Type, cu.Extra["membersAdded"], tc.wantStart)
			}
			checkEnvelope(t, e, cu)
			if cu.Recipient.ID != DefaultBotID {
				t.Fatalf("recipient %q, want the bot's own id as in membersAdded", cu.Recipient.ID)
			}

			// Things that must not produce another update.
			mustStatus(t, e.do(request{method: http.MethodPost, path: "/conversations", auth: start.Token}), http.StatusOK)
			mustStatus(t, e.do(request{method: http.MethodGet, path: "/conversations/" + gen.ConversationID + "?watermark=0", auth: start.Token}), http.StatusOK)
			mustStatus(t, e.do(request{method: http.MethodPost, path: "/tokens/refresh", auth: start.Token}), http.StatusOK)
			user := tc.user
			if user == "" {
				user = "u_late"
			}
			for _, typ := range []string{"conversationUpdate", "contactRelationUpdate"} {
				r := e.do(request{method: http.MethodPost, path: "/conversations/" + gen.ConversationID + "/activities", auth: start.Token,
					body: map[string]any{"type": typ, "from": map[string]string{"id": user}, "membersAdded": []map[string]string{{"id": user}}}})
				mustStatus(t, r, http.StatusBadRequest)
			}
			first := e.post(start.Token, gen.ConversationID, map[string]any{"type": "message", "text": "one", "from": map[string]string{"id": user}})
			if tc.user == "" {
				join := b.next()
				if join.Type != activity.TypeConversationUpdate || !equalStrings(membersAdded(t, join), []string{user}) {
					t.Fatalf("before the first message the bot got %s %s, want conversationUpdate [%s]", join.Type, join.Extra["membersAdded"], user)
				}
				checkEnvelope(t, e, join)
			}
			if m := b.next(); m.ID != first {
				t.Fatalf("the bot got %s %q, want the first message %s", m.Type, m.ID, first)
			}
			second := e.post(start.Token, gen.ConversationID, map[string]any{"type": "message", "text": "two", "from": map[string]string{"id": user}})
			if m := b.next(); m.ID != second {
				t.Fatalf("the bot got %s %q, want the second message %s", m.Type, m.ID, second)
			}
			updates := 0
			for _, a := range b.received() {
				if a.Type == activity.TypeConversationUpdate {
					updates++
				}
			}
			if updates != tc.wantUpdates {
				t.Fatalf("%d conversationUpdates, want %d", updates, tc.wantUpdates)
			}
			acts, _ := e.history(start.Token, gen.ConversationID, "")
			for _, a := range acts {
				if a["membersAdded"] != nil {
					t.Fatalf("a service conversationUpdate reached a client: %v", a)
				}
			}
			if seq := seqOf(t, acts[0]); seq != 1 {
				t.Fatalf("first activity seq %d, want 1 (the bot's conversationUpdate takes no seq)", seq)
			}
		})
	}
}

// TestConversationUpdateBeforeStart: a client that posts before starting the conversation (or
// never starts it, resuming with GET /conversations/{id}) makes the bot hear of the bot and the
// user once, in one conversationUpdate before the message; a later start announces nobody again.
func TestConversationUpdateBeforeStart(t *testing.T) {
	for _, tc := range []struct {
		name, bound string
		resume      bool
	}{
		{"unbound token", "", false},
		{"bound token", "dl_dave", false},
		{"resumed, never started", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBot(t)
			e := newBotEnv(t, b.endpoint(), bot.Options{})
			body := map[string]any{}
			user := "u7"
			if tc.bound != "" {
				body["user"] = map[string]string{"id": tc.bound}
				user = tc.bound
			}
			r := e.do(request{method: http.MethodPost, path: "/tokens/generate", auth: testSecret, body: body})
			mustStatus(t, r, http.StatusOK)
			var gen conversationResponse
			r.decode(t, &gen)
			tok := gen.Token
			if tc.resume {
				r = e.do(request{method: http.MethodGet, path: "/conversations/" + gen.ConversationID + "?watermark=", auth: tok})
				mustStatus(t, r, http.StatusOK)
				var rc conversationResponse
				r.decode(t, &rc)
				tok = rc.Token
			}
			hi := e.post(tok, gen.ConversationID, map[string]any{"type": "message", "text": "hi", "from": map[string]string{"id": user}})
			cu := b.next()
			if cu.Type != activity.TypeConversationUpdate || !equalStrings(membersAdded(t, cu), []string{DefaultBotID, user}) {
				t.Fatalf("before the first message the bot got %s %s, want conversationUpdate [%s %s]", cu.Type, cu.Extra["membersAdded"], DefaultBotID, user)
			}
			if m := b.next(); m.ID != hi {
				t.Fatalf("the bot got %s %q, want the message %s", m.Type, m.ID, hi)
			}
			if !tc.resume {
				r = e.do(request{method: http.MethodPost, path: "/conversations", auth: tok, body: map[string]any{"user": map[string]string{"id": user}}})
				mustStatus(t, r, http.StatusCreated)
			}
			again := e.post(tok, gen.ConversationID, map[string]any{"type": "message", "text": "again", "from": map[string]string{"id": user}})
			if m := b.next(); m.ID != again {
				t.Fatalf("the bot got %s %s %q, want only the second message %s", m.Type, m.Extra["membersAdded"], m.ID, again)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// deadEndpoint is a loopback URL where nothing listens.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/api/messages"
}

// TestBotDownAndFailing (acceptance 3): a bot that cannot be reached gives 502 BotUnreachable and
// one answering 500 gives 502 BotRejectedActivity; either way the user's activity is in history
// with its sequence id, and the next message to the recovered bot works.
func TestBotDownAndFailing(t *testing.T) {
	b := newTestBot(t)
	b.setHandler(func(w http.ResponseWriter, a *activity.Activity) {
		if a.Type == activity.TypeMessage {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	dead := deadEndpoint(t)
	e := newBotEnv(t, b.endpoint(), bot.Options{})
	conv := e.startConversation("u1")
	b.next() // conversationUpdate

	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/activities", auth: conv.Token,
		body: `{"type":"message","text":"to a failing bot"}`})
	mustStatus(t, r, http.StatusBadGateway)
	if code := r.errorCode(t); code != CodeBotRejectedActivity {
		t.Fatalf("code %s, want %s", code, CodeBotRejectedActivity)
	}

	r = e.do(request{method: http.MethodPost, path: "/conversations", auth: testSecret, body: map[string]any{"user": map[string]string{"id": "u2"}, "botEndpoint": dead}})
	mustStatus(t, r, http.StatusCreated)
	var down conversationResponse
	r.decode(t, &down)
	r = e.do(request{method: http.MethodPost, path: "/conversations/" + down.ConversationID + "/activities", auth: down.Token,
		body: `{"type":"message","text":"to a dead bot"}`})
	mustStatus(t, r, http.StatusBadGateway)
	if code := r.errorCode(t); code != CodeBotUnreachable {
		t.Fatalf("code %s, want %s", code, CodeBotUnreachable)
	}

	for _, c := range []conversationResponse{conv, down} {
		acts, _ := e.history(c.Token, c.ConversationID, "")
		if len(acts) != 1 || seqOf(t, acts[0]) != 1 {
			t.Fatalf("history after a failed delivery: %v, want the user's activity with sequence id 1", acts)
		}
	}

	b.setHandler(nil)
	id := e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "recovered"})
	b.next() // the failed one
	if got := b.next(); got.ID != id {
		t.Fatalf("recovered bot got %q, want %q", got.ID, id)
	}
}

// TestSlowBotR07 (acceptance 3, scaled down: ack timeout 400 ms; the bot answers only when the
// test lets it, long after the ack timeout, standing in for a bot that takes 25 s against the
// default 10 s): the POST answers 200 {id} once the ack timeout passes, the echo is on the stream
// before the bot answered, a resend with the same clientActivityID returns the same id and is not
// forwarded, the bot receives the activity exactly once, and its late reply reaches the client.
func TestSlowBotR07(t *testing.T) {
	const ack = 400 * time.Millisecond
	b := newTestBot(t)
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseBot := func() { releaseOnce.Do(func() { close(release) }) }
	e := newBotEnv(t, b.endpoint(), bot.Options{AckTimeout: ack, Timeout: 30 * time.Second})
	// Registered last, so it runs first: a test that fails before releasing the bot must not
	// leave its handler, and the server's shutdown with it, waiting.
	t.Cleanup(releaseBot)
	inline := replyInline(e)
	b.setHandler(func(w http.ResponseWriter, a *activity.Activity) {
		if a.Type == activity.TypeMessage {
			<-release
		}
		inline(w, a)
	})
	conv := e.startConversation("u1")
	b.next()
	ws := e.dial(conv.StreamURL)

	msg := map[string]any{"type": "message", "text": "slow", "channelData": map[string]any{"clientActivityID": "c1"}}
	start := time.Now()
	id := e.post(conv.Token, conv.ConversationID, msg)
	elapsed := time.Since(start)
	if elapsed < ack || elapsed > ack+time.Second {
		t.Fatalf("POST answered after %v, want between the ack timeout %v and 1 s more", elapsed, ack)
	}
	echo, _ := readActivities(t, ws, 1)
	if echo[0]["id"] != id || echo[0]["channelData"].(map[string]any)["clientActivityID"] != "c1" {
		t.Fatalf("echo %v, want %s with clientActivityID c1", echo[0], id)
	}
	if again := e.post(conv.Token, conv.ConversationID, msg); again != id {
		t.Fatalf("resend got %q, want %q", again, id)
	}
	releaseBot()
	reply, _ := readActivities(t, ws, 1)
	if reply[0]["replyToId"] != id || reply[0]["text"] != "echo: slow" || seqOf(t, reply[0]) <= seqOf(t, echo[0]) {
		t.Fatalf("late reply %v, want a reply to %s after it", reply[0], id)
	}
	messages := 0
	for _, a := range b.received() {
		if a.Type == activity.TypeMessage {
			messages++
		}
	}
	if messages != 1 {
		t.Fatalf("the bot received the message %d times, want once", messages)
	}
}

// TestEchoBeforeReplyR04: with a bot replying inline, the POST returns the id the echo carries,
// the echo frame comes before the reply's, and the reply's replyToId is the echo's id with a
// larger sequence id and watermark; ten messages in a row keep that pairing.
func TestEchoBeforeReplyR04(t *testing.T) {
	b := newTestBot(t)
	e := newBotEnv(t, b.endpoint(), bot.Options{})
	b.setHandler(replyInline(e))
	conv := e.startConversation("u1")
	ws := e.dial(conv.StreamURL)
	for i := range 10 {
		text := "m" + strconv.Itoa(i)
		id := e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": text,
			"channelData": map[string]any{"clientActivityID": "c" + strconv.Itoa(i)}})
		got, _ := readActivities(t, ws, 2)
		echo, reply := got[0], got[1]
		if echo["id"] != id || echo["channelData"].(map[string]any)["clientActivityID"] != "c"+strconv.Itoa(i) {
			t.Fatalf("first frame %v, want the echo %s", echo, id)
		}
		if reply["replyToId"] != id || reply["text"] != "echo: "+text || seqOf(t, reply) <= seqOf(t, echo) {
			t.Fatalf("second frame %v, want the reply to %s", reply, id)
		}
		from := reply["from"].(map[string]any)
		if from["role"] != "bot" || from["id"] != DefaultBotID || reply["recipient"].(map[string]any)["id"] != "u1" {
			t.Fatalf("reply addressing from %v recipient %v", from, reply["recipient"])
		}
	}
}

// TestBotEndpointOverride: a secret may tie a conversation to another bot (body botEndpoint or
// bot query); a token may not (403), and a bad endpoint is 400.
func TestBotEndpointOverride(t *testing.T) {
	def, other := newTestBot(t), newTestBot(t)
	e := newBotEnv(t, def.endpoint(), bot.Options{})
	r := e.do(request{method: http.MethodPost, path: "/conversations?bot=" + other.endpoint(), auth: testSecret})
	mustStatus(t, r, http.StatusCreated)
	var c conversationResponse
	r.decode(t, &c)
	if got := other.next(); got.Type != activity.TypeConversationUpdate {
		t.Fatalf("override bot got %s", got.Type)
	}
	id := e.post(c.Token, c.ConversationID, map[string]any{"type": "message", "text": "x", "from": map[string]string{"id": "u"}})
	other.next() // the join of u
	if got := other.next(); got.ID != id {
		t.Fatalf("override bot got %q, want %q", got.ID, id)
	}
	if len(def.received()) != 0 {
		t.Fatalf("the default bot got %d activities", len(def.received()))
	}
	if got := e.storedConversation(c.ConversationID).BotEndpoint; got != other.endpoint() {
		t.Fatalf("stored BotEndpoint %q", got)
	}
	r = e.do(request{method: http.MethodPost, path: "/conversations", auth: c.Token, body: map[string]any{"botEndpoint": other.endpoint()}})
	mustStatus(t, r, http.StatusForbidden)
	r = e.do(request{method: http.MethodPost, path: "/conversations", auth: testSecret, body: map[string]any{"botEndpoint": "ftp://x"}})
	mustStatus(t, r, http.StatusBadRequest)

	// A bot with an app id gets a token with each delivery: no conversation may send it elsewhere.
	withAppID := newBotEnv(t, def.endpoint(), bot.Options{}, func(o *Options) {
		o.ConnectorValidator = &botauth.Validator{Audience: botauth.BotTokenAudience, Issuers: botauth.BotFrameworkIssuers}
	})
	for _, path := range []string{"/conversations?bot=" + other.endpoint(), "/tokens/generate?bot=" + other.endpoint()} {
		r = withAppID.do(request{method: http.MethodPost, path: path, auth: testSecret})
		mustStatus(t, r, http.StatusBadRequest)
	}
	r = withAppID.do(request{method: http.MethodPost, path: "/conversations", auth: testSecret, body: map[string]any{"botEndpoint": other.endpoint()}})
	mustStatus(t, r, http.StatusBadRequest)
	if n := len(other.received()); n != 1+2 {
		t.Fatalf("the other bot got %d activities, want only the 3 of the first conversation", n)
	}
}

// TestUploadGetsLongerBudget: an upload waits for the bot up to UploadAckTimeout, so a bot that
// fails after the ordinary ack timeout still gives the upload its 502, while an ordinary message
// to the same bot is acknowledged with 200 once the ordinary ack timeout passes.
func TestUploadGetsLongerBudget(t *testing.T) {
	b := newTestBot(t)
	b.setHandler(func(w http.ResponseWriter, a *activity.Activity) {
		if a.Type == activity.TypeMessage {
			time.Sleep(300 * time.Millisecond) // six times the ordinary ack timeout
			http.Error(w, "failed late", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	e := newBotEnv(t, b.endpoint(), bot.Options{AckTimeout: 50 * time.Millisecond}, func(o *Options) { o.UploadAckTimeout = 10 * time.Second })
	conv := e.startConversation("u1")
	e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "plain"})
	ct, body := multipartUpload(t, "", uploadFile{name: "a.txt", contentType: "text/plain", data: []byte("abc")})
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/upload?userId=u1", auth: conv.Token,
		body: body, header: map[string]string{"Content-Type": ct}})
	mustStatus(t, r, http.StatusBadGateway)
	if code := r.errorCode(t); code != CodeBotRejectedActivity {
		t.Fatalf("code %s", code)
	}
}

// TestResendAfterFailedDelivery: a message whose delivery failed (the client got 502) stays
// stored; a resend with its clientActivityID delivers it to the bot again, also after a restart,
// and answers its id once the bot has it. Once delivered, a resend is answered without
// forwarding (R07).
func TestResendAfterFailedDelivery(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(w http.ResponseWriter)
	}{
		{"bot answers 500", func(w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) }},
		{"bot drops the connection", func(w http.ResponseWriter) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBot(t)
			e := newBotEnv(t, b.endpoint(), bot.Options{})
			conv := e.startConversation("u1")
			b.next() // the conversationUpdate
			failing := 2
			b.setHandler(func(w http.ResponseWriter, a *activity.Activity) {
				if a.Type == activity.TypeMessage && failing > 0 {
					failing--
					tc.fail(w)
					return
				}
				w.WriteHeader(http.StatusOK)
			})
			msg := map[string]any{"type": "message", "text": "are you there?", "channelData": map[string]string{"clientActivityID": "c1"}}
			send := func() response {
				return e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/activities", auth: conv.Token, body: msg})
			}
			messages := func() int {
				n := 0
				for _, a := range b.received() {
					if a.Type == activity.TypeMessage {
						n++
					}
				}
				return n
			}
			mustStatus(t, send(), http.StatusBadGateway)
			mustStatus(t, send(), http.StatusBadGateway) // the bot fails the resend too
			e.reopen()                                   // the mark is stored, not only in memory
			id := e.post(conv.Token, conv.ConversationID, msg)
			if n := messages(); n != 3 {
				t.Fatalf("the bot got the message %d times, want 3 (two failed, one delivered)", n)
			}
			if again := e.post(conv.Token, conv.ConversationID, msg); again != id || messages() != 3 {
				t.Fatalf("resend after delivery: id %s (want %s), the bot got the message %d times (want 3)", again, id, messages())
			}
			if acts, _ := e.history(conv.Token, conv.ConversationID, ""); len(acts) != 1 {
				t.Fatalf("history holds %d activities, want the one message", len(acts))
			}
			if props := e.storedConversation(conv.ConversationID).Properties; props[propUndeliveredPrefix+id] != "" {
				t.Fatalf("the failure mark is left after the delivery: %v", props)
			}
		})
	}
}

// switchableToken fails until ok is set.
type switchableToken struct{ ok atomic.Bool }

func (s *switchableToken) Token(ctx context.Context) (string, error) {
	if s.ok.Load() {
		return "tok", nil
	}
	<-ctx.Done() // a token endpoint that does not answer
	return "", ctx.Err()
}

// TestResendAfterCredentialsFailure: without a token the activity never left the service, even
// when the client hung up before the answer; the client gets 502 BotUnreachable, and a resend
// once a token is had delivers it.
func TestResendAfterCredentialsFailure(t *testing.T) {
	b := newTestBot(t)
	creds := &switchableToken{}
	creds.ok.Store(true)
	e := newBotEnv(t, b.endpoint(), bot.Options{Credentials: creds, AckTimeout: 100 * time.Millisecond})
	conv := e.startConversation("u1")
	b.next() // the conversationUpdate
	creds.ok.Store(false)
	msg := map[string]any{"type": "message", "text": "hello?", "channelData": map[string]string{"clientActivityID": "c1"}}
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/activities", auth: conv.Token, body: msg})
	mustStatus(t, r, http.StatusBadGateway)
	if code := r.errorCode(t); code != CodeBotUnreachable {
		t.Fatalf("code %s, want %s", code, CodeBotUnreachable)
	}
	creds.ok.Store(true)
	id := e.post(conv.Token, conv.ConversationID, msg)
	if m := b.next(); m.ID != id || m.Text != "hello?" {
		t.Fatalf("the bot got %s %q, want the resent message %s", m.Type, m.ID, id)
	}
}

// TestWelcomeAfterCredentialsFailure: a conversationUpdate the bot never got (no token) does not
// count: the first message announces the members, before itself, once a token is had.
func TestWelcomeAfterCredentialsFailure(t *testing.T) {
	b := newTestBot(t)
	creds := &switchableToken{}
	e := newBotEnv(t, b.endpoint(), bot.Options{Credentials: creds, AckTimeout: 100 * time.Millisecond})
	conv := e.startConversation("u1")
	if n := len(b.received()); n != 0 {
		t.Fatalf("the bot got %d activities without a token", n)
	}
	creds.ok.Store(true)
	id := e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "hi"})
	cu := b.next()
	if cu.Type != activity.TypeConversationUpdate || !equalStrings(membersAdded(t, cu), []string{DefaultBotID, "u1"}) {
		t.Fatalf("before the message the bot got %s %s, want conversationUpdate [%s u1]", cu.Type, cu.Extra["membersAdded"], DefaultBotID)
	}
	if m := b.next(); m.ID != id {
		t.Fatalf("the bot got %s %q, want the message %s", m.Type, m.ID, id)
	}
}

// TestConversationEndpointNotUsedWithAppID: a conversation whose own bot endpoint was chosen
// before the bot had an app id gets nothing delivered there afterwards: the deliveries would carry
// the bot's token.
func TestConversationEndpointNotUsedWithAppID(t *testing.T) {
	def, other := newTestBot(t), newTestBot(t)
	e := newBotEnv(t, def.endpoint(), bot.Options{}, func(o *Options) { o.Bot.(*BotClient).Fixed = true })
	if _, _, err := e.store.CreateConversation(context.Background(), store.Conversation{ID: "chosen", Started: true, BotEndpoint: other.endpoint()}); err != nil {
		t.Fatal(err)
	}
	r := e.do(request{method: http.MethodPost, path: "/conversations/chosen/activities", auth: testSecret,
		body: map[string]any{"type": "message", "text": "x", "from": map[string]string{"id": "u"}}})
	mustStatus(t, r, http.StatusBadGateway)
	if code := r.errorCode(t); code != CodeBotUnreachable {
		t.Fatalf("code %s, want %s", code, CodeBotUnreachable)
	}
	if n, m := len(other.received()), len(def.received()); n != 0 || m != 0 {
		t.Fatalf("the chosen endpoint got %d activities and the bot %d, want none", n, m)
	}
}

// TestResendAfterBotTimeout: a bot too slow to answer within --bot-timeout may still have the
// message, so a resend is answered with its id and not forwarded (R07), although the first
// answer was 502.
func TestResendAfterBotTimeout(t *testing.T) {
	b := newTestBot(t)
	e := newBotEnv(t, b.endpoint(), bot.Options{AckTimeout: 5 * time.Second, Timeout: 100 * time.Millisecond})
	conv := e.startConversation("u1")
	b.next() // the conversationUpdate
	b.setHandler(func(w http.ResponseWriter, a *activity.Activity) {
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	})
	msg := map[string]any{"type": "message", "text": "slow", "channelData": map[string]string{"clientActivityID": "c1"}}
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/activities", auth: conv.Token, body: msg})
	if r.status < 500 {
		t.Fatalf("status %d, want the bot's timeout", r.status)
	}
	e.post(conv.Token, conv.ConversationID, msg)
	if n := len(b.received()); n != 2 {
		t.Fatalf("the bot got %d activities, want the conversationUpdate and the message once", n)
	}
}
