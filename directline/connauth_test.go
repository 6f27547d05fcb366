package directline

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/directline/botauth"
)

const testAppID = "11111111-2222-3333-4444-555555555555"

var (
	rsaOnce               sync.Once
	trustedKey, forgedKey *rsa.PrivateKey
)

// testRSAKeys returns the key the validator trusts and another one, generated once.
func testRSAKeys(t *testing.T) (*rsa.PrivateKey, *rsa.PrivateKey) {
	t.Helper()
	rsaOnce.Do(func() {
		var err error
		if trustedKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if forgedKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return trustedKey, forgedKey
}

// botToken signs the token a bot with testAppID presents on its connector calls (Azure AD v1.0
// shape), expiring at exp.
func botToken(t *testing.T, key *rsa.PrivateKey, exp time.Time) string {
	t.Helper()
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": botauth.BotFrameworkIssuers[0], "aud": botauth.BotTokenAudience, "appid": testAppID,
		"nbf": now.Add(-2 * time.Hour).Unix(), "iat": now.Add(-2 * time.Hour).Unix(), "exp": exp.Unix(),
	})
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConnectorAuthWithAppID (acceptance 5): with an app id, connector calls need a valid bearer
// JWT (401 when missing, forged or expired, even from loopback), and deliveries to the bot carry
// a client-credentials token from the token endpoint, fetched once and cached.
func TestConnectorAuthWithAppID(t *testing.T) {
	trusted, forged := testRSAKeys(t)
	var tokenCalls atomic.Int64
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenCalls.Add(1)
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" ||
			r.PostForm.Get("client_id") != testAppID || r.PostForm.Get("client_secret") != "pw" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "minted-token", "expires_in": 3600, "token_type": "Bearer"})
	}))
	t.Cleanup(tokenSrv.Close)

	b := newTestBot(t)
	validator := &botauth.Validator{Audience: botauth.BotTokenAudience, AppID: testAppID, Issuers: botauth.BotFrameworkIssuers,
		Keys: botauth.StaticKeys{"k1": &trusted.PublicKey}}
	creds := &botauth.ClientCredentials{TokenURL: tokenSrv.URL, ClientID: testAppID, ClientSecret: "pw"}
	e := newBotEnv(t, b.endpoint(), bot.Options{Credentials: creds}, func(o *Options) { o.ConnectorValidator = validator })
	conv := e.startConversation("u1")
	e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "hi"})
	b.next()
	b.next()
	for i, h := range b.authHeaders() {
		if h != "Bearer minted-token" {
			t.Fatalf("delivery %d carried Authorization %q, want the minted token", i, h)
		}
	}
	if n := tokenCalls.Load(); n != 1 {
		t.Fatalf("token endpoint called %d times, want 1 (cached)", n)
	}

	send := func(auth string) response {
		return e.do(request{method: http.MethodPost, path: e.connectorURL("conversations", conv.ConversationID, "activities"),
			auth: auth, body: map[string]any{"type": "message", "text": "from the bot"}})
	}
	mustStatus(t, send(botToken(t, trusted, time.Now().Add(time.Hour))), http.StatusOK)
	for name, auth := range map[string]string{
		"missing": "",
		"forged":  botToken(t, forged, time.Now().Add(time.Hour)),
		"expired": botToken(t, trusted, time.Now().Add(-time.Hour)),
		"garbage": "not-a-jwt",
	} {
		r := send(auth)
		mustStatus(t, r, http.StatusUnauthorized)
		if code := r.errorCode(t); code != CodeUnauthorized || r.header.Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("%s token: code %s, WWW-Authenticate %q", name, code, r.header.Get("WWW-Authenticate"))
		}
	}
	if acts, _ := e.history(conv.Token, conv.ConversationID, ""); len(acts) != 2 {
		t.Fatalf("history has %d activities, want 2 (rejected calls store nothing)", len(acts))
	}
}

// TestConnectorAuthWithoutAppID (acceptance 5): without an app id no token is sent to the bot,
// and unauthenticated connector calls are accepted from the allowed networks only (403 from
// others).
func TestConnectorAuthWithoutAppID(t *testing.T) {
	b := newTestBot(t)
	e := newBotEnv(t, b.endpoint(), bot.Options{})
	conv := e.startConversation("u1")
	if got := b.next(); b.authHeaders()[0] != "" {
		t.Fatalf("%s delivered with Authorization %q, want none", got.Type, b.authHeaders()[0])
	}
	mustStatus(t, e.connector(http.MethodGet, nil, "conversations", conv.ConversationID, "members"), http.StatusOK)

	others, err := botauth.ParseAllowList("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	strict := newEnv(t, func(o *Options) { o.ConnectorAllow = others })
	c2 := strict.startConversation("u1")
	for _, path := range [][]string{{"conversations", c2.ConversationID, "members"}, {"conversations"}, {"attachments", "x"}} {
		r := strict.connector(http.MethodGet, nil, path...)
		mustStatus(t, r, http.StatusForbidden)
		if code := r.errorCode(t); code != CodeForbidden {
			t.Fatalf("code %s", code)
		}
	}
	r := strict.do(request{method: http.MethodPost, path: strict.connectorURL("conversations", c2.ConversationID, "activities"), body: `{"type":"message"}`})
	mustStatus(t, r, http.StatusForbidden)
	// The client API is not affected by the connector's allow list.
	strict.post(c2.Token, c2.ConversationID, map[string]any{"type": "message", "text": "still fine"})
}

// TestConnectorAllowBehindAProxy: a call from an allowed network that a proxy forwarded for
// another client (X-Forwarded-For, X-Real-IP, Forwarded) is admitted only when every client it
// names is allowed too: behind a reverse proxy on the same host every call comes from loopback.
func TestConnectorAllowBehindAProxy(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	for _, tc := range []struct {
		header map[string]string
		status int
	}{
		{nil, http.StatusOK},
		{map[string]string{"X-Forwarded-For": "127.0.0.1"}, http.StatusOK},
		{map[string]string{"X-Forwarded-For": "203.0.113.5"}, http.StatusForbidden},
		{map[string]string{"X-Forwarded-For": "127.0.0.1, 203.0.113.5"}, http.StatusForbidden},
		{map[string]string{"X-Real-IP": "203.0.113.5"}, http.StatusForbidden},
		{map[string]string{"Forwarded": `for="[::1]:4711";proto=http`}, http.StatusOK},
		{map[string]string{"Forwarded": "for=127.0.0.1, for=203.0.113.5"}, http.StatusForbidden},
		{map[string]string{"Forwarded": "for=unknown"}, http.StatusForbidden},
	} {
		r := e.do(request{method: http.MethodGet, path: e.connectorURL("conversations", conv.ConversationID, "members"), header: tc.header})
		if r.status != tc.status {
			t.Errorf("%v: status %d, want %d", tc.header, r.status, tc.status)
		}
	}
}
