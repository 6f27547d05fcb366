package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"math"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/websocket"

	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/directline/botauth"
	"github.com/directline-go/directline/store/bolt"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestLoadConfig: defaults, environment over defaults, flags over the environment.
func TestLoadConfig(t *testing.T) {
	defaults := Config{
		Addr: "127.0.0.1:3000", Data: "./data/directline.db", BotEndpoint: "demo",
		BotTokenURL: botauth.DefaultTokenURL, BotOpenIDMetadata: botauth.BotFrameworkOpenIDMetadataURL,
		ConnectorAllow: []string{"127.0.0.0/8", "::1"}, BotAckTimeout: 10 * time.Second, BotTimeout: 2 * time.Minute,
		BotUploadAckTimeout: 30 * time.Second,
		TokenLifetime:       30 * time.Minute, MaxActivityBytes: 256 << 10, MaxUploadBytes: 4 << 20,
		AttachmentURLLifetime: 24 * time.Hour, CORSOrigins: []string{"*"}, RequestTimeout: time.Minute,
		ShutdownTimeout: 10 * time.Second, LogLevel: slog.LevelInfo, DemoPage: "webchat-demo/node_modules",
		Metrics: true, GCPercent: 400, GCGrowth: 64 << 20,
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want func(*Config)
	}{
		{"defaults", nil, nil, func(*Config) {}},
		{"environment", nil, map[string]string{
			"DIRECTLINE_ADDR": "0.0.0.0:8080", "DIRECTLINE_PUBLIC_URL": "https://chat.example", "DIRECTLINE_DATA": "/var/dl.db",
			"DIRECTLINE_SECRET": "s1, s2", "DIRECTLINE_TOKEN_LIFETIME": "1h", "DIRECTLINE_MAX_ACTIVITY_BYTES": "1000",
			"DIRECTLINE_MAX_UPLOAD_BYTES": "2000", "DIRECTLINE_CORS_ORIGINS": "https://a.example,https://b.example",
			"DIRECTLINE_LOG_LEVEL": "debug", "DIRECTLINE_SHUTDOWN_TIMEOUT": "3s", "DIRECTLINE_ATTACHMENT_URL_LIFETIME": "1h",
			"DIRECTLINE_REQUEST_TIMEOUT": "5s", "DIRECTLINE_BOT_ENDPOINT": "http://127.0.0.1:3978/api/messages",
			"DIRECTLINE_BOT_ID": "b1", "DIRECTLINE_BOT_NAME": "B One", "DIRECTLINE_BOT_APP_ID": "app", "DIRECTLINE_BOT_APP_PASSWORD": "pw",
			"DIRECTLINE_BOT_TOKEN_URL": "http://127.0.0.1:1/token", "DIRECTLINE_BOT_OPENID_METADATA": "http://127.0.0.1:1/meta",
			"DIRECTLINE_BOT_JWKS_URL": "http://127.0.0.1:1/jwks", "DIRECTLINE_CONNECTOR_ALLOW": "10.0.0.0/8, 127.0.0.1",
			"DIRECTLINE_BOT_ACK_TIMEOUT": "2s", "DIRECTLINE_BOT_TIMEOUT": "30s", "DIRECTLINE_BOT_UPLOAD_ACK_TIMEOUT": "20s",
			"DIRECTLINE_METRICS": "false", "DIRECTLINE_PPROF": "true", "DIRECTLINE_GC_PERCENT": "150", "DIRECTLINE_MEMORY_LIMIT": "1073741824",
			"DIRECTLINE_GC_GROWTH": "0",
		}, func(c *Config) {
			c.Metrics, c.Pprof, c.GCPercent, c.MemoryLimit, c.GCGrowth = false, true, 150, 1<<30, 0
			c.BotEndpoint, c.BotID, c.BotName, c.BotAppID, c.BotAppPassword = "http://127.0.0.1:3978/api/messages", "b1", "B One", "app", "pw"
			c.BotTokenURL, c.BotOpenIDMetadata, c.BotJWKSURL = "http://127.0.0.1:1/token", "http://127.0.0.1:1/meta", "http://127.0.0.1:1/jwks"
			c.ConnectorAllow, c.BotAckTimeout, c.BotTimeout, c.BotUploadAckTimeout = []string{"10.0.0.0/8", "127.0.0.1"}, 2*time.Second, 30*time.Second, 20*time.Second
			c.Addr, c.PublicURL, c.Data = "0.0.0.0:8080", "https://chat.example", "/var/dl.db"
			c.Secrets, c.TokenLifetime, c.MaxActivityBytes, c.MaxUploadBytes = []string{"s1", "s2"}, time.Hour, 1000, 2000
			c.CORSOrigins, c.LogLevel, c.ShutdownTimeout = []string{"https://a.example", "https://b.example"}, slog.LevelDebug, 3*time.Second
			c.AttachmentURLLifetime, c.RequestTimeout = time.Hour, 5*time.Second
		}},
		{"flags win over the environment", []string{"--addr", "127.0.0.1:0", "--secret", "f1", "--secret=f2", "--token-lifetime=90s", "--log-level=warn",
			"--bot-endpoint=none", "--bot-ack-timeout=1s", "--bot-app-password=flagpw", "--metrics=true", "--pprof=false", "--gc-percent=0"},
			map[string]string{"DIRECTLINE_GC_PERCENT": "150", "DIRECTLINE_ADDR": "0.0.0.0:1", "DIRECTLINE_SECRET": "e1,e2", "DIRECTLINE_TOKEN_LIFETIME": "1h",
				"DIRECTLINE_BOT_ENDPOINT": "http://bot.example/api/messages", "DIRECTLINE_BOT_ACK_TIMEOUT": "5s",
				"DIRECTLINE_BOT_APP_ID": "app", "DIRECTLINE_BOT_APP_PASSWORD": "envpw", "DIRECTLINE_METRICS": "false", "DIRECTLINE_PPROF": "true"},
			func(c *Config) {
				c.Addr, c.Secrets, c.TokenLifetime, c.LogLevel = "127.0.0.1:0", []string{"f1", "f2"}, 90*time.Second, slog.LevelWarn
				c.BotEndpoint, c.BotAckTimeout, c.BotAppID, c.BotAppPassword = "none", time.Second, "app", "flagpw"
				c.GCPercent = 0
			}},
		// A single-tenant bot gets its tokens from its tenant, unless the token URL is given.
		{"single-tenant bot", []string{"--bot-endpoint=none", "--bot-app-id=app", "--bot-app-password=pw", "--bot-tenant-id=11111111-2222-3333-4444-555555555555"}, nil,
			func(c *Config) {
				c.BotEndpoint, c.BotAppID, c.BotAppPassword, c.BotTenantID = "none", "app", "pw", "11111111-2222-3333-4444-555555555555"
				c.BotTokenURL = "https://login.microsoftonline.com/11111111-2222-3333-4444-555555555555/oauth2/v2.0/token"
			}},
		{"single-tenant bot with a token URL", []string{"--bot-endpoint=none", "--bot-app-id=app", "--bot-app-password=pw", "--bot-tenant-id=11111111-2222-3333-4444-555555555555",
			"--bot-token-url=http://127.0.0.1:1/token"}, nil,
			func(c *Config) {
				c.BotEndpoint, c.BotAppID, c.BotAppPassword, c.BotTenantID, c.BotTokenURL = "none", "app", "pw", "11111111-2222-3333-4444-555555555555", "http://127.0.0.1:1/token"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := loadConfig(tt.args, envOf(tt.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			want := defaults
			want.CORSOrigins = append([]string(nil), defaults.CORSOrigins...)
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestLoadConfigErrors: bad values are errors that name the flag or variable.
func TestLoadConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		mention string
	}{
		{"bad duration in env", nil, map[string]string{"DIRECTLINE_TOKEN_LIFETIME": "soon"}, "DIRECTLINE_TOKEN_LIFETIME"},
		{"bad size in env", nil, map[string]string{"DIRECTLINE_MAX_UPLOAD_BYTES": "4MB"}, "DIRECTLINE_MAX_UPLOAD_BYTES"},
		{"bad level in env", nil, map[string]string{"DIRECTLINE_LOG_LEVEL": "loud"}, "DIRECTLINE_LOG_LEVEL"},
		{"bad boolean in env", nil, map[string]string{"DIRECTLINE_PPROF": "sometimes"}, "DIRECTLINE_PPROF"},
		{"unknown bot endpoint", []string{"--bot-endpoint", "bot.example"}, nil, "bot-endpoint"},
		{"app id without password", []string{"--bot-endpoint", "http://127.0.0.1:3978/api/messages", "--bot-app-id", "app"}, nil, "bot-app-password"},
		{"app id with the demo bot", []string{"--bot-app-id", "app", "--bot-app-password", "pw"}, nil, "demo"},
		{"tenant without app id", []string{"--bot-tenant-id", "t1"}, nil, "bot-tenant-id"},
		{"tenant that is a domain", []string{"--bot-endpoint", "none", "--bot-app-id", "app", "--bot-app-password", "pw", "--bot-tenant-id", "contoso.onmicrosoft.com"}, nil, "GUID"},
		{"tenant that is a URL", []string{"--bot-endpoint", "none", "--bot-app-id", "app", "--bot-app-password", "pw", "--bot-tenant-id", "https://login.example/t1"}, nil, "bot-tenant-id"},
		{"bad connector allow", []string{"--connector-allow", "localhost"}, nil, "localhost"},
		{"zero ack timeout", []string{"--bot-ack-timeout", "0s"}, nil, "bot-ack-timeout"},
		{"relative public URL", []string{"--public-url", "chat.example"}, nil, "public-url"},
		{"zero lifetime", []string{"--token-lifetime", "0s"}, nil, "token-lifetime"},
		{"negative size", []string{"--max-activity-bytes", "-1"}, nil, "max-activity-bytes"},
		{"bad GC percent in env", nil, map[string]string{"DIRECTLINE_GC_PERCENT": "high"}, "DIRECTLINE_GC_PERCENT"},
		{"collector off without a limit", []string{"--gc-percent", "-1"}, nil, "memory-limit"},
		{"negative memory limit", []string{"--memory-limit", "-5"}, nil, "memory-limit"},
		{"negative GC growth", []string{"--gc-growth", "-1"}, nil, "gc-growth"},
		{"unknown flag", []string{"--nope"}, nil, "nope"},
		{"stray argument", []string{"extra"}, nil, "extra"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadConfig(tt.args, envOf(tt.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("error %v, want one mentioning %s", err, tt.mention)
			}
		})
	}
}

// TestHelpListsEveryOption: --help names every flag with its environment variable.
func TestHelpListsEveryOption(t *testing.T) {
	var out bytes.Buffer
	if _, err := loadConfig([]string{"--help"}, envOf(nil), &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err %v", err)
	}
	for _, name := range []string{"addr", "public-url", "data", "secret", "bot-endpoint", "token-lifetime", "max-activity-bytes",
		"max-upload-bytes", "attachment-url-lifetime", "cors-origins", "request-timeout", "shutdown-timeout", "log-level",
		"bot-id", "bot-name", "bot-app-id", "bot-app-password", "bot-token-url", "bot-openid-metadata", "bot-jwks-url",
		"connector-allow", "bot-ack-timeout", "bot-timeout", "bot-upload-ack-timeout", "demo-page", "metrics", "pprof", "gc-percent", "gc-growth", "memory-limit"} {
		if !strings.Contains(out.String(), "-"+name) || !strings.Contains(out.String(), "$"+envName(name)) {
			t.Fatalf("--help lacks %s / %s:\n%s", name, envName(name), out.String())
		}
	}
}

// TestApplyGC: the configured target and limit reach the runtime; zero values leave the runtime's;
// a percentage above 100 with a growth cap is tuned after every collection, here to 100 as the
// cap is one byte.
func TestApplyGC(t *testing.T) {
	prevPercent, prevLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})
	tests := []struct {
		name        string
		cfg         Config
		wantPercent int
		wantLimit   int64
		tuned       bool
	}{
		{"zero keeps the runtime's", Config{}, 100, math.MaxInt64, false},
		{"target", Config{GCPercent: 400}, 400, math.MaxInt64, false},
		{"target and limit", Config{GCPercent: 250, MemoryLimit: 1 << 30}, 250, 1 << 30, false},
		{"off until the limit", Config{GCPercent: -1, MemoryLimit: 512 << 20}, -1, 512 << 20, false},
		{"below 100 is not tuned", Config{GCPercent: 50, GCGrowth: 1}, 50, math.MaxInt64, false},
		{"tuned to the live heap", Config{GCPercent: 400, GCGrowth: 1}, 100, math.MaxInt64, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			tuner := applyGC(tt.cfg)
			if (tuner != nil) != tt.tuned {
				t.Fatalf("tuner %v, want one: %v", tuner, tt.tuned)
			}
			if tuner != nil {
				defer tuner.stopped.Store(true)
				debug.SetGCPercent(400)
				// The tuner runs from a finalizer after a collection; wait for it (no deadline:
				// the test's own timeout guards against a tuner that never runs).
				for n := tuner.tuned.Load(); tuner.tuned.Load() == n; {
					runtime.GC()
					time.Sleep(time.Millisecond)
				}
			}
			if got := debug.SetGCPercent(100); got != tt.wantPercent {
				t.Errorf("GC percent %d, want %d", got, tt.wantPercent)
			}
			if got := debug.SetMemoryLimit(-1); got != tt.wantLimit {
				t.Errorf("memory limit %d, want %d", got, tt.wantLimit)
			}
		})
	}
}

// TestGCPercentFor: the full percentage while its growth is within the cap, less beyond, never
// below 100.
func TestGCPercentFor(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		live, growth uint64
		max, want    int
	}{
		{0, 64 * mb, 400, 400},
		{99, 64 * mb, 400, 400},
		{10 * mb, 64 * mb, 400, 400},
		{16 * mb, 64 * mb, 400, 400},
		{32 * mb, 64 * mb, 400, 200},
		{64 * mb, 64 * mb, 400, 100},
		{500 * mb, 64 * mb, 400, 100},
		{20 * mb, 64 * mb, 250, 250},
	}
	for _, tt := range tests {
		if got := gcPercentFor(tt.live, tt.growth, tt.max); got != tt.want {
			t.Errorf("gcPercentFor(%d, %d, %d) = %d, want %d", tt.live, tt.growth, tt.max, got, tt.want)
		}
	}
}

