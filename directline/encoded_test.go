package directline

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/bot"
)

// TestOneEncodingForStreamAndBot: a posted activity reaches the stream and the bot as the same
// bytes, the encoding of the stamped activity that history returns.
func TestOneEncodingForStreamAndBot(t *testing.T) {
	bodies := make(chan []byte, 16)
	botSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		bodies <- data
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(botSrv.Close)
	e := newBotEnv(t, botSrv.URL+"/api/messages", bot.Options{})
	conv := e.startConversation("u1")
	<-bodies // the conversationUpdate
	ws := e.dial(conv.StreamURL)
	id := e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "hi <b>&</b>",
		"id": "client-id", "channelData": map[string]any{"clientActivityID": "c1", "z": []int{1, 2}}, "locale": "en-US"})

	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var frameActivity json.RawMessage
	for frameActivity == nil {
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Activities []json.RawMessage `json:"activities"`
		}
		if len(data) > 0 && json.Unmarshal(data, &f) == nil && len(f.Activities) > 0 {
			frameActivity = f.Activities[0]
		}
	}
	botBody := <-bodies

	stored, err := e.srv.store.Activity(t.Context(), conv.ConversationID, id)
	if err != nil {
		t.Fatal(err)
	}
	want, err := activity.Encode(stored)
	if err != nil {
		t.Fatal(err)
	}
	if string(botBody) != string(want) {
		t.Errorf("the bot got\n %s\nwant %s", botBody, want)
	}
	if string(frameActivity) != string(want) {
		t.Errorf("the stream sent\n %s\nwant %s", frameActivity, want)
	}
}
