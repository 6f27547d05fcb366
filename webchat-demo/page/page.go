// Package page serves the demo page: stock Bot Framework Web Chat, loaded from the installed npm
// package, talking to this service's Direct Line API at /v3/directline. The page asks this
// package's backend for a token, the way Microsoft's samples use a token server, so the Direct
// Line secret never reaches the browser.
//
// Routes (every path outside /v3/ is meant to be routed here):
//
//	GET  /                               the page (index.html with the bundle table inlined)
//	GET  /webchat/{bundle}/webchat.js    the Web Chat bundle from ModulesDir (bundle: stable, prerelease)
//	GET  /favicon.ico                    204, no icon
//	POST /api/token                      body {"userId","userName"} (both optional) →
//	                                     200 {"token","conversationId","userId","userName"}
//
// Errors are JSON {"error":{"code","message"}}: 404 NotFound, 405 MethodNotAllowed,
// 400 BadArgument, 502 BadGateway when the token cannot be minted.
package page

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/directline-go/directline/activity/jsonscan"
)

// Options configures the page backend. One of TokenFunc or TokenURL (with Secret) is required.
type Options struct {
	// Secret is the Direct Line secret sent as a Bearer credential to TokenURL. It stays on the
	// server: the page only ever receives tokens.
	Secret string
	// TokenURL is the Direct Line 3.0 tokens/generate endpoint, e.g.
	// http://127.0.0.1:3000/v3/directline/tokens/generate. Used when TokenFunc is nil.
	TokenURL string
	// TokenFunc mints a token for a new conversation bound to userID (userName is the display name
	// the page asked for). It wins over TokenURL.
	TokenFunc func(ctx context.Context, userID, userName string) (token, conversationID string, err error)
	// ModulesDir is webchat-demo/node_modules; the bundles are read from it on each request, so
	// installing the packages while the service runs needs no restart.
	ModulesDir string
	// Logger receives token failures; nil discards.
	Logger *slog.Logger
	// HTTPClient posts to TokenURL; nil means a client with a 15 s timeout.
	HTTPClient *http.Client
}

// Bundle is one Web Chat build the page can load.
type Bundle struct {
	// Name is the page option value: "stable" or "prerelease".
	Name string `json:"name"`
	// Package is the npm package directory under ModulesDir.
	Package string `json:"package"`
	// Profile is the sortcheck profile that models this bundle's ordering.
	Profile string `json:"profile"`
}

// Bundles are the builds webchat-demo/package.json installs: 4.18.1 and, under an alias, the
// prerelease 4.18.1-main.20251101.54e519d.
var Bundles = []Bundle{
	{Name: "stable", Package: "botframework-webchat", Profile: "gen-a"},
	{Name: "prerelease", Package: "botframework-webchat-prerelease", Profile: "gen-b"},
}

// cdnURL is the public CDN copy of the stable bundle, offered (never loaded automatically) when
// the npm package is missing.
const cdnURL = "https://cdn.botframework.com/botframework-webchat/4.18.1/webchat.js"

// maxUserField bounds userId and userName (Direct Line ids are at most 256 characters here).
const maxUserField = 256

//go:embed static/index.html
var static embed.FS

var indexTemplate = template.Must(template.ParseFS(static, "static/index.html"))

type handler struct {
	o    Options
	log  *slog.Logger
	http *http.Client
}

// New returns the page handler. It fails when no way to mint tokens is configured.
func New(o Options) (http.Handler, error) {
	if o.TokenFunc == nil && (o.TokenURL == "" || o.Secret == "") {
		return nil, errors.New("page: Options needs TokenFunc, or TokenURL and Secret")
	}
	h := &handler{o: o, log: o.Logger, http: o.HTTPClient}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.http == nil {
		h.http = &http.Client{Timeout: 15 * time.Second}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", h.index)
	mux.HandleFunc("/index.html", h.index)
	mux.HandleFunc("/webchat/{bundle}/webchat.js", h.bundle)
	mux.HandleFunc("/api/token", h.token)
	// Browsers ask for it on every load; an empty answer keeps their consoles clean.
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFound", "no such page: "+r.URL.Path)
	})
	return mux, nil
}

// bundleInfo is what the page learns about each bundle.
type bundleInfo struct {
	Bundle
	URL       string `json:"url"`
	Installed bool   `json:"installed"`
	Version   string `json:"version,omitempty"`
}

func (h *handler) bundleFile(b Bundle) string {
	return filepath.Join(h.o.ModulesDir, b.Package, "dist", "webchat.js")
}