// TestRunPortInUse: a run that cannot listen returns the listener's error and prints nothing, not
// even a secret for a service that never started.
func TestRunPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg, err := loadConfig([]string{"--addr", ln.Addr().String(), "--data", filepath.Join(t.TempDir(), "directline.db"),
		"--bot-endpoint", "none", "--demo-page", "none"}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(context.Background(), cfg, &out, io.Discard); err == nil || !strings.Contains(err.Error(), "address already in use") || out.Len() != 0 {
		t.Fatalf("run on a port in use: %v, printed %q", err, out.String())
	}
	if _, err := os.Stat(cfg.Data + ".key"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a start that failed left a key file: %v", err)
	}
}

// TestRunWarnsOfMissingKeyFile: a data file whose key file is gone gets a new key, which voids
// every token and download link issued before, and an emptied data file beside its key has lost
// its conversations; the operator is told so.
func TestRunWarnsOfMissingKeyFile(t *testing.T) {
	data := filepath.Join(t.TempDir(), "directline.db")
	start := func() string { return startAndStop(t, "--data", data) }
	const warning = "the data file has no key file beside it"
	if got := start(); strings.Contains(got, warning) {
		t.Fatalf("a new data file got the warning:\n%s", got)
	}
	if got := start(); strings.Contains(got, warning) {
		t.Fatalf("a data file with its key got the warning:\n%s", got)
	}
	if err := os.Remove(data + ".key"); err != nil {
		t.Fatal(err)
	}
	if got := start(); !strings.Contains(got, warning) {
		t.Fatalf("no warning for the missing key file:\n%s", got)
	}
	// The data file emptied beside its key: the conversations it held are gone.
	if err := os.Truncate(data, 0); err != nil {
		t.Fatal(err)
	}
	if got := start(); !strings.Contains(got, "the data file is empty although its key file is there") {
		t.Fatalf("no warning for the emptied data file:\n%s", got)
	}
}

