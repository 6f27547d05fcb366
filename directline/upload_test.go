package directline

import (
	"bytes"
	"crypto/rand"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
	"time"
)

// randomBytes returns n random bytes.
func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// uploadFile is one file part for multipartUpload.
type uploadFile struct {
	name, contentType string
	data              []byte
}

// multipartUpload builds the body DirectLineJS sends: an activity part (when activityJSON != "")
// and one "file" part per file.
func multipartUpload(t *testing.T, activityJSON string, files ...uploadFile) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if activityJSON != "" {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="activity"; filename="blob"`)
		h.Set("Content-Type", activityContentType)
		p, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		p.Write([]byte(activityJSON))
	}
	for _, f := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="`+f.name+`"`)
		h.Set("Content-Type", f.contentType)
		p, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		p.Write(f.data)
	}
	w.Close()
	return w.FormDataContentType(), buf.Bytes()
}

// fetch downloads a contentUrl without Direct Line credentials, as a bot does.
func fetch(t *testing.T, e *env, link string) response {
	t.Helper()
	if !strings.HasPrefix(link, e.ts.URL+BasePath+"/") {
		t.Fatalf("contentUrl %s is not served by the service", link)
	}
	return e.do(request{method: http.MethodGet, path: link})
}

// TestUploadMultipartR20: DirectLineJS's multipart upload (activity part + file parts) stores each
// file; the stored activity keeps the client's fields and gets one attachment per file whose
// contentUrl serves the same bytes and content type (R20 step 2).
func TestUploadMultipartR20(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	png := randomBytes(t, 10<<10)
	txt := []byte("plain text file")
	activityJSON := `{"type":"message","text":"files","channelData":{"clientActivityID":"up1","attachmentSizes":[10240,15]},` +
		`"attachments":[{"contentType":"image/png","name":"photo.png","thumbnailUrl":"data:image/png;base64,AAAA"},{"contentType":"text/plain","name":"notes.txt"}]}`
	ct, body := multipartUpload(t, activityJSON,
		uploadFile{"photo.png", "image/png", png}, uploadFile{"notes.txt", "text/plain", txt})
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/upload?userId=u1", auth: conv.Token, body: body, header: map[string]string{"Content-Type": ct}})
	mustStatus(t, r, http.StatusOK)
	var rr resourceResponse
	r.decode(t, &rr)

	acts, _ := e.history(conv.Token, conv.ConversationID, "")
	if len(acts) != 1 || acts[0]["id"] != rr.ID || acts[0]["text"] != "files" {
		t.Fatalf("history %v, want the upload's activity %s", acts, rr.ID)
	}
	if cd := acts[0]["channelData"].(map[string]any); cd["clientActivityID"] != "up1" || cd["attachmentSizes"] == nil {
		t.Fatalf("channelData %v", cd)
	}
	atts := acts[0]["attachments"].([]any)
	if len(atts) != 2 {
		t.Fatalf("attachments %v", atts)
	}
	for i, want := range []uploadFile{{"photo.png", "image/png", png}, {"notes.txt", "text/plain", txt}} {
		att := atts[i].(map[string]any)
		if att["name"] != want.name || att["contentType"] != want.contentType {
			t.Fatalf("attachment %d: %v", i, att)
		}
		got := fetch(t, e, att["contentUrl"].(string))
		mustStatus(t, got, http.StatusOK)
		if got.header.Get("Content-Type") != want.contentType || !bytes.Equal(got.body, want.data) {
			t.Fatalf("download %d: %s, %d bytes", i, got.header.Get("Content-Type"), len(got.body))
		}
		if got.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("download %d without nosniff", i)
		}
	}
	if atts[0].(map[string]any)["thumbnailUrl"] != "data:image/png;base64,AAAA" {
		t.Fatalf("thumbnailUrl lost: %v", atts[0])
	}
}

// TestUploadRaw: a single file as the raw body, named by Content-Disposition, without an activity
// part, becomes an empty message from userId with one attachment.
func TestUploadRaw(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("")
	data := randomBytes(t, 3000)
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/upload?userId=u7", auth: testSecret, body: data,
		header: map[string]string{"Content-Type": "application/pdf", "Content-Disposition": `attachment; filename="report.pdf"`}})
	mustStatus(t, r, http.StatusOK)
	acts, _ := e.history(testSecret, conv.ConversationID, "")
	if len(acts) != 1 || acts[0]["type"] != "message" || acts[0]["from"].(map[string]any)["id"] != "u7" {
		t.Fatalf("history %v", acts)
	}
	att := acts[0]["attachments"].([]any)[0].(map[string]any)
	if att["name"] != "report.pdf" || att["contentType"] != "application/pdf" {
		t.Fatalf("attachment %v", att)
	}
	got := fetch(t, e, att["contentUrl"].(string))
	mustStatus(t, got, http.StatusOK)
	if got.header.Get("Content-Type") != "application/pdf" || !bytes.Equal(got.body, data) {
		t.Fatalf("download: %s, %d bytes", got.header.Get("Content-Type"), len(got.body))
	}
}

