package directline

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/directline-go/directline/directline/bot"
)

// connectorEnv is a service with no bot, a conversation bound to u1 and a client on its stream.
func connectorEnv(t *testing.T, mods ...func(*Options)) (*env, conversationResponse) {
	t.Helper()
	e := newEnv(t, mods...)
	return e, e.startConversation("u1")
}

// TestConnectorBadInput (acceptance 4): each bad Bot Connector call gets its status and a Direct
// Line ErrorResponse.
func TestConnectorBadInput(t *testing.T) {
	e, conv := connectorEnv(t)
	cid := conv.ConversationID
	msg := e.botSend(cid, "", map[string]any{"type": "message", "text": "a1"})
	user := e.post(conv.Token, cid, map[string]any{"type": "message", "text": "mine"})
	first := e.botSend(cid, "", map[string]any{"type": "typing", "text": "A", "channelData": map[string]any{"streamType": "streaming", "streamSequence": 1}})
	e.botSend(cid, "", map[string]any{"type": "message", "text": "A b", "channelData": map[string]any{"streamType": "final", "streamId": first}})
	open := e.botSend(cid, "", map[string]any{"type": "typing", "text": "B", "channelData": map[string]any{"streamType": "streaming", "streamSequence": 1}})
	revision := e.botSend(cid, "", map[string]any{"type": "typing", "text": "B c", "channelData": map[string]any{"streamType": "streaming", "streamSequence": 2, "streamId": open}})
	tests := []struct {
		name   string
		method string
		body   any
		path   []string
		status int
		code   string
	}{
		{"unknown conversation send", http.MethodPost, `{"type":"message"}`, []string{"conversations", "nope", "activities"}, 404, CodeNotFound},
		{"unknown conversation reply", http.MethodPost, `{"type":"message"}`, []string{"conversations", "nope", "activities", "nope|0000001"}, 404, CodeNotFound},
		{"unknown conversation update", http.MethodPut, `{"type":"message"}`, []string{"conversations", "nope", "activities", "nope|0000001"}, 404, CodeNotFound},
		{"unknown conversation delete", http.MethodDelete, nil, []string{"conversations", "nope", "activities", "nope|0000001"}, 404, CodeNotFound},
		{"unknown conversation members", http.MethodGet, nil, []string{"conversations", "nope", "members"}, 404, CodeNotFound},
		{"unknown conversation upload", http.MethodPost, `{"type":"image/png","originalBase64":"AAE="}`, []string{"conversations", "nope", "attachments"}, 404, CodeNotFound},
		{"unknown activity update", http.MethodPut, `{"type":"message"}`, []string{"conversations", cid, "activities", cid + "|0000099"}, 404, CodeNotFound},
		{"unknown activity delete", http.MethodDelete, nil, []string{"conversations", cid, "activities", cid + "|0000099"}, 404, CodeNotFound},
		{"unknown activity members", http.MethodGet, nil, []string{"conversations", cid, "activities", "x", "members"}, 404, CodeNotFound},
		{"malformed JSON", http.MethodPost, `{"type":`, []string{"conversations", cid, "activities"}, 400, CodeBadArgument},
		{"not an object", http.MethodPost, `[1]`, []string{"conversations", cid, "activities"}, 400, CodeBadArgument},
		{"wrong member type", http.MethodPost, `{"type":"message","text":5}`, []string{"conversations", cid, "activities"}, 400, CodeBadArgument},
		{"no type", http.MethodPost, `{"text":"x"}`, []string{"conversations", cid, "activities"}, 400, CodeMissingProperty},
		{"not UTF-8", http.MethodPost, "{\"type\":\"message\",\"channelData\":{\"x\":\"\xff\"}}", []string{"conversations", cid, "activities"}, 400, CodeBadArgument},
		{"entity not an object", http.MethodPost, `{"type":"message","entities":[null]}`, []string{"conversations", cid, "activities"}, 400, CodeBadArgument},
		{"create with activity not UTF-8", http.MethodPost, "{\"activity\":{\"type\":\"message\",\"text\":\"\xff\"}}", []string{"conversations"}, 400, CodeBadArgument},
		{"history not UTF-8", http.MethodPost, "{\"activities\":[{\"type\":\"message\",\"text\":\"\xff\"}]}", []string{"conversations", cid, "activities", "history"}, 400, CodeBadArgument},
		{"update id differs", http.MethodPut, map[string]any{"type": "message", "id": cid + "|0000002"}, []string{"conversations", cid, "activities", msg}, 400, CodeBadArgument},
		{"update of the user's message", http.MethodPut, map[string]any{"type": "message", "text": "edited"}, []string{"conversations", cid, "activities", user}, 400, CodeBadArgument},
		{"update into typing", http.MethodPut, map[string]any{"type": "typing"}, []string{"conversations", cid, "activities", msg}, 400, CodeBadArgument},
		{"revision after final", http.MethodPost, map[string]any{"type": "typing", "text": "A b c", "channelData": map[string]any{"streamType": "streaming", "streamSequence": 3, "streamId": first}},
			[]string{"conversations", cid, "activities"}, 409, CodeStreamConcluded},
		{"second final", http.MethodPost, map[string]any{"type": "message", "text": "again", "channelData": map[string]any{"streamType": "final", "streamId": first}},
			[]string{"conversations", cid, "activities"}, 409, CodeStreamConcluded},
		{"final without streamId", http.MethodPost, map[string]any{"type": "message", "channelData": map[string]any{"streamType": "final"}},
			[]string{"conversations", cid, "activities"}, 400, CodeMissingProperty},
		{"final with unknown streamId", http.MethodPost, map[string]any{"type": "message", "channelData": map[string]any{"streamType": "final", "streamId": cid + "|0000099"}},
			[]string{"conversations", cid, "activities"}, 400, CodeBadArgument},
		{"final typing with text", http.MethodPost, map[string]any{"type": "typing", "text": "x", "channelData": map[string]any{"streamType": "final", "streamId": msg}},
			[]string{"conversations", cid, "activities"}, 400, CodeBadArgument},
		// A livestream is revised by posting: an update would slip past its seal (R13).
		{"update of a sealed livestream's revision", http.MethodPut, map[string]any{"type": "typing", "text": "A changed", "channelData": map[string]any{"streamType": "streaming", "streamSequence": 1}},
			[]string{"conversations", cid, "activities", first}, 409, CodeStreamConcluded},
		{"update of an open livestream's revision", http.MethodPut, map[string]any{"type": "typing", "text": "B c", "channelData": map[string]any{"streamType": "streaming", "streamSequence": 2, "streamId": open}},
			[]string{"conversations", cid, "activities", open}, 400, CodeBadArgument},
		{"update into a livestream's final", http.MethodPut, map[string]any{"type": "message", "text": "a1", "channelData": map[string]any{"streamType": "final", "streamId": open}},
			[]string{"conversations", cid, "activities", msg}, 400, CodeBadArgument},
		{"update into a concluded livestream's final", http.MethodPut, map[string]any{"type": "message", "text": "a1", "channelData": map[string]any{"streamType": "final", "streamId": first}},
			[]string{"conversations", cid, "activities", msg}, 409, CodeStreamConcluded},
		// The seal is kept under a stream's first id: another id would be a second way past it.
		{"final naming a later revision", http.MethodPost, map[string]any{"type": "message", "text": "B c d", "channelData": map[string]any{"streamType": "final", "streamId": revision}},
			[]string{"conversations", cid, "activities"}, 400, CodeBadArgument},
		{"final naming a plain message", http.MethodPost, map[string]any{"type": "message", "text": "z", "channelData": map[string]any{"streamType": "final", "streamId": msg}},
			[]string{"conversations", cid, "activities"}, 400, CodeBadArgument},
		{"revision naming the user's message", http.MethodPost, map[string]any{"type": "typing", "text": "z", "channelData": map[string]any{"streamType": "streaming", "streamSequence": 2, "streamId": user}},
			[]string{"conversations", cid, "activities"}, 400, CodeBadArgument},
		{"history with a second final", http.MethodPost, map[string]any{"activities": []any{map[string]any{"type": "message", "text": "X y", "channelData": map[string]any{"streamType": "final", "streamId": first}}}},
			[]string{"conversations", cid, "activities", "history"}, 409, CodeStreamConcluded},
		{"upload without data", http.MethodPost, `{"type":"image/png"}`, []string{"conversations", cid, "attachments"}, 400, CodeMissingProperty},
		{"upload bad base64", http.MethodPost, `{"type":"image/png","originalBase64":"***"}`, []string{"conversations", cid, "attachments"}, 400, CodeBadArgument},
		{"unknown attachment", http.MethodGet, nil, []string{"attachments", "bm9wZQ.x"}, 404, CodeBadArgument},
		{"unknown view", http.MethodGet, nil, []string{"attachments", "bm9wZQ.x", "views", "big"}, 404, CodeBadArgument},
		{"create with bad member", http.MethodPost, `{"members":[{"name":"no id"}]}`, []string{"conversations"}, 400, CodeBadArgument},
		{"history not a transcript", http.MethodPost, `{"activities":{}}`, []string{"conversations", cid, "activities", "history"}, 400, CodeBadArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.connector(tt.method, tt.body, tt.path...)
			mustStatus(t, r, tt.status)
			if code := r.errorCode(t); code != tt.code {
				t.Fatalf("code %s, want %s", code, tt.code)
			}
		})
	}
	if acts, _ := e.history(conv.Token, cid, ""); len(acts) != 3 || acts[1]["text"] != "mine" {
		t.Fatalf("history %v, want a1, the user's message as sent and the final (rejected calls store nothing)", acts)
	}
}