// startAndStop runs the service without a bot or demo page, with args added, until it listens,
// then stops it and returns what it logged.
func startAndStop(t *testing.T, args ...string) string {
	t.Helper()
	cfg, err := loadConfig(append([]string{"--addr", "127.0.0.1:0", "--bot-endpoint", "none", "--demo-page", "none", "--secret", "s"}, args...), envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var logs bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, pw, &logs)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "listening on ") {
	}
	go io.Copy(io.Discard, pr)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return logs.String()
}

// TestRunWarnsOfShortTokenLifetime: tokens that expire before Web Chat's 15-minute refresh end
// its sessions, which the operator learns at start.
func TestRunWarnsOfShortTokenLifetime(t *testing.T) {
	for _, tc := range []struct {
		lifetime string
		warn     bool
	}{{"10m", true}, {"15m", false}, {"30m", false}} {
		t.Run(tc.lifetime, func(t *testing.T) {
			logs := startAndStop(t, "--data", filepath.Join(t.TempDir(), "directline.db"), "--token-lifetime", tc.lifetime)
			if got := strings.Contains(logs, "before Web Chat refreshes them"); got != tc.warn {
				t.Fatalf("warning logged: %v, want %v\n%s", got, tc.warn, logs)
			}
		})
	}
}

// TestRun starts the binary's run on a free port with no secret: it prints the generated secret
// and the address, serves the API and a stream, and on cancel closes the stream with the
// "reconnect" code, returns, and leaves the data file closed.
func TestRun(t *testing.T) {
	data := filepath.Join(t.TempDir(), "nested", "directline.db")
	cfg, err := loadConfig([]string{"--addr", "127.0.0.1:0", "--data", data}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var secret, addr string
	for addr == "" && lines.Scan() {
		line := lines.Text()
		if s, ok := strings.CutPrefix(line, "no secret configured; generated secret for this run: "); ok {
			secret = s
		}
		if rest, ok := strings.CutPrefix(line, "listening on "); ok {
			addr, _, _ = strings.Cut(rest, " ")
		}
	}
	go io.Copy(io.Discard, pr)
	if secret == "" || addr == "" {
		t.Fatalf("secret %q, address %q", secret, addr)
	}
	if st, err := os.Stat(data + ".key"); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v", err)
	}

	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v3/directline/conversations", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var conv struct {
		ConversationID string `json:"conversationId"`
		StreamURL      string `json:"streamUrl"`
	}
	err = json.NewDecoder(resp.Body).Decode(&conv)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated || !strings.HasPrefix(conv.StreamURL, "ws://"+addr+"/") {
		t.Fatalf("start: %d %+v %v", resp.StatusCode, conv, err)
	}
	ws, _, err := websocket.DefaultDialer.Dial(conv.StreamURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	cancel()
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err = ws.ReadMessage(); err != nil {
			break
		}
	}
	if !websocket.IsCloseError(err, websocket.CloseServiceRestart) {
		t.Fatalf("stream ended with %v, want close 1012 (reconnect)", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	st, err := bolt.Open(data, bolt.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("data file still locked after shutdown: %v", err)
	}
	if _, err := st.Conversation(context.Background(), conv.ConversationID); err != nil {
		t.Fatalf("conversation lost: %v", err)
	}
	st.Close()
}

// TestHelpHidesSecrets: secrets from the environment never appear in --help.
func TestHelpHidesSecrets(t *testing.T) {
	var out bytes.Buffer
	if _, err := loadConfig([]string{"--help"}, envOf(map[string]string{"DIRECTLINE_SECRET": "topsecret"}), &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(out.String(), "topsecret") {
		t.Fatalf("--help shows the secret:\n%s", out.String())
	}
}

// runService runs the service with args on a free port until the test ends and returns its
// address.
func runService(t *testing.T, args ...string) string {
	t.Helper()
	addr, stop := startService(t, args...)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	})
	return addr
}