// TestUploadTooLargeR20: a file over the limit is 413 MessageSizeTooBig with CORS headers, both as
// multipart and as a raw body (R20 step 3), and stores nothing.
func TestUploadTooLargeR20(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxUploadBytes = 64 << 10 })
	conv := e.startConversation("u1")
	big := randomBytes(t, 64<<10+1)
	ct, body := multipartUpload(t, `{"type":"message"}`, uploadFile{"big.bin", "application/octet-stream", big})
	for name, rq := range map[string]request{
		"multipart": {header: map[string]string{"Content-Type": ct}, body: body},
		"raw":       {header: map[string]string{"Content-Type": "application/octet-stream"}, body: big},
	} {
		t.Run(name, func(t *testing.T) {
			rq.method, rq.path, rq.auth = http.MethodPost, "/conversations/"+conv.ConversationID+"/upload?userId=u1", conv.Token
			rq.header["Origin"] = "https://chat.example"
			r := e.do(rq)
			mustStatus(t, r, http.StatusRequestEntityTooLarge)
			if code := r.errorCode(t); code != CodeMessageSizeTooBig {
				t.Fatalf("code %s", code)
			}
			if r.header.Get("Access-Control-Allow-Origin") == "" {
				t.Fatalf("413 without CORS headers: %v", r.header)
			}
		})
	}
	if acts, _ := e.history(conv.Token, conv.ConversationID, ""); len(acts) != 0 {
		t.Fatalf("a rejected upload stored %v", acts)
	}
	// Exactly at the limit is fine.
	ct, body = multipartUpload(t, "", uploadFile{"ok.bin", "application/octet-stream", big[:64<<10]})
	mustStatus(t, e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/upload", auth: conv.Token, body: body, header: map[string]string{"Content-Type": ct}}), http.StatusOK)
}

// TestUploadFileNames: hostile file names are stored as a harmless last path element; the
// download's Content-Disposition carries the sanitized name.
func TestUploadFileNames(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	tests := []struct {
		name string
		sent string
		want string
	}{
		{"parent directories", "../../etc/passwd", "passwd"},
		{"windows path", `..\..\windows\system32\cmd.exe`, "cmd.exe"},
		{"absolute", "/etc/shadow", "shadow"},
		{"dot dot alone", "..", "file"},
		{"empty", "", "file"},
		{"tab", "a\tb.txt", "ab.txt"},
		{"very long", strings.Repeat("n", 1000) + ".txt", strings.Repeat("n", 255)},
		{"unicode kept", "résumé.pdf", "résumé.pdf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct, body := multipartUpload(t, "", uploadFile{tt.sent, "text/plain", []byte("x")})
			r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/upload", auth: conv.Token, body: body, header: map[string]string{"Content-Type": ct}})
			mustStatus(t, r, http.StatusOK)
			var rr resourceResponse
			r.decode(t, &rr)
			acts, _ := e.history(conv.Token, conv.ConversationID, "")
			last := acts[len(acts)-1]
			if last["id"] != rr.ID {
				t.Fatalf("last activity %v, want %s", last["id"], rr.ID)
			}
			att := last["attachments"].([]any)[0].(map[string]any)
			if att["name"] != tt.want {
				t.Fatalf("stored name %q, want %q", att["name"], tt.want)
			}
			got := fetch(t, e, att["contentUrl"].(string))
			mustStatus(t, got, http.StatusOK)
			if cd := got.header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") {
				t.Fatalf("Content-Disposition %q", cd)
			}
		})
	}
}

// TestSanitizeFileName covers names a multipart writer cannot send (NUL, invalid UTF-8).
func TestSanitizeFileName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a\x00b", "ab"},
		{"a\tb\x01c\x7f.txt", "abc.txt"},
		{"\xff\xfe.txt", ".txt"},
		{" . ", "file"},
		{"dir/", "file"},
		{"x/\x00", "file"},
		{strings.Repeat("é", 200), strings.Repeat("é", 127)},
	}
	for _, tt := range tests {
		if got := sanitizeFileName(tt.in); got != tt.want {
			t.Errorf("sanitizeFileName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDownloadLinkExpires: a download link stops working after AttachmentURLLifetime (404 File not
// found, like the hosted service's expired uploads).
func TestDownloadLinkExpires(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	e := newEnv(t, func(o *Options) { o.Now = clock.Now })
	conv := e.startConversation("u1")
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/upload", auth: conv.Token, body: "data",
		header: map[string]string{"Content-Type": "text/plain"}})
	mustStatus(t, r, http.StatusOK)
	acts, _ := e.history(conv.Token, conv.ConversationID, "")
	link := acts[0]["attachments"].([]any)[0].(map[string]any)["contentUrl"].(string)
	mustStatus(t, fetch(t, e, link), http.StatusOK)
	clock.Set(clock.Now().Add(DefaultAttachmentURLLifetime + time.Second))
	got := fetch(t, e, link)
	mustStatus(t, got, http.StatusNotFound)
	if got.errorCode(t) != CodeBadArgument || !strings.Contains(string(got.body), "File not found") {
		t.Fatalf("expired link: %s", got.body)
	}
}

// TestUploadJSONActivityPart: an activity part sent as application/json (named "activity") is the
// activity too, and a file part without Content-Type is stored as application/octet-stream.
func TestUploadJSONActivityPart(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	body := multipartBody("B",
		[2]string{`Content-Disposition: form-data; name="activity"` + "\r\nContent-Type: application/json", `{"type":"message","text":"with json part"}`},
		[2]string{`Content-Disposition: form-data; name="file"; filename="raw.bin"`, "bytes"})
	r := e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/upload", auth: conv.Token, body: body,
		header: map[string]string{"Content-Type": "multipart/form-data; boundary=B"}})
	mustStatus(t, r, http.StatusOK)
	acts, _ := e.history(conv.Token, conv.ConversationID, "")
	att := acts[0]["attachments"].([]any)[0].(map[string]any)
	if acts[0]["text"] != "with json part" || att["name"] != "raw.bin" || att["contentType"] != "application/octet-stream" {
		t.Fatalf("activity %v", acts[0])
	}
	got := fetch(t, e, att["contentUrl"].(string))
	if got.status != http.StatusOK || string(got.body) != "bytes" {
		t.Fatalf("download %d %q", got.status, got.body)
	}
}
