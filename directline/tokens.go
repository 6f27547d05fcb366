package directline

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// Token uses, in the "use" claim. Each verifier accepts only its own use, so a 60-second stream
// credential or a download link can never stand in for a conversation token.
const (
	useConversation = ""
	useStream       = "stream"
	useAttachment   = "file"
)

// streamTokenLifetime is how long a streamUrl's t= credential can be used to connect
// (Direct Line 3.0: "connect within 60 seconds").
const streamTokenLifetime = 60 * time.Second

// maxTokenLength bounds what is handed to the JWT parser.
const maxTokenLength = 4096

// claims are the JWT claims of every credential the service issues. Conversation tokens carry
// conv, user when bound, nbf, exp, iat, iss, aud and jti, like the hosted service's tokens (whose
// user claim Web Chat reads without verifying). Stream credentials add use="stream" and texp, the
// expiry of the conversation token they were issued with, so the stream can end when it does.
// Download links carry use="file" and att.
type claims struct {
	Conv         string `json:"conv"`
	User         string `json:"user,omitempty"`
	Use          string `json:"use,omitempty"`
	Att          string `json:"att,omitempty"`
	TokenExpires int64  `json:"texp,omitempty"`
	jwt.RegisteredClaims
}

// tokens issues and verifies HS256 JWTs with one key. Tokens are self-contained; nothing is
// stored, so they survive a restart as long as the key does.
type tokens struct {
	key      []byte
	issuer   string
	lifetime time.Duration
	now      func() time.Time
	verified verifiedTokens
}

func (t *tokens) sign(c claims, lifetime time.Duration) (string, time.Time, error) {
	now := t.now().Truncate(time.Second)
	exp := now.Add(lifetime)
	c.RegisteredClaims = jwt.RegisteredClaims{
		Issuer:    t.issuer,
		Audience:  jwt.ClaimStrings{t.issuer},
		NotBefore: jwt.NewNumericDate(now),
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(exp),
		// A fresh id makes every token distinct, so a refresh within the same second still
		// returns a new token.
		ID: uuid.NewString(),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.key)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign token: %w", err)
	}
	return s, exp, nil
}

// conversationToken issues a conversation token for conv (bound to user when user != "").
func (t *tokens) conversationToken(conv, user string) (string, time.Time, error) {
	return t.sign(claims{Conv: conv, User: user}, t.lifetime)
}

// streamToken issues the t= credential of a streamUrl: valid for 60 s, carrying the expiry of the
// conversation token it accompanies.
func (t *tokens) streamToken(conv, user string, tokenExpires time.Time) (string, error) {
	s, _, err := t.sign(claims{Conv: conv, User: user, Use: useStream, TokenExpires: tokenExpires.Unix()}, streamTokenLifetime)
	return s, err
}

// attachmentToken issues the t= signature of a download link for one attachment.
func (t *tokens) attachmentToken(conv, attachmentID string, lifetime time.Duration) (string, error) {
	s, _, err := t.sign(claims{Conv: conv, Use: useAttachment, Att: attachmentID}, lifetime)
	return s, err
}

// verify checks signature, algorithm, issuer, audience, nbf and exp (no leeway) and the use claim.
// Any failure is ErrTokenExpired: Direct Line answers 403 TokenExpired for expired and invalid
// tokens alike. A conversation token comes with every request of its client, so one whose
// signature was verified is remembered (verifiedTokens) and only its times are checked again.
func (t *tokens) verify(raw, use string) (*claims, error) {
	if raw == "" || len(raw) > maxTokenLength {
		return nil, ErrTokenExpired
	}
	if use == useConversation {
		if c := t.verified.get(raw); c != nil {
			if err := t.checkTimes(c); err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	var c claims
	_, err := jwt.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return t.key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithTimeFunc(t.now),
		jwt.WithIssuer(t.issuer),
		jwt.WithAudience(t.issuer),
		jwt.WithExpirationRequired(),
		jwt.WithNotBeforeRequired(),
	)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, ErrTokenExpired.Msg("token expired")
	case err != nil:
		return nil, ErrTokenExpired.Msg("invalid token")
	case c.Use != use || c.Conv == "":
		return nil, ErrTokenExpired.Msg("invalid token")
	}
	if use == useConversation {
		t.verified.put(raw, &c)
	}
	return &c, nil
}

// checkTimes applies the parser's time rules to remembered claims: valid from nbf (inclusive)
// until exp (exclusive), no leeway. Both are present, as the parser required them.
func (t *tokens) checkTimes(c *claims) error {
	now := t.now()
	switch {
	case !now.Before(c.ExpiresAt.Time):
		return ErrTokenExpired.Msg("token expired")
	case now.Before(c.NotBefore.Time):
		return ErrTokenExpired.Msg("invalid token")
	}
	return nil
}

// verifiedTokensGeneration bounds each of verifiedTokens' two generations: far more clients than
// a busy service has active at once, and a few megabytes at most.
const verifiedTokensGeneration = 4096

// verifiedTokens remembers the claims of tokens whose signature, issuer, audience and use were
// verified, keyed by the token string (only a token signed with the key gets in, so callers
// cannot fill it with junk). It holds two generations: lookups search both and move a hit into
// the current one; when the current one is full it becomes the previous one and the oldest is
// dropped, so tokens in use stay and the rest age out. The claims are shared and never modified.
type verifiedTokens struct {
	mu        sync.Mutex
	cur, prev map[string]*claims
}

func (v *verifiedTokens) get(raw string) *claims {
	v.mu.Lock()
	defer v.mu.Unlock()
	if c := v.cur[raw]; c != nil {
		return c
	}
	c := v.prev[raw]
	if c != nil {
		delete(v.prev, raw)
		v.putLocked(raw, c)
	}
	return c
}

func (v *verifiedTokens) put(raw string, c *claims) {
	v.mu.Lock()
	// A copy, so the entry does not keep the request's header string alive.
	v.putLocked(strings.Clone(raw), c)
	v.mu.Unlock()
}

func (v *verifiedTokens) putLocked(raw string, c *claims) {
	if len(v.cur) >= verifiedTokensGeneration {
		v.prev, v.cur = v.cur, nil
	}
	if v.cur == nil {
		v.cur = make(map[string]*claims)
	}
	v.cur[raw] = c
}

// keyBytes is the size of a generated signing key (HS256 wants at least 256 bits).
const keyBytes = 32

// LoadOrCreateKey returns the token signing key kept in the file at path, creating the file (mode
// 0600, base64 text) with a random key when it does not exist. Keeping the key next to the data
// file lets tokens issued before a restart stay valid after it, so a browser can reconnect.
//
// Errors: the file cannot be read or created, or holds fewer than 32 key bytes.
func LoadOrCreateKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
		if err != nil || len(key) < keyBytes {
			return nil, fmt.Errorf("signing key file %s: want base64 of at least %d bytes", path, keyBytes)
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	key := make([]byte, keyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create signing key directory: %w", err)
	}
	// O_EXCL: when two processes race, one creates the file and the other reads it.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return LoadOrCreateKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("create signing key: %w", err)
	}
	_, werr := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return nil, fmt.Errorf("write signing key: %w", err)
	}
	return key, nil
}