// startService is runService that leaves stopping to the caller: stop cancels run and returns
// its error; a test must call it once.
func startService(t *testing.T, args ...string) (addr string, stop func() error) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "directline.db")
	cfg, err := loadConfig(append([]string{"--addr", "127.0.0.1:0", "--data", data, "--secret", "s3cret"}, args...), envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, pw, io.Discard)
		pw.Close()
	}()
	stop = func() error {
		cancel()
		return <-done
	}
	lines := bufio.NewScanner(pr)
	for addr == "" && lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "listening on "); ok {
			addr, _, _ = strings.Cut(rest, " ")
		}
	}
	go io.Copy(io.Discard, pr)
	if addr == "" {
		stop()
		t.Fatal("the service did not print its address")
	}
	return addr, stop
}

// apiCall makes one client API call on the service at addr and returns the body of its 2xx answer.
func apiCall(t *testing.T, addr, method, path, auth, body string) []byte {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+addr+"/v3/directline"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+auth)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	return out
}

type startedConversation struct {
	ConversationID string `json:"conversationId"`
	Token          string `json:"token"`
	StreamURL      string `json:"streamUrl"`
}

func startWithUser(t *testing.T, addr string) startedConversation {
	t.Helper()
	var conv startedConversation
	if err := json.Unmarshal(apiCall(t, addr, http.MethodPost, "/conversations", "s3cret", `{"user":{"id":"u1"}}`), &conv); err != nil {
		t.Fatal(err)
	}
	return conv
}

