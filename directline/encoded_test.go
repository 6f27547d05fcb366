package directline

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

// TestReadBody: the body within the limit, with or without a Content-Length; *http.MaxBytesError
// past the limit either way; a body shorter than its Content-Length is an error.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("x", 100)
	tests := []struct {
		name          string
		contentLength int64
		limit         int64
		wantErr       bool
		tooLarge      bool
	}{
		{"with length", 100, 1000, false, false},
		{"without length", -1, 1000, false, false},
		{"at the limit", 100, 100, false, false},
		{"length past the limit", 100, 99, true, true},
		{"no length, past the limit", -1, 99, true, true},
		{"shorter than its length", 150, 1000, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", io.NopCloser(strings.NewReader(body)))
			r.ContentLength = tt.contentLength
			got, err := readBody(r, tt.limit)
			var tooLarge *http.MaxBytesError
			if (err != nil) != tt.wantErr || errors.As(err, &tooLarge) != tt.tooLarge {
				t.Fatalf("error %v, want error %v (too large %v)", err, tt.wantErr, tt.tooLarge)
			}
			if err == nil && string(got) != body {
				t.Fatalf("got %d bytes", len(got))
			}
		})
	}
}
