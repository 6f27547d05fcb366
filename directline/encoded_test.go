package directline

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

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

// TestWriteResourceResponse: the answer has the bytes and headers of c.JSON for every id.
func TestWriteResourceResponse(t *testing.T) {
	e := echo.New()
	e.JSONSerializer = jsonSerializer{}
	for _, id := range []string{"conv|0000001", "", `q"uote`, `back\slash`, "tab\t", "é", "<&>", "a|b c"} {
		for _, target := range []string{"/x", "/x?pretty"} {
			rec, want := httptest.NewRecorder(), httptest.NewRecorder()
			if err := writeResourceResponse(e.NewContext(httptest.NewRequest(http.MethodPost, target, nil), rec), id); err != nil {
				t.Fatal(err)
			}
			if err := e.NewContext(httptest.NewRequest(http.MethodPost, target, nil), want).JSON(http.StatusOK, resourceResponse{ID: id}); err != nil {
				t.Fatal(err)
			}
			if rec.Code != want.Code || rec.Body.String() != want.Body.String() || rec.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
				t.Errorf("id %q %s: %d %q %q, want %d %q %q", id, target, rec.Code, rec.Body, rec.Header().Get("Content-Type"),
					want.Code, want.Body, want.Header().Get("Content-Type"))
			}
		}
	}
}