// TestShutdownLetsBotTurnsEnd: a shutdown that starts while the bot is in a turn lets the turn
// end: the bot's reply through the Bot Connector API is still accepted and stored, the client's
// POST gets the bot's answer, and a delivery asked for meanwhile is refused with 503.
func TestShutdownLetsBotTurnsEnd(t *testing.T) {
	inTurn := make(chan struct{})
	replied := make(chan int, 1)
	botSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a struct {
			Type, ID, ServiceURL, Text string
			Conversation               struct{ ID string }
		}
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil || a.Text != "hi" {
			return
		}
		close(inTurn)
		time.Sleep(300 * time.Millisecond) // the shutdown starts meanwhile
		resp, err := http.Post(strings.TrimRight(a.ServiceURL, "/")+"/v3/conversations/"+a.Conversation.ID+"/activities/"+url.PathEscape(a.ID),
			"application/json", strings.NewReader(`{"type":"message","text":"still here","from":{"id":"bot","role":"bot"}}`))
		if err != nil {
			replied <- 0
			return
		}
		resp.Body.Close()
		replied <- resp.StatusCode
	}))
	t.Cleanup(botSrv.Close)
	addr, stop := startService(t, "--bot-endpoint", botSrv.URL+"/api/messages", "--demo-page", "none")
	conv := startWithUser(t, addr)
	post := func(text string) (int, error) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v3/directline/conversations/"+conv.ConversationID+"/activities",
			strings.NewReader(`{"type":"message","text":"`+text+`"}`))
		req.Header.Set("Authorization", "Bearer "+conv.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	posted := make(chan int, 1)
	go func() {
		code, _ := post("hi")
		posted <- code
	}()
	<-inTurn
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// The shutdown has begun once a new delivery is refused; the listener still answers.
	for deadline := time.Now().Add(10 * time.Second); ; {
		code, err := post("too late")
		if err != nil {
			t.Fatalf("a request during the bot's turn: %v", err)
		}
		if code == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("posts during the shutdown still answered %d", code)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code := <-replied; code != http.StatusOK {
		t.Fatalf("the bot's reply during the shutdown: status %d, want 200", code)
	}
	if code := <-posted; code != http.StatusOK {
		t.Fatalf("the client's post: status %d, want 200", code)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// TestRunWithDemoBot: the plain binary (default --bot-endpoint demo) gives a working chat: the
// built-in demo bot welcomes the user and answers a message through the Bot Connector API.
func TestRunWithDemoBot(t *testing.T) {
	addr := runService(t)
	conv := startWithUser(t, addr)
	ws, _, err := websocket.DefaultDialer.Dial(conv.StreamURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	apiCall(t, addr, http.MethodPost, "/conversations/"+conv.ConversationID+"/activities", conv.Token, `{"type":"message","text":"hi"}`)
	var texts []string
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for !slices.Contains(texts, "You said: hi") {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("stream after %q: %v", texts, err)
		}
		var set struct {
			Activities []struct {
				Text string `json:"text"`
			} `json:"activities"`
		}
		if len(msg) > 0 && json.Unmarshal(msg, &set) == nil {
			for _, a := range set.Activities {
				texts = append(texts, a.Text)
			}
		}
	}
	if !strings.HasPrefix(texts[0], "Welcome") {
		t.Fatalf("stream %q, want the welcome first", texts)
	}
}

// TestDemoBotBehindPublicURL: with a public URL the process cannot reach (a reverse proxy's, with
// TLS and a path prefix), the demo bot still answers: its calls to serviceUrl go to the listener.
// The welcome is sent during the start, so history has it once the start has answered.
func TestDemoBotBehindPublicURL(t *testing.T) {
	addr := runService(t, "--public-url", "https://chat.invalid/chat")
	conv := startWithUser(t, addr)
	var set struct {
		Activities []struct {
			Text string `json:"text"`
		} `json:"activities"`
	}
	body := apiCall(t, addr, http.MethodGet, "/conversations/"+conv.ConversationID+"/activities", conv.Token, "")
	if err := json.Unmarshal(body, &set); err != nil || len(set.Activities) != 1 || !strings.HasPrefix(set.Activities[0].Text, "Welcome") {
		t.Fatalf("history %s, want the demo bot's welcome", body)
	}
}

// TestRunWithBotAppID: with --bot-app-id and local --bot-token-url and --bot-jwks-url, nothing
// needs the internet: deliveries carry the token minted by the token endpoint, and connector
// calls need a JWT signed with a key of the JWKS (401 without).
func TestRunWithBotAppID(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "minted", "expires_in": 3600})
		case "/jwks":
			_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]string{"kty": "RSA", "kid": "k1", "use": "sig",
				"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
				"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(auth.Close)
	got := make(chan string, 16)
	bot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
	}))
	t.Cleanup(bot.Close)

	addr := runService(t, "--bot-endpoint", bot.URL+"/api/messages", "--bot-app-id", "app1", "--bot-app-password", "pw",
		"--bot-token-url", auth.URL+"/token", "--bot-jwks-url", auth.URL+"/jwks", "--bot-tenant-id", "11111111-2222-3333-4444-555555555555")
	conv := startWithUser(t, addr)
	if h := <-got; h != "Bearer minted" {
		t.Fatalf("delivery Authorization %q, want the minted token", h)
	}
	sign := func(iss string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": iss, "aud": botauth.BotTokenAudience,
			"appid": "app1", "exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = "k1"
		signed, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + signed
	}
	for _, tc := range []struct {
		auth   string
		status int
	}{
		{"", http.StatusUnauthorized},
		{sign(botauth.BotFrameworkIssuers[0]), http.StatusOK},
		// A single-tenant bot's tokens come from its own tenant (--bot-tenant-id), in either format.
		{sign("https://sts.windows.net/11111111-2222-3333-4444-555555555555/"), http.StatusOK},
		{sign("https://login.microsoftonline.com/11111111-2222-3333-4444-555555555555/v2.0"), http.StatusOK},
		{sign("https://sts.windows.net/99999999-2222-3333-4444-555555555555/"), http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v3/conversations/"+conv.ConversationID+"/activities",
			strings.NewReader(`{"type":"message","text":"from the bot"}`))
		req.Header.Set("Content-Type", "application/json")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("connector call with %q: %d, want %d", tc.auth, resp.StatusCode, tc.status)
		}
	}
}