// TestUpdateKeepsPlaceR12: the bot's update of a1 (seq 1) after the user's U (seq 2) is pushed
// live as a new frame with a new watermark, keeping a1's id, sequence id and timestamp; history
// shows the latest a1 once, at its place before U. A deleted activity leaves history and nothing
// is pushed for it.
func TestUpdateKeepsPlaceR12(t *testing.T) {
	e, conv := connectorEnv(t)
	cid := conv.ConversationID
	ws := e.dial(conv.StreamURL)
	a1 := e.botSend(cid, "", map[string]any{"type": "message", "text": "v1"})
	u := e.post(conv.Token, cid, map[string]any{"type": "message", "text": "U"})
	before, wmBefore := readActivities(t, ws, 2)

	r := e.connector(http.MethodPut, map[string]any{"type": "message", "id": a1, "text": "v2"}, "conversations", cid, "activities", a1)
	mustStatus(t, r, http.StatusOK)
	var rr resourceResponse
	r.decode(t, &rr)
	if rr.ID != a1 {
		t.Fatalf("update answered %s, want %s", r.body, a1)
	}
	got, wm := readActivities(t, ws, 1)
	rev := got[0]
	if rev["id"] != a1 || rev["text"] != "v2" || seqOf(t, rev) != 1 || rev["timestamp"] != before[0]["timestamp"] {
		t.Fatalf("revision frame %v, want a1 with text v2, sequence id 1 and the original timestamp %v", rev, before[0]["timestamp"])
	}
	if wm == wmBefore || wm != "3" {
		t.Fatalf("revision watermark %q, want a new one (3) after %q", wm, wmBefore)
	}
	acts, _ := e.history(conv.Token, cid, "")
	if len(acts) != 2 || acts[0]["id"] != a1 || acts[0]["text"] != "v2" || acts[1]["id"] != u {
		t.Fatalf("history %v, want [a1 v2, U]", acts)
	}
	// A reader that had a1 before the update gets the revision after its watermark.
	if acts, _ := e.history(conv.Token, cid, "2"); len(acts) != 1 || acts[0]["text"] != "v2" {
		t.Fatalf("history after 2: %v, want the revision", acts)
	}

	r = e.connector(http.MethodDelete, nil, "conversations", cid, "activities", u)
	mustStatus(t, r, http.StatusOK)
	if acts, _ := e.history(conv.Token, cid, ""); len(acts) != 1 || acts[0]["id"] != a1 {
		t.Fatalf("history after delete: %v, want [a1]", acts)
	}
	after := e.botSend(cid, "", map[string]any{"type": "message", "text": "after"})
	if next, _ := readActivities(t, ws, 1); next[0]["id"] != after {
		t.Fatalf("after a delete the stream carried %v, want the next activity %s (nothing for the delete)", next[0], after)
	}
	mustStatus(t, e.connector(http.MethodDelete, nil, "conversations", cid, "activities", u), http.StatusNotFound)
	mustStatus(t, e.connector(http.MethodPut, map[string]any{"type": "message"}, "conversations", cid, "activities", u), http.StatusNotFound)
}

