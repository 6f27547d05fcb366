package page

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// modules lays out a node_modules folder with only the stable bundle installed.
func modules(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	dist := filepath.Join(dir, "botframework-webchat", "dist")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dist, "webchat.js"), []byte("window.WebChat={};"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "botframework-webchat", "package.json"), []byte(`{"version":"4.18.1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

type call struct{ userID, userName string }

func newServer(t *testing.T, o Options) *httptest.Server {
	t.Helper()
	h, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(data), resp.Header
}

func TestNewNeedsAWayToMintTokens(t *testing.T) {
	for _, o := range []Options{{}, {TokenURL: "http://x/"}, {Secret: "s"}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) = nil error, want one", o)
		}
	}
}

var configRE = regexp.MustCompile(`(?s)<script type="application/json" id="config">(.*?)</script>`)

func TestRoutes(t *testing.T) {
	var calls []call
	srv := newServer(t, Options{
		ModulesDir: modules(t),
		TokenFunc: func(_ context.Context, userID, userName string) (string, string, error) {
			calls = append(calls, call{userID, userName})
			if userID == "fail" {
				return "", "", errors.New("store closed")
			}
			return "tok-" + userID, "conv-1", nil
		},
	})
	tests := []struct {
		name, method, path, body string
		status                   int
		contains                 string
	}{
		{"page", "GET", "/", "", 200, `id="webchat"`},
		{"page by name", "GET", "/index.html", "", 200, `id="webchat"`},
		{"page takes GET only", "POST", "/", "", 405, "MethodNotAllowed"},
		{"stable bundle", "GET", "/webchat/stable/webchat.js", "", 200, "window.WebChat"},
		{"missing bundle says how to install", "GET", "/webchat/prerelease/webchat.js", "", 404, "make deps"},
		{"unknown bundle", "GET", "/webchat/other/webchat.js", "", 404, "unknown bundle"},
		{"no path traversal", "GET", "/webchat/..%2f..%2fetc/webchat.js", "", 404, "NotFound"},
		{"other paths", "GET", "/robots.txt", "", 404, "NotFound"},
		{"no icon", "GET", "/favicon.ico", "", 204, ""},
		{"token", "POST", "/api/token", `{"userId":"dl_a","userName":"Ann"}`, 200, `"token":"tok-dl_a"`},
		{"token takes POST only", "GET", "/api/token", "", 405, "MethodNotAllowed"},
		{"token body not JSON", "POST", "/api/token", `[`, 400, "BadArgument"},
		{"token user id too long", "POST", "/api/token", `{"userId":"` + strings.Repeat("u", 300) + `"}`, 400, "BadArgument"},
		{"token failure is a 502", "POST", "/api/token", `{"userId":"fail"}`, 502, "store closed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := do(t, tc.method, srv.URL+tc.path, tc.body)
			if status != tc.status || !strings.Contains(body, tc.contains) {
				t.Errorf("%s %s = %d %q, want %d containing %q", tc.method, tc.path, status, body, tc.status, tc.contains)
			}
		})
	}
	if len(calls) != 2 || calls[0] != (call{"dl_a", "Ann"}) {
		t.Errorf("TokenFunc calls = %v", calls)
	}
}

func TestPageConfigNamesInstalledBundles(t *testing.T) {
	srv := newServer(t, Options{ModulesDir: modules(t), TokenFunc: func(context.Context, string, string) (string, string, error) { return "t", "c", nil }})
	_, body, _ := do(t, "GET", srv.URL+"/", "")
	m := configRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no config script in the page")
	}
	var cfg struct {
		Bundles []bundleInfo `json:"bundles"`
		CDN     string       `json:"cdn"`
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &cfg); err != nil {
		t.Fatalf("config %q: %v", m[1], err)
	}
	want := map[string]bundleInfo{
		"stable":     {Bundle: Bundles[0], URL: "webchat/stable/webchat.js", Installed: true, Version: "4.18.1"},
		"prerelease": {Bundle: Bundles[1], URL: "webchat/prerelease/webchat.js"},
	}
	if len(cfg.Bundles) != len(want) {
		t.Fatalf("bundles = %+v", cfg.Bundles)
	}
	for _, b := range cfg.Bundles {
		if b != want[b.Name] {
			t.Errorf("bundle %s = %+v, want %+v", b.Name, b, want[b.Name])
		}
	}
	if !strings.HasPrefix(cfg.CDN, "https://") {
		t.Errorf("cdn = %q", cfg.CDN)
	}
	if strings.Contains(body, "secret") {
		t.Errorf("the page mentions a secret")
	}
}

// The default token source posts the user to tokens/generate with the secret as Bearer, so the
// page receives a token and never the secret.
func TestTokenFromTokenURL(t *testing.T) {
	var gotAuth, gotBody string
	generate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		if r.URL.Query().Get("fail") != "" {
			http.Error(w, `{"error":{"code":"Forbidden"}}`, http.StatusForbidden)
			return
		}
		_, _ = io.WriteString(w, `{"conversationId":"c1","token":"t1","expires_in":1800}`)
	}))
	t.Cleanup(generate.Close)

	srv := newServer(t, Options{Secret: "s3cret", TokenURL: generate.URL + "/v3/directline/tokens/generate"})
	status, body, _ := do(t, "POST", srv.URL+"/api/token", `{"userId":"dl_u","userName":"Uma"}`)
	if status != 200 {
		t.Fatalf("status %d %s", status, body)
	}
	var resp tokenResponse
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if resp != (tokenResponse{Token: "t1", ConversationID: "c1", UserID: "dl_u", UserName: "Uma"}) {
		t.Errorf("response = %+v", resp)
	}
	if gotAuth != "Bearer s3cret" || gotBody != `{"user":{"id":"dl_u","name":"Uma"}}` {
		t.Errorf("generate got auth %q body %q", gotAuth, gotBody)
	}
	if strings.Contains(body, "s3cret") {
		t.Errorf("the token response carries the secret: %s", body)
	}

	// No user id: one is made up in Direct Line's dl_ form.
	_, body, _ = do(t, "POST", srv.URL+"/api/token", "")
	if err := json.Unmarshal([]byte(body), &resp); err != nil || !strings.HasPrefix(resp.UserID, "dl_") || resp.UserName != "You" {
		t.Errorf("response without a user = %s (%v)", body, err)
	}

	failing := newServer(t, Options{Secret: "s3cret", TokenURL: generate.URL + "/?fail=1"})
	if status, body, _ := do(t, "POST", failing.URL+"/api/token", `{}`); status != 502 || !strings.Contains(body, "403") {
		t.Errorf("failing generate = %d %s", status, body)
	}
}