// TestBotCredentialsCheckedAtStart: with a bot app id, the service asks for a token and loads the
// keys of the bot's tokens as it starts, so that a refused password or an unreachable key set is
// logged then, with the reason.
func TestBotCredentialsCheckedAtStart(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, password, jwks     string
		wantError, wantKeysError bool
	}{{"accepted", "pw", "/jwks", false, false}, {"refused", "wrong", "/jwks", true, false}, {"keys unreachable", "pw", "/nokeys", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			asked := make(chan struct{}, 4)
			keysAsked := make(chan struct{}, 4)
			auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/jwks":
					defer func() { keysAsked <- struct{}{} }()
					_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]string{"kty": "RSA", "kid": "k1", "use": "sig",
						"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
						"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})
					return
				case "/nokeys":
					defer func() { keysAsked <- struct{}{} }()
					w.WriteHeader(http.StatusInternalServerError)
					return
				}
				defer func() { asked <- struct{}{} }()
				if r.FormValue("client_secret") != "pw" {
					w.WriteHeader(http.StatusUnauthorized)
					_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "bad secret"})
					return
				}
				_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "minted", "expires_in": 3600})
			}))
			t.Cleanup(auth.Close)
			// A file takes the log: its writes are safe from the token check's goroutine.
			logs, err := os.Create(filepath.Join(t.TempDir(), "log"))
			if err != nil {
				t.Fatal(err)
			}
			defer logs.Close()
			logged := func() string {
				data, _ := os.ReadFile(logs.Name())
				return string(data)
			}
			logger := slog.New(slog.NewTextHandler(logs, nil))
			cfg := Config{BotEndpoint: "http://127.0.0.1:1/api/messages", BotAppID: "app1", BotAppPassword: tc.password, BotTokenURL: auth.URL,
				BotJWKSURL: auth.URL + tc.jwks}
			_, _, stop, err := startBot(cfg, bot.Options{}, "http://127.0.0.1:2", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2}, logger)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { stop(context.Background()) })
			select {
			case <-asked:
			case <-time.After(10 * time.Second):
				t.Fatal("no token request at start")
			}
			const line = "cannot get a token to call the bot with"
			for deadline := time.Now().Add(2 * time.Second); tc.wantError && !strings.Contains(logged(), line) && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if got := logged(); strings.Contains(got, line) != tc.wantError || (tc.wantError && !strings.Contains(got, "invalid_client")) {
				t.Fatalf("log after the token request:\n%s", got)
			}
			select {
			case <-keysAsked:
			case <-time.After(10 * time.Second):
				t.Fatal("no key set request at start")
			}
			const keysLine = "cannot load the keys of the bot's tokens"
			for deadline := time.Now().Add(2 * time.Second); tc.wantKeysError && !strings.Contains(logged(), keysLine) && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if got := logged(); strings.Contains(got, keysLine) != tc.wantKeysError {
				t.Fatalf("log after the key set request:\n%s", got)
			}
		})
	}
}