// TestLivestreamR15: every revision gets its own id, each frame reaches a stream client before the
// bot sends the next revision, frames come in POST order, revisions sent out of streamSequence
// order are all forwarded, the final carries streamId = the first revision's id, and a polling
// client sees only the final (R13-B: seq strictly increasing across streams, streamId kept).
func TestLivestreamR15(t *testing.T) {
	e, conv := connectorEnv(t)
	cid := conv.ConversationID
	ws := e.dial(conv.StreamURL)
	var ids []string
	var lastSeq uint64
	for stream := range 2 {
		first := ""
		revisions := []map[string]any{
			{"type": "typing", "text": "A quick", "channelData": map[string]any{"streamType": "streaming", "streamSequence": 1}},
			{"type": "typing", "text": "A quick brown fox", "channelData": map[string]any{"streamType": "streaming", "streamSequence": 3}},
			{"type": "typing", "text": "A quick brown", "channelData": map[string]any{"streamType": "informative", "streamSequence": 2}},
			{"type": "message", "text": "A quick brown fox.", "channelData": map[string]any{"streamType": "final"}},
		}
		for i, rev := range revisions {
			if i > 0 {
				rev["channelData"].(map[string]any)["streamId"] = first
			}
			id := e.botSend(cid, "", rev)
			if i == 0 {
				first = id
			}
			ids = append(ids, id)
			got, _ := readActivities(t, ws, 1)
			a := decodeMap(t, got[0])
			if a.ID != id || a.Text != rev["text"] {
				t.Fatalf("stream %d revision %d: frame %s %q, want %s", stream, i, a.ID, a.Text, id)
			}
			if seq := seqOfActivity(t, a); seq <= lastSeq {
				t.Fatalf("sequence id %d after %d", seq, lastSeq)
			} else {
				lastSeq = seq
			}
			ls, ok := a.Livestream()
			if !ok || ls.SessionID != first {
				t.Fatalf("stream %d revision %d: livestream %+v %v, want session %s", stream, i, ls, ok, first)
			}
		}
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("id %s given twice", id)
		}
		seen[id] = true
	}
	acts, _ := e.history(conv.Token, cid, "")
	if len(acts) != 2 || acts[0]["id"] != ids[3] || acts[1]["id"] != ids[7] {
		t.Fatalf("history %v, want only the two finals", acts)
	}
}

