package directline

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestVerifiedTokenTimes: a conversation token that was verified and remembered is still refused
// once it expires (at exp exactly, as the JWT parser does) and before its nbf, with 403
// TokenExpired; it never works on another conversation (403 Forbidden) or as a stream credential.
func TestVerifiedTokenTimes(t *testing.T) {
	clock := &fakeClock{t: time.Now().Truncate(time.Second)}
	t0 := clock.Now()
	e := newEnv(t, func(o *Options) { o.Now = clock.Now; o.TokenLifetime = 1800 * time.Second })
	a := e.startConversation("u1")
	b := e.startConversation("u2")
	msg := `{"type":"message","text":"hi"}`
	post := func(conv, auth string) request {
		return request{method: http.MethodPost, path: "/conversations/" + conv + "/activities", auth: auth, body: msg}
	}
	// Remember a.Token: its first use verifies the signature.
	mustStatus(t, e.do(post(a.ConversationID, a.Token)), http.StatusOK)

	tests := []struct {
		name   string
		at     time.Duration
		req    request
		status int
		code   string
	}{
		{"valid, remembered", 10 * time.Second, post(a.ConversationID, a.Token), 200, ""},
		{"other conversation", 10 * time.Second, post(b.ConversationID, a.Token), 403, CodeForbidden},
		{"other conversation, read", 10 * time.Second, request{method: http.MethodGet, path: "/conversations/" + b.ConversationID + "/activities", auth: a.Token}, 403, CodeForbidden},
		{"as a stream credential", 10 * time.Second, request{method: http.MethodGet, path: "/conversations/" + a.ConversationID + "/stream?t=" + a.Token}, 403, CodeTokenExpired},
		{"last second before exp", 1799 * time.Second, post(a.ConversationID, a.Token), 200, ""},
		{"at exp", 1800 * time.Second, post(a.ConversationID, a.Token), 403, CodeTokenExpired},
		{"after exp", 1900 * time.Second, post(a.ConversationID, a.Token), 403, CodeTokenExpired},
		{"refresh after exp", 1900 * time.Second, request{method: http.MethodPost, path: "/tokens/refresh", auth: a.Token}, 403, CodeTokenExpired},
		{"before nbf", -time.Second, post(a.ConversationID, a.Token), 403, CodeTokenExpired},
		{"valid again", 0, post(a.ConversationID, a.Token), 200, ""},
	}
	for _, tt := range tests {
		clock.Set(t0.Add(tt.at))
		r := e.do(tt.req)
		if r.status != tt.status {
			t.Fatalf("%s: status %d, want %d; body %s", tt.name, r.status, tt.status, r.body)
		}
		if tt.code != "" {
			if code := r.errorCode(t); code != tt.code {
				t.Fatalf("%s: code %s, want %s", tt.name, code, tt.code)
			}
		}
	}
}

// TestVerifyRememberedMatchesParser: for tokens of every kind and clock times around their
// validity, verify answers the same whether the token was remembered or is parsed afresh.
func TestVerifyRememberedMatchesParser(t *testing.T) {
	clock := &fakeClock{t: time.Now().Truncate(time.Second)}
	t0 := clock.Now()
	newTokens := func() *tokens {
		return &tokens{key: []byte(strings.Repeat("k", keyBytes)), issuer: "http://dl.test/", lifetime: time.Minute, now: clock.Now}
	}
	issuer := newTokens()
	conv, _, err := issuer.conversationToken("c1", "u1")
	if err != nil {
		t.Fatal(err)
	}
	stream, err := issuer.streamToken("c1", "u1", t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	other := &tokens{key: []byte(strings.Repeat("o", keyBytes)), issuer: "http://dl.test/", lifetime: time.Minute, now: clock.Now}
	forged, _, err := other.conversationToken("c1", "u1")
	if err != nil {
		t.Fatal(err)
	}

	remembering := newTokens()
	clock.Set(t0)
	for _, raw := range []string{conv, stream, forged} {
		_, _ = remembering.verify(raw, useConversation)
	}
	if remembering.verified.get(conv) == nil {
		t.Fatal("a verified conversation token was not remembered")
	}
	if remembering.verified.get(forged) != nil || remembering.verified.get(stream) != nil {
		t.Fatal("a token that failed verification was remembered")
	}
	for _, at := range []time.Duration{-2 * time.Second, -time.Second, 0, 30 * time.Second, 59 * time.Second, time.Minute, time.Minute + time.Second, time.Hour} {
		for name, raw := range map[string]string{"conversation": conv, "stream": stream, "forged": forged} {
			for _, use := range []string{useConversation, useStream, useAttachment} {
				t.Run(fmt.Sprintf("%s/%s/%v", name, use, at), func(t *testing.T) {
					clock.Set(t0.Add(at))
					want, wantErr := newTokens().verify(raw, use)
					got, gotErr := remembering.verify(raw, use)
					if !sameVerifyError(gotErr, wantErr) || (want == nil) != (got == nil) {
						t.Fatalf("remembered: %v %v; parsed: %v %v", got, gotErr, want, wantErr)
					}
					if want != nil && (got.Conv != want.Conv || got.User != want.User) {
						t.Fatalf("remembered claims %+v, parsed %+v", got, want)
					}
				})
			}
		}
	}
}

func sameVerifyError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ea, eb *Error
	return errors.As(a, &ea) && errors.As(b, &eb) && *ea == *eb
}

// TestVerifiedTokensBounded: the memory of verified tokens never holds more than two generations,
// and a token in use survives any number of others passing through.
func TestVerifiedTokensBounded(t *testing.T) {
	var v verifiedTokens
	hot := &claims{Conv: "hot"}
	v.put("hot", hot)
	for i := range 5 * verifiedTokensGeneration {
		v.put(fmt.Sprintf("token-%d", i), &claims{Conv: "c"})
		if i%(verifiedTokensGeneration/2) == 0 && v.get("hot") != hot {
			t.Fatalf("after %d other tokens the token in use was dropped", i)
		}
		if n := len(v.cur) + len(v.prev); n > 2*verifiedTokensGeneration {
			t.Fatalf("%d tokens remembered, bound %d", n, 2*verifiedTokensGeneration)
		}
	}
	if v.get("token-0") != nil {
		t.Fatal("a token unused for several generations is still remembered")
	}
}
