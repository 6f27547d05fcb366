package directline

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// multipartBody builds a multipart/form-data body from raw part header blocks and contents.
func multipartBody(boundary string, parts ...[2]string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("--" + boundary + "\r\n" + p[0] + "\r\n\r\n" + p[1] + "\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	return b.String()
}

// TestBadInput sends malformed and hostile requests; each gets the documented status and a
// Direct Line ErrorResponse, and the server keeps serving afterwards.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	a := e.startConversation("u1")
	b := e.startConversation("u2")
	convA := "/conversations/" + a.ConversationID
	convB := "/conversations/" + b.ConversationID

	past := &tokens{key: e.key, issuer: e.srv.tokens.issuer, lifetime: time.Minute, now: func() time.Time { return time.Now().Add(-time.Hour) }}
	expired, _, err := past.conversationToken(a.ConversationID, "u1")
	if err != nil {
		t.Fatal(err)
	}
	otherKey := &tokens{key: bytes.Repeat([]byte{7}, 32), issuer: e.srv.tokens.issuer, lifetime: time.Hour, now: time.Now}
	forged, _, _ := otherKey.conversationToken(a.ConversationID, "u1")
	unsigned, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{
		"conv": a.ConversationID, "iss": e.srv.tokens.issuer, "aud": e.srv.tokens.issuer,
		"nbf": time.Now().Unix() - 10, "exp": time.Now().Unix() + 600,
	}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	streamCred, _ := url.Parse(a.StreamURL)
	streamToken := streamCred.Query().Get("t")
	link, err := e.srv.downloadURL(a.ConversationID, "no-such-file")
	if err != nil {
		t.Fatal(err)
	}

	huge := `{"type":"message","text":"` + strings.Repeat("x", 300<<10) + `"}`
	deep := `{"type":"message","channelData":{"x":` + strings.Repeat("[", 100000) + `}}`
	const bd = "BOUNDARY"
	mp := map[string]string{"Content-Type": "multipart/form-data; boundary=" + bd}
	actPart := `Content-Disposition: form-data; name="activity"; filename="blob"` + "\r\nContent-Type: application/vnd.microsoft.activity"
	filePart := `Content-Disposition: form-data; name="file"; filename="a.txt"` + "\r\nContent-Type: text/plain"

	post := func(path, auth string, body any) request {
		return request{method: http.MethodPost, path: path, auth: auth, body: body}
	}
	get := func(path, auth string) request { return request{method: http.MethodGet, path: path, auth: auth} }
	tests := []struct {
		name   string
		req    request
		status int
		code   string
	}{
		{"bad JSON", post(convA+"/activities", a.Token, `{"type":`), 400, CodeBadArgument},
		{"JSON array", post(convA+"/activities", a.Token, `[{"type":"message"}]`), 400, CodeBadArgument},
		{"JSON string", post(convA+"/activities", a.Token, `"message"`), 400, CodeBadArgument},
		{"JSON number", post(convA+"/activities", a.Token, `42`), 400, CodeBadArgument},
		{"JSON null", post(convA+"/activities", a.Token, `null`), 400, CodeMissingProperty},
		{"empty body", post(convA+"/activities", a.Token, ``), 400, CodeBadArgument},
		{"text is a number", post(convA+"/activities", a.Token, `{"type":"message","text":5}`), 400, CodeBadArgument},
		// Kept, bytes that are not UTF-8 would break every strict stream reader of the conversation;
		// decoded, two such clientActivityIDs would read alike.
		{"not UTF-8 in text", post(convA+"/activities", a.Token, "{\"type\":\"message\",\"text\":\"\xff\"}"), 400, CodeBadArgument},
		{"not UTF-8 in localTimestamp", post(convA+"/activities", a.Token, "{\"type\":\"message\",\"localTimestamp\":\"2024-05-01T19:00:00.000+09:00\xff\"}"), 400, CodeBadArgument},
		{"not UTF-8 in clientActivityID", post(convA+"/activities", a.Token, "{\"type\":\"message\",\"channelData\":{\"clientActivityID\":\"\xfe\"}}"), 400, CodeBadArgument},
		{"not UTF-8 in a key", post(convA+"/activities", a.Token, "{\"type\":\"message\",\"\xc3\":1}"), 400, CodeBadArgument},
		{"entity is null", post(convA+"/activities", a.Token, `{"type":"message","entities":[{"type":"x"},null]}`), 400, CodeBadArgument},
		// Bot Framework SDKs read types ignoring case, with an optional "/subtype".
		{"conversationUpdate in another case", post(convA+"/activities", a.Token, `{"type":"ConversationUpdate","membersAdded":[{"id":"evil"}]}`), 400, CodeBadArgument},
		{"conversationUpdate with a subtype", post(convA+"/activities", a.Token, `{"type":"conversationupdate/x"}`), 400, CodeBadArgument},
		{"conversationUpdate with spaces", post(convA+"/activities", a.Token, `{"type":" conversationUpdate "}`), 400, CodeBadArgument},
		{"contactRelationUpdate in capitals", post(convA+"/activities", a.Token, `{"type":"CONTACTRELATIONUPDATE"}`), 400, CodeBadArgument},
		{"entity is a string", post(convA+"/activities", a.Token, `{"type":"message","entities":["x"]}`), 400, CodeBadArgument},
		{"entity is a number", post(convA+"/activities", a.Token, `{"type":"message","entities":[1]}`), 400, CodeBadArgument},
		{"generate body not UTF-8", post("/tokens/generate", testSecret, "{\"user\":{\"id\":\"\xff\"}}"), 400, CodeBadArgument},
		{"upload activity part not UTF-8", request{method: http.MethodPost, path: convA + "/upload", auth: a.Token, header: mp,
			body: multipartBody(bd, [2]string{actPart, "{\"type\":\"message\",\"text\":\"\xff\"}"}, [2]string{filePart, "hello"})}, 400, CodeBadArgument},
		{"upload file not UTF-8 is fine", request{method: http.MethodPost, path: convA + "/upload", auth: a.Token, header: mp,
			body: multipartBody(bd, [2]string{actPart, `{"type":"message"}`}, [2]string{filePart, "\xff\xfe\x00"})}, 200, ""},
		{"from is a string", post(convA+"/activities", a.Token, `{"type":"message","from":"x"}`), 400, CodeBadArgument},
		{"from.id is a number", post(convA+"/activities", a.Token, `{"type":"message","from":{"id":5}}`), 400, CodeBadArgument},
		{"channelData is an array", post(convA+"/activities", a.Token, `{"type":"message","channelData":[]}`), 400, CodeBadArgument},
		{"attachments is an object", post(convA+"/activities", a.Token, `{"type":"message","attachments":{}}`), 400, CodeBadArgument},
		{"attachment contentUrl is a number", post(convA+"/activities", a.Token, `{"type":"message","attachments":[{"contentUrl":1}]}`), 400, CodeBadArgument},
		{"entities is a string", post(convA+"/activities", a.Token, `{"type":"message","entities":"x"}`), 400, CodeBadArgument},
		{"type is a number", post(convA+"/activities", a.Token, `{"type":5}`), 400, CodeBadArgument},
		{"missing type", post(convA+"/activities", a.Token, `{"text":"hi"}`), 400, CodeMissingProperty},
		{"empty type", post(convA+"/activities", a.Token, `{"type":""}`), 400, CodeMissingProperty},
		{"type too long", post(convA+"/activities", a.Token, `{"type":"`+strings.Repeat("t", 65)+`"}`), 400, CodeBadArgument},
		{"no from.id with a secret", post(convB+"/activities", testSecret, `{"type":"message"}`), 200, ""},
		{"from.id too long", post(convA+"/activities", testSecret, `{"type":"message","from":{"id":"`+strings.Repeat("u", 300)+`"}}`), 400, CodeBadArgument},
		{"clientActivityID too long", post(convA+"/activities", a.Token, `{"type":"message","channelData":{"clientActivityID":"`+strings.Repeat("c", 40000)+`"}}`), 400, CodeBadArgument},
		{"body over 256 KB", post(convA+"/activities", a.Token, huge), 413, CodeMessageSizeTooBig},
		{"nesting too deep", post(convA+"/activities", a.Token, deep), 400, CodeBadArgument},
		{"no Authorization", post(convA+"/activities", "", `{"type":"message"}`), 401, CodeUnauthorized},
		{"Basic scheme", request{method: http.MethodGet, path: convA + "/activities", header: map[string]string{"Authorization": "Basic dTpw"}}, 401, CodeUnauthorized},
		{"empty Bearer", request{method: http.MethodGet, path: convA + "/activities", header: map[string]string{"Authorization": "Bearer "}}, 401, CodeUnauthorized},
		{"garbage token", get(convA+"/activities", "not-a-token"), 403, CodeTokenExpired},
		{"very long token", get(convA+"/activities", strings.Repeat("a.", 5000)), 403, CodeTokenExpired},
		{"expired token", get(convA+"/activities", expired), 403, CodeTokenExpired},
		{"token signed with another key", get(convA+"/activities", forged), 403, CodeTokenExpired},
		{"unsigned token (alg none)", get(convA+"/activities", unsigned), 403, CodeTokenExpired},
		{"stream credential as bearer", get(convA+"/activities", streamToken), 403, CodeTokenExpired},
		{"token of another conversation: post", post(convB+"/activities", a.Token, `{"type":"message"}`), 403, CodeForbidden},
		{"token of another conversation: read", get(convB+"/activities", a.Token), 403, CodeForbidden},
		{"token of another conversation: reconnect", get(convB, a.Token), 403, CodeForbidden},
		{"token of another conversation: upload", request{method: http.MethodPost, path: convB + "/upload", auth: a.Token, body: "x", header: map[string]string{"Content-Type": "text/plain"}}, 403, CodeForbidden},
		{"token for an unknown conversation", get("/conversations/nope/activities", a.Token), 403, CodeForbidden},
		{"unknown conversation: read", get("/conversations/nope/activities", testSecret), 404, CodeNotFound},
		{"unknown conversation: post", post("/conversations/nope/activities", testSecret, `{"type":"message","from":{"id":"u"}}`), 404, CodeNotFound},
		{"unknown conversation: reconnect", get("/conversations/nope", testSecret), 404, CodeNotFound},
		{"unknown conversation: dot-dot", get("/conversations/%2e%2e/activities", testSecret), 404, CodeNotFound},
		{"unknown conversation: long id", get("/conversations/"+strings.Repeat("c", 1000)+"/activities", testSecret), 404, CodeNotFound},
		{"watermark abc", get(convA+"/activities?watermark=abc", a.Token), 400, CodeBadArgument},
		{"watermark -5", get(convA+"/activities?watermark=-5", a.Token), 400, CodeBadArgument},
		{"watermark 1e9999", get(convA+"/activities?watermark=1e9999", a.Token), 400, CodeBadArgument},
		{"watermark overflows", get(convA+"/activities?watermark=99999999999999999999", a.Token), 400, CodeBadArgument},
		{"watermark with space", get(convA+"/activities?watermark=%201", a.Token), 400, CodeBadArgument},
		{"watermark hex", get(convA+"/activities?watermark=0x10", a.Token), 400, CodeBadArgument},
		{"reconnect watermark garbage", get(convA+"?watermark=1.5", a.Token), 400, CodeBadArgument},
		{"generate with a token", post("/tokens/generate", a.Token, nil), 403, CodeForbidden},
		{"generate without auth", post("/tokens/generate", "", nil), 401, CodeUnauthorized},
		{"generate body is an array", post("/tokens/generate", testSecret, `[1]`), 400, CodeBadArgument},
		{"generate body is a vertical tab", post("/tokens/generate", testSecret, "\v"), 400, CodeBadArgument},
		{"generate user.id is a number", post("/tokens/generate", testSecret, `{"user":{"id":5}}`), 400, CodeBadArgument},
		{"generate user.id too long", post("/tokens/generate", testSecret, `{"user":{"id":"`+strings.Repeat("u", 300)+`"}}`), 400, CodeBadArgument},
		{"start with bad JSON", post("/conversations", testSecret, `{"user":`), 400, CodeBadArgument},
		{"start with trustedOrigins not a list", post("/conversations", a.Token, `{"trustedOrigins":"x"}`), 400, CodeBadArgument},
		{"refresh with a secret", post("/tokens/refresh", testSecret, nil), 400, CodeBadArgument},
		{"refresh without auth", post("/tokens/refresh", "", nil), 401, CodeUnauthorized},
		{"refresh an expired token", post("/tokens/refresh", expired, nil), 403, CodeTokenExpired},
		{"upload activity part is invalid JSON", request{method: http.MethodPost, path: convA + "/upload", auth: a.Token, header: mp,
			body: multipartBody(bd, [2]string{actPart, `{"type":`}, [2]string{filePart, "hello"})}, 400, CodeBadArgument},
		{"upload activity part has wrong types", request{method: http.MethodPost, path: convA + "/upload", auth: a.Token, header: mp,
			body: multipartBody(bd, [2]string{actPart, `{"type":"message","attachments":"x"}`}, [2]string{filePart, "hello"})}, 400, CodeBadArgument},
		{"upload with two activity parts", request{method: http.MethodPost, path: convA + "/upload", auth: a.Token, header: mp,
			body: multipartBody(bd, [2]string{actPart, `{"type":"message"}`}, [2]string{actPart, `{"type":"message"}`})}, 400, CodeBadArgument},
		{"upload multipart without boundary", request{method: http.MethodPost, path: convA + "/upload", auth: a.Token, header: map[string]string{"Content-Type": "multipart/form-data"},
			body: "--x\r\n\r\n"}, 400, CodeBadArgument},
		{"upload truncated multipart", request{method: http.MethodPost, path: convA + "/upload", auth: a.Token, header: mp,
			body: "--" + bd + "\r\n" + filePart + "\r\n\r\nhello"}, 400, CodeBadArgument},
		{"upload with no parts", request{method: http.MethodPost, path: convA + "/upload", auth: a.Token, header: mp, body: "--" + bd + "--\r\n"}, 400, CodeBadArgument},
		{"upload empty raw body", request{method: http.MethodPost, path: convA + "/upload", auth: a.Token, header: map[string]string{"Content-Type": "image/png"}, body: ""}, 400, CodeBadArgument},
		{"upload userId not UTF-8", request{method: http.MethodPost, path: convA + "/upload?userId=%FF%FE", auth: testSecret, body: "x", header: map[string]string{"Content-Type": "text/plain"}}, 400, CodeBadArgument},
		{"upload userId too long", request{method: http.MethodPost, path: convA + "/upload?userId=" + strings.Repeat("u", 300), auth: testSecret, body: "x", header: map[string]string{"Content-Type": "text/plain"}}, 400, CodeBadArgument},
		{"download with a bad signature", get(convA+"/attachments/x?t=garbage", ""), 404, CodeBadArgument},
		{"download without signature", get(convA+"/attachments/x", ""), 404, CodeBadArgument},
		{"download an unknown file", get(link, ""), 404, CodeBadArgument},
		{"download another conversation's link", get(strings.Replace(link, a.ConversationID, b.ConversationID, 1), ""), 404, CodeBadArgument},
		{"stream without credential", get(convA+"/stream", ""), 403, CodeTokenExpired},
		{"stream with a conversation token", get(convA+"/stream?t="+a.Token, ""), 403, CodeTokenExpired},
		{"stream credential of another conversation", get(convB+"/stream?t="+streamToken, ""), 403, CodeForbidden},
		{"stream watermark garbage", get(convA+"/stream?watermark=x&t="+streamToken, ""), 400, CodeBadArgument},
		{"stream without a WebSocket upgrade", get(convA+"/stream?watermark=-&t="+streamToken, ""), 400, CodeBadArgument},
		{"stream upgrade without a key", request{method: http.MethodGet, path: convA + "/stream?watermark=-&t=" + streamToken,
			header: map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13"}}, 400, CodeBadArgument},
		{"stream upgrade of another version", request{method: http.MethodGet, path: convA + "/stream?watermark=-&t=" + streamToken,
			header: map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "8", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}}, 400, CodeBadArgument},
		{"log export with a token", get(convA+"/log", a.Token), 403, CodeForbidden},
		{"log export of an unknown conversation", get("/conversations/nope/log", testSecret), 404, CodeNotFound},
		{"unknown route", get("/nothing/here", testSecret), 404, CodeNotFound},
		{"wrong method", request{method: http.MethodPut, path: convA + "/activities", auth: a.Token, body: `{}`}, 405, CodeBadArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(tt.req)
			mustStatus(t, r, tt.status)
			if tt.code == "" {
				return
			}
			if code := r.errorCode(t); code != tt.code {
				t.Fatalf("code %q, want %q (body %s)", code, tt.code, r.body)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("error Content-Type %q", ct)
			}
		})
	}

	// The server still serves a normal request.
	id := e.post(a.Token, a.ConversationID, map[string]any{"type": "message", "text": "still here"})
	acts, _ := e.history(a.Token, a.ConversationID, "")
	if len(acts) == 0 || acts[len(acts)-1]["id"] != id {
		t.Fatalf("after the bad input: %v", acts)
	}
}