func (h *handler) bundles() []bundleInfo {
	out := make([]bundleInfo, 0, len(Bundles))
	for _, b := range Bundles {
		info := bundleInfo{Bundle: b, URL: "webchat/" + b.Name + "/webchat.js"}
		if h.o.ModulesDir != "" {
			if st, err := os.Stat(h.bundleFile(b)); err == nil && st.Mode().IsRegular() {
				info.Installed = true
			}
			info.Version = packageVersion(filepath.Join(h.o.ModulesDir, b.Package, "package.json"))
		}
		out = append(out, info)
	}
	return out
}

// packageVersion reads "version" from an npm package.json; "" when unreadable.
func packageVersion(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var p struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(data, &p) != nil {
		return ""
	}
	return p.Version
}

func (h *handler) index(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "the page takes GET")
		return
	}
	cfg, err := json.Marshal(struct {
		Bundles []bundleInfo `json:"bundles"`
		CDN     string       `json:"cdn"`
	}{h.bundles(), cdnURL})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "ServiceError", err.Error())
		return
	}
	var buf bytes.Buffer
	// html/template escapes the JSON for the <script type="application/json"> context.
	if err := indexTemplate.Execute(&buf, template.JS(cfg)); err != nil {
		writeError(w, http.StatusInternalServerError, "ServiceError", err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

func (h *handler) bundle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "bundles take GET")
		return
	}
	name := r.PathValue("bundle")
	for _, b := range Bundles {
		if b.Name != name {
			continue
		}
		if h.o.ModulesDir == "" {
			break
		}
		f, err := os.Open(h.bundleFile(b))
		if err != nil {
			writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("%s is not installed: run `make deps` (npm ci --prefix webchat-demo)", b.Package))
			return
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			writeError(w, http.StatusNotFound, "NotFound", b.Package+" bundle is not a file")
			return
		}
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		http.ServeContent(w, r, "webchat.js", st.ModTime(), f)
		return
	}
	writeError(w, http.StatusNotFound, "NotFound", "unknown bundle "+name)
}

// tokenRequest is the body of POST /api/token.
type tokenRequest struct {
	UserID   string `json:"userId"`
	UserName string `json:"userName"`
}

// tokenResponse answers POST /api/token. userId is the id the token is bound to: Web Chat must be
// started with it so it recognises its own messages.
type tokenResponse struct {
	Token          string `json:"token"`
	ConversationID string `json:"conversationId"`
	UserID         string `json:"userId"`
	UserName       string `json:"userName"`
}

func (h *handler) token(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "tokens are minted with POST")
		return
	}
	var req tokenRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<10))
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadArgument", "body too large")
		return
	}
	if len(jsonscan.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, http.StatusBadRequest, "BadArgument", `body must be {"userId","userName"}`)
			return
		}
	}
	req.UserID, req.UserName = strings.TrimSpace(req.UserID), strings.TrimSpace(req.UserName)
	if len(req.UserID) > maxUserField || len(req.UserName) > maxUserField {
		writeError(w, http.StatusBadRequest, "BadArgument", fmt.Sprintf("userId and userName are at most %d bytes", maxUserField))
		return
	}
	if req.UserID == "" {
		// Direct Line's convention for user ids a client makes up (Web Chat warns about others).
		req.UserID = "dl_" + rand.Text()[:16]
	}
	if req.UserName == "" {
		req.UserName = "You"
	}
	tok, conv, err := h.mint(r.Context(), req.UserID, req.UserName)
	if err != nil {
		h.log.Warn("page: minting a token failed", "err", err)
		writeError(w, http.StatusBadGateway, "BadGateway", "could not get a Direct Line token: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(tokenResponse{Token: tok, ConversationID: conv, UserID: req.UserID, UserName: req.UserName})
}

// mint calls TokenFunc, else POSTs Direct Line 3.0 tokens/generate with the secret.
func (h *handler) mint(ctx context.Context, userID, userName string) (string, string, error) {
	if h.o.TokenFunc != nil {
		return h.o.TokenFunc(ctx, userID, userName)
	}
	body, err := json.Marshal(map[string]any{"user": map[string]string{"id": userID, "name": userName}})
	if err != nil {
		return "", "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.o.TokenURL, bytes.NewReader(body))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Authorization", "Bearer "+h.o.Secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.http.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("tokens/generate answered %d: %s", resp.StatusCode, bytes.TrimSpace(data))
	}
	var c struct {
		Token          string `json:"token"`
		ConversationID string `json:"conversationId"`
	}
	if err := json.Unmarshal(data, &c); err != nil || c.Token == "" {
		return "", "", fmt.Errorf("tokens/generate answered without a token: %.200s", data)
	}
	return c.Token, c.ConversationID, nil
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
