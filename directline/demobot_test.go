package directline

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/webchat-demo/demobot"
)

// demoEnv is a service delivering to the built-in demo bot.
func demoEnv(t *testing.T) *env {
	t.Helper()
	u, stop, err := demobot.Start("127.0.0.1:0", demobot.Options{StreamDelay: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stop(ctx)
	})
	return newBotEnv(t, u+"/api/messages", bot.Options{})
}

// readUntil reads stream activities until one satisfies done, returning all of them.
func readUntil(t *testing.T, ws *websocket.Conn, done func(*activity.Activity) bool) []*activity.Activity {
	t.Helper()
	var out []*activity.Activity
	for {
		got, _ := readActivities(t, ws, 1)
		for _, m := range got {
			a := decodeMap(t, m)
			out = append(out, a)
			if done(a) {
				return out
			}
		}
	}
}

// TestDemoBotFlows (acceptance 2): the built-in demo bot behind the service: one welcome, echo
// replies tied to the message by replyToId with a larger sequence id, the livestream arriving live
// in streamSequence order with a final naming the first revision and no typing in history, the
// HowTo steps, and an upload the bot downloads.
func TestDemoBotFlows(t *testing.T) {
	e := demoEnv(t)
	conv := e.startConversation("u1")
	ws := e.dial(conv.StreamURL)
	welcome := readUntil(t, ws, func(*activity.Activity) bool { return true })[0]
	if !strings.HasPrefix(welcome.Text, "Welcome") || welcome.From.Role != activity.RoleBot {
		t.Fatalf("first activity %q from %+v, want the welcome", welcome.Text, welcome.From)
	}

	for _, text := range []string{"hello", "again"} {
		id := e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": text})
		got := readUntil(t, ws, func(a *activity.Activity) bool { return a.ReplyToID == id })
		echo, reply := got[0], got[len(got)-1]
		if echo.ID != id || reply.Text != "You said: "+text || seqOfActivity(t, reply) <= seqOfActivity(t, echo) {
			t.Fatalf("echo %s / reply %q to %s", echo.ID, reply.Text, reply.ReplyToID)
		}
	}

	id := e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "stream"})
	got := readUntil(t, ws, func(a *activity.Activity) bool { return a.Type == activity.TypeMessage && a.ReplyToID == id })
	if got[0].ID != id {
		t.Fatalf("first frame %s, want the echo %s", got[0].ID, id)
	}
	revisions, final := got[1:len(got)-1], got[len(got)-1]
	if len(revisions) != 12 {
		t.Fatalf("%d revisions, want 12", len(revisions))
	}
	for i, r := range revisions {
		ls, ok := r.Livestream()
		if !ok || r.Type != activity.TypeTyping || ls.Sequence != float64(i+1) || ls.SessionID != revisions[0].ID {
			t.Fatalf("revision %d: %+v %v", i, ls, ok)
		}
	}
	if ls, ok := final.Livestream(); !ok || ls.Kind != activity.LivestreamFinal || ls.StreamID != revisions[0].ID {
		t.Fatalf("final %+v %v, want streamId %s", ls, ok, revisions[0].ID)
	}
	acts, _ := e.history(conv.Token, conv.ConversationID, "")
	for _, a := range acts {
		if a["type"] == "typing" {
			t.Fatalf("a typing revision is in history: %v", a)
		}
	}
	if last := acts[len(acts)-1]; last["id"] != final.ID {
		t.Fatalf("history ends with %v, want the final", last["id"])
	}

	id = e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "steps"})
	got = readUntil(t, ws, func(a *activity.Activity) bool {
		_, pos, ok := a.PartGrouping()
		return ok && pos != nil && *pos == 2
	})
	var positions []float64
	for _, a := range got[1:] {
		group, pos, ok := a.PartGrouping()
		if !ok || !strings.HasPrefix(group, "_:") || a.ReplyToID != id {
			t.Fatalf("step %q is not a HowTo part replying to %s", a.Text, id)
		}
		positions = append(positions, *pos)
	}
	if len(positions) != 4 || positions[0] != 3 || positions[1] != 1 || positions[2] != 4 {
		t.Fatalf("step positions %v, want 3 1 4 2", positions)
	}

	data := randomBytes(t, 2048)
	ct, body := multipartUpload(t, `{"type":"message","from":{"id":"u1"}}`, uploadFile{name: "notes.txt", contentType: "text/plain", data: data})
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/upload?userId=u1", auth: conv.Token,
		body: body, header: map[string]string{"Content-Type": ct}})
	mustStatus(t, r, http.StatusOK)
	got = readUntil(t, ws, func(a *activity.Activity) bool { return a.From.Role == activity.RoleBot })
	if reply := got[len(got)-1]; !strings.Contains(reply.Text, "notes.txt, text/plain, 2048 bytes") {
		t.Fatalf("upload reply %q, want the downloaded size", reply.Text)
	}
}