// TestClientSpeaksForTheUser: an activity posted through the client API is the user's, whatever
// from.role it claims; a bot posts through the Bot Connector API.
func TestClientSpeaksForTheUser(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	for _, from := range []map[string]string{{"role": "bot"}, {"id": "u1", "role": "bot"}, {"id": "u1", "role": "skill"}} {
		e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "hi", "from": from})
	}
	acts, _ := e.history(conv.Token, conv.ConversationID, "")
	for _, a := range acts {
		if from := a["from"].(map[string]any); from["role"] != "user" || from["id"] != "u1" {
			t.Errorf("stored from %v, want the user u1", from)
		}
	}
}

// TestBodyEndingEarly: a body shorter than its Content-Length (the client hung up) is the
// client's fault: 400, not a 500 logged as the service's error.
func TestBodyEndingEarly(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	conv := e.startConversation("u1")
	conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"type":"message","text":"cut`
	fmt.Fprintf(conn, "POST %s/conversations/%s/activities HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n%s",
		BasePath, conv.ConversationID, conv.Token, body)
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("status %d, log:\n%s", resp.StatusCode, logs.String())
	}
}

// TestOversizedBodyRefusedBeforeItIsSent: a body declared over the limit with "Expect:
// 100-continue" (curl's way with large bodies) gets the 413 at once, not a "100 Continue" for a
// body that would then be cut off.
func TestOversizedBodyRefusedBeforeItIsSent(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	for _, tc := range []struct {
		path, contentType string
		length            int64
	}{
		{"/activities", "application/json", DefaultMaxActivityBytes + 1},
		{"/upload", "multipart/form-data; boundary=b", 1 << 30},
		// A raw body is one file: over the file limit is too large already.
		{"/upload", "text/plain", DefaultMaxUploadBytes + 1},
	} {
		conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s/conversations/%s%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
			BasePath, conv.ConversationID, tc.path, conv.Token, tc.contentType, tc.length)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s, %s, %d bytes: first answer %d, want 413", tc.path, tc.contentType, tc.length, resp.StatusCode)
		}
	}
}

// TestRequestLogLines: one line per request, naming the caller's address (and what a proxy says
// it forwarded for), and an error answered once is not logged again as one "after the response".
func TestRequestLogLines(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	r := e.do(request{method: http.MethodGet, path: "/conversations/x/activities", header: map[string]string{"X-Forwarded-For": "203.0.113.7"}})
	mustStatus(t, r, http.StatusUnauthorized)
	got := logs.String()
	if strings.Count(got, "msg=request") != 1 || !strings.Contains(got, "remote=127.0.0.1:") || !strings.Contains(got, "forwarded_for=203.0.113.7") {
		t.Fatalf("request log:\n%s", got)
	}
	if strings.Contains(got, "after response was committed") {
		t.Fatalf("the answered error is logged again:\n%s", got)
	}
}