// TestDemoPageRouting: every path outside /v3/ goes to the demo page, /v3/ to the API, and
// --demo-page none leaves the API alone; --pprof adds /debug/pprof/ in front of either.
func TestDemoPageRouting(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Api", "1") })
	for _, tc := range []struct {
		demoPage, path string
		api            bool
	}{
		{"webchat-demo/node_modules", "/", false},
		{"webchat-demo/node_modules", "/v3/directline/conversations", true},
		{"webchat-demo/node_modules", "/v3/conversations/x/activities", true},
		{"webchat-demo/node_modules", "/metrics", true},
		// A Web Chat domain written with a trailing slash; the API joins the slashes.
		{"webchat-demo/node_modules", "/v3/directline//conversations", true},
		{"none", "/", true},
	} {
		h, err := withDemoPage(api, Config{DemoPage: tc.demoPage}, "s", "http://127.0.0.1:1", slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		for _, pprof := range []bool{false, true} {
			rec := httptest.NewRecorder()
			withPprof(h, pprof).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if got := rec.Header().Get("X-Api") == "1"; got != tc.api {
				t.Errorf("--demo-page %s, --pprof %v, GET %s: served by the API = %v (status %d), want %v", tc.demoPage, pprof, tc.path, got, rec.Code, tc.api)
			}
			if !tc.api && rec.Code != http.StatusOK {
				t.Errorf("GET %s: status %d, want the page", tc.path, rec.Code)
			}
		}
	}
	rec := httptest.NewRecorder()
	withPprof(api, true).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("X-Api") != "" {
		t.Errorf("--pprof: GET /debug/pprof/ status %d, not the profiles' index", rec.Code)
	}
}