// TestStreamInfoMirrored: metadata only in a streaminfo entity is mirrored into channelData
// without overwriting the bot's own channelData, and sealing works on it too.
func TestStreamInfoMirrored(t *testing.T) {
	e, conv := connectorEnv(t)
	cid := conv.ConversationID
	first := e.botSend(cid, "", map[string]any{"type": "typing", "text": "A", "channelData": map[string]any{"streamSequence": 7},
		"entities": []any{map[string]any{"type": "streaminfo", "streamType": "streaming", "streamSequence": 1}}})
	final := e.botSend(cid, "", map[string]any{"type": "message", "text": "A b",
		"entities": []any{map[string]any{"type": "streaminfo", "streamType": "final", "streamId": first}}})
	logged, err := e.store.ReadLog(t.Context(), cid, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cd0, cd1 := logged[0].Activity.ChannelData, logged[1].Activity.ChannelData
	if string(cd0["streamSequence"]) != "7" || string(cd0["streamType"]) != `"streaming"` {
		t.Fatalf("first revision channelData %s", cd0)
	}
	if string(cd1["streamId"]) != `"`+first+`"` || string(cd1["streamType"]) != `"final"` || logged[1].Activity.ID != final {
		t.Fatalf("final channelData %s", cd1)
	}
	r := e.connector(http.MethodPost, map[string]any{"type": "typing", "text": "late",
		"entities": []any{map[string]any{"type": "streaminfo", "streamType": "streaming", "streamSequence": 2, "streamId": first}}},
		"conversations", cid, "activities")
	mustStatus(t, r, http.StatusConflict)
}

// TestConcurrentFinalsSealOnce: of many finals for one stream sent at once, exactly one is stored;
// the others get 409 StreamConcluded.
func TestConcurrentFinalsSealOnce(t *testing.T) {
	e, conv := connectorEnv(t)
	cid := conv.ConversationID
	first := e.botSend(cid, "", map[string]any{"type": "typing", "text": "A", "channelData": map[string]any{"streamType": "streaming", "streamSequence": 1}})
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"type":"message","text":"final %d","channelData":{"streamType":"final","streamId":%q}}`, i, first)
			req, _ := http.NewRequest(http.MethodPost, e.connectorURL("conversations", cid, "activities"), strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	ok := 0
	for _, s := range statuses {
		switch s {
		case http.StatusOK:
			ok++
		case http.StatusConflict:
		default:
			t.Fatalf("status %d", s)
		}
	}
	if acts, _ := e.history(conv.Token, cid, ""); ok != 1 || len(acts) != 1 {
		t.Fatalf("%d finals accepted, %d in history; want 1 and 1", ok, len(acts))
	}
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPartGroupingPassesThrough: HowTo parts pass unchanged; a part Web Chat will not group (an
// isPartOf @id that is neither a blank node nor a URL, a string position) is stored too, with a
// warning in the log.
func TestPartGroupingPassesThrough(t *testing.T) {
	var logs syncBuffer
	e, conv := connectorEnv(t, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	cid := conv.ConversationID
	part := func(id string, position any) map[string]any {
		return map[string]any{"type": "message", "text": "step", "entities": []any{map[string]any{
			"type": "https://schema.org/Message", "@context": "https://schema.org", "@id": "", "@type": "Message",
			"isPartOf": map[string]any{"@id": id, "@type": "HowTo"}, "position": position}}}
	}
	e.botSend(cid, "", part("_:h1", 2))
	if strings.Contains(logs.String(), "will not group") {
		t.Fatalf("warning for a valid part: %s", logs.String())
	}
	e.botSend(cid, "", part("h-00001", 1))
	e.botSend(cid, "", part("_:h1", "3"))
	if n := strings.Count(logs.String(), "Web Chat will not group"); n != 2 {
		t.Fatalf("%d warnings, want 2:\n%s", n, logs.String())
	}
	acts, _ := e.history(conv.Token, cid, "")
	if len(acts) != 3 {
		t.Fatalf("history has %d activities, want 3", len(acts))
	}
	for i, a := range acts {
		ent := a["entities"].([]any)[0].(map[string]any)
		if ent["isPartOf"] == nil || ent["position"] == nil {
			t.Fatalf("part %d lost its grouping: %v", i, ent)
		}
	}
	if _, _, ok := decodeMap(t, acts[0]).PartGrouping(); !ok {
		t.Fatal("the valid part is not a HowTo part after the round trip")
	}
}

// TestConnectorConversations: CreateConversation with an activity, GetConversations, the
// members routes, SendConversationHistory, and the bot account taken from the bot's activity.
func TestConnectorConversations(t *testing.T) {
	e := newEnv(t)
	r := e.connector(http.MethodPost, map[string]any{"bot": map[string]string{"id": "b1", "name": "Bee"},
		"members": []any{map[string]string{"id": "u9", "name": "Nine"}}, "activity": map[string]any{"type": "message", "text": "hello"}}, "conversations")
	mustStatus(t, r, http.StatusOK)
	var created conversationResourceResponse
	r.decode(t, &created)
	if created.ID == "" || created.ActivityID == "" || created.ServiceURL != e.srv.serviceURL {
		t.Fatalf("CreateConversation answered %s", r.body)
	}
	r = e.connector(http.MethodGet, nil, "conversations", created.ID, "members")
	mustStatus(t, r, http.StatusOK)
	var ms []map[string]string
	r.decode(t, &ms)
	if len(ms) != 2 || ms[0]["id"] != "b1" || ms[0]["role"] != "bot" || ms[1]["id"] != "u9" || ms[1]["role"] != "user" {
		t.Fatalf("members %v", ms)
	}
	r = e.connector(http.MethodGet, nil, "conversations", created.ID, "activities", created.ActivityID, "members")
	mustStatus(t, r, http.StatusOK)
	r = e.connector(http.MethodGet, nil, "conversations", created.ID, "members", "u9")
	mustStatus(t, r, http.StatusOK)
	var one map[string]string
	r.decode(t, &one)
	if one["id"] != "u9" || one["name"] != "Nine" {
		t.Fatalf("GetConversationMember %s", r.body)
	}
	mustStatus(t, e.connector(http.MethodGet, nil, "conversations", created.ID, "members", "nobody"), http.StatusNotFound)
	r = e.connector(http.MethodGet, nil, "conversations", created.ID, "pagedmembers")
	mustStatus(t, r, http.StatusOK)
	var paged struct {
		Members []map[string]string `json:"members"`
	}
	r.decode(t, &paged)
	if len(paged.Members) != 2 {
		t.Fatalf("GetConversationPagedMembers %s", r.body)
	}

	r = e.connector(http.MethodPost, map[string]any{"activities": []any{
		map[string]any{"type": "message", "text": "old 1", "id": "x1", "timestamp": "2020-01-01T00:00:00Z", "from": map[string]string{"id": "u9", "role": "user"}},
		// A reply to an id of the imported transcript, not of this conversation: Web Chat would
		// hold it for an activity that never comes.
		map[string]any{"type": "message", "text": "old 2", "id": "x2", "timestamp": "2020-01-01T00:00:01Z", "replyToId": "x1"},
	}}, "conversations", created.ID, "activities", "history")
	mustStatus(t, r, http.StatusOK)

	// A client joins with the secret and sees the bot's activities from the bot's account.
	r = e.do(request{method: http.MethodGet, path: "/conversations/" + created.ID, auth: testSecret})
	mustStatus(t, r, http.StatusOK)
	acts, _ := e.history(testSecret, created.ID, "")
	if len(acts) != 3 || acts[0]["text"] != "hello" || acts[1]["text"] != "old 1" || acts[2]["text"] != "old 2" {
		t.Fatalf("history %v", acts)
	}
	from := acts[0]["from"].(map[string]any)
	if from["id"] != "b1" || from["name"] != "Bee" || from["role"] != "bot" || acts[0]["recipient"].(map[string]any)["id"] != "u9" {
		t.Fatalf("the created activity's from %v recipient %v", from, acts[0]["recipient"])
	}
	if acts[1]["from"].(map[string]any)["id"] != "u9" || acts[2]["from"].(map[string]any)["id"] != "b1" || acts[1]["id"] == "x1" || acts[2]["replyToId"] != nil {
		t.Fatalf("history activities %v", acts[1:])
	}

	r = e.connector(http.MethodGet, nil, "conversations")
	mustStatus(t, r, http.StatusOK)
	var list conversationsResult
	r.decode(t, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].ID != created.ID || len(list.Conversations[0].Members) != 2 {
		t.Fatalf("GetConversations %s", r.body)
	}
}

// TestBotIDFromFirstActivity: without --bot-id, the bot's first activity names the bot for the
// conversation: later activities from it, and recipients of user activities, use that account.
func TestBotIDFromFirstActivity(t *testing.T) {
	b := newTestBot(t)
	e := newBotEnv(t, b.endpoint(), bot.Options{})
	conv := e.startConversation("u1")
	b.next()
	e.botSend(conv.ConversationID, "", map[string]any{"type": "message", "text": "hi", "from": map[string]string{"id": "mybot", "name": "My Bot"}})
	e.botSend(conv.ConversationID, "", map[string]any{"type": "message", "text": "again", "from": map[string]string{"id": "other"}})
	e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "to you"})
	if got := b.next(); got.Recipient.ID != "mybot" || got.Recipient.Name != "My Bot" {
		t.Fatalf("recipient %+v, want the bot named by its first activity", got.Recipient)
	}
	acts, _ := e.history(conv.Token, conv.ConversationID, "")
	for _, a := range acts[:2] {
		if f := a["from"].(map[string]any); f["id"] != "mybot" || f["name"] != "My Bot" || f["role"] != "bot" {
			t.Fatalf("bot activity from %v", f)
		}
	}

	fixed := newBotEnv(t, b.endpoint(), bot.Options{}, func(o *Options) { o.BotID, o.BotName = "flagbot", "Flag Bot" })
	c2 := fixed.startConversation("u1")
	fixed.botSend(c2.ConversationID, "", map[string]any{"type": "message", "text": "hi", "from": map[string]string{"id": "mybot"}})
	acts, _ = fixed.history(c2.Token, c2.ConversationID, "")
	if f := acts[0]["from"].(map[string]any); f["id"] != "flagbot" || f["name"] != "Flag Bot" {
		t.Fatalf("with BotID set, from %v", f)
	}
}

// TestConnectorAttachments: UploadAttachment, then AttachmentInfo and both views with the bytes
// and content type.
func TestConnectorAttachments(t *testing.T) {
	e, conv := connectorEnv(t)
	orig, thumb := randomBytes(t, 3000), []byte{1, 2, 3}
	r := e.connector(http.MethodPost, map[string]any{"type": "image/png", "name": "../pic.png",
		"originalBase64": base64.StdEncoding.EncodeToString(orig), "thumbnailBase64": base64.StdEncoding.EncodeToString(thumb)},
		"conversations", conv.ConversationID, "attachments")
	mustStatus(t, r, http.StatusOK)
	var rr resourceResponse
	r.decode(t, &rr)
	r = e.connector(http.MethodGet, nil, "attachments", rr.ID)
	mustStatus(t, r, http.StatusOK)
	var info attachmentInfo
	r.decode(t, &info)
	if info.Name != "pic.png" || info.Type != "image/png" || len(info.Views) != 2 || info.Views[0].Size != 3000 || info.Views[1].Size != 3 {
		t.Fatalf("AttachmentInfo %s", r.body)
	}
	for view, want := range map[string][]byte{"original": orig, "thumbnail": thumb} {
		resp, err := http.Get(e.connectorURL("attachments", rr.ID, "views", view))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Equal(data, want) || resp.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("view %s: %d %s, %d bytes", view, resp.StatusCode, resp.Header.Get("Content-Type"), len(data))
		}
	}
}

// TestUploadReachesBotR20: the bot gets the uploaded file's contentUrl and can GET the same bytes
// and content type with a plain GET.
func TestUploadReachesBotR20(t *testing.T) {
	b := newTestBot(t)
	e := newBotEnv(t, b.endpoint(), bot.Options{})
	conv := e.startConversation("u1")
	b.next()
	data := randomBytes(t, 10<<10)
	ct, body := multipartUpload(t, `{"type":"message","from":{"id":"u1"}}`, uploadFile{name: "x.png", contentType: "image/png", data: data})
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/upload?userId=u1", auth: conv.Token,
		body: body, header: map[string]string{"Content-Type": ct}})
	mustStatus(t, r, http.StatusOK)
	got := b.next()
	if len(got.Attachments) != 1 {
		t.Fatalf("the bot got %d attachments", len(got.Attachments))
	}
	f := fetch(t, e, got.Attachments[0].ContentURL)
	if f.status != http.StatusOK || !bytes.Equal(f.body, data) || f.header.Get("Content-Type") != "image/png" {
		t.Fatalf("GET contentUrl: %d %s, %d bytes", f.status, f.header.Get("Content-Type"), len(f.body))
	}
}

// TestReplyToNamesWhatClientsCanGet: a bot activity's replyToId is kept only when it names an
// activity the conversation holds; one not yet reached (it would later name another activity),
// deleted, of another conversation or not an activity id at all is dropped, as a client would
// wait for it in vain (Web Chat holds such a reply up to 5 s).
func TestReplyToNamesWhatClientsCanGet(t *testing.T) {
	e, conv := connectorEnv(t)
	cid := conv.ConversationID
	u := e.post(conv.Token, cid, map[string]any{"type": "message", "text": "question"})
	gone := e.botSend(cid, "", map[string]any{"type": "message", "text": "to be deleted"})
	mustStatus(t, e.connector(http.MethodDelete, nil, "conversations", cid, "activities", gone), http.StatusOK)
	for _, tc := range []struct{ replyTo, want string }{
		{u, u},
		{cid + "|0000100", ""},
		{gone, ""},
		{"other|0000001", ""},
		{"does-not-exist", ""},
	} {
		id := e.botSend(cid, "", map[string]any{"type": "message", "text": "answer", "replyToId": tc.replyTo})
		a, err := e.store.Activity(context.Background(), cid, id)
		if err != nil {
			t.Fatal(err)
		}
		if a.ReplyToID != tc.want {
			t.Errorf("replyToId %q stored as %q, want %q", tc.replyTo, a.ReplyToID, tc.want)
		}
	}
}
