package botauth

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

// BotFrameworkOpenIDMetadataURL is the OpenID configuration of the Bot Framework Azure AD tenant;
// its jwks_uri lists the keys that sign the tokens bots present on their Bot Connector calls (the
// metadata the Bot Framework Emulator validates bot tokens with).
const BotFrameworkOpenIDMetadataURL = "https://login.microsoftonline.com/botframework.com/v2.0/.well-known/openid-configuration"

// Key lookup errors. ErrUnknownKey means the token names a key the set does not have (the token
// is invalid); ErrKeysUnavailable means the set could not be loaded at all (a service problem,
// not the caller's).
var (
	ErrUnknownKey      = errors.New("botauth: unknown signing key")
	ErrKeysUnavailable = errors.New("botauth: signing keys unavailable")
)

// KeySet resolves the kid of a token header to an RSA public key. Implementations must be safe
// for concurrent use.
type KeySet interface {
	Key(ctx context.Context, kid string) (*rsa.PublicKey, error)
}

// StaticKeys is a fixed KeySet: kid → key.
type StaticKeys map[string]*rsa.PublicKey

// Key implements KeySet; ErrUnknownKey when kid is not in the map.
func (s StaticKeys) Key(_ context.Context, kid string) (*rsa.PublicKey, error) {
	if k, ok := s[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("%w: kid %q", ErrUnknownKey, kid)
}

// JWKS is a KeySet loaded over HTTP from a JSON Web Key Set (RFC 7517: {"keys":[{"kty":"RSA",
// "kid","n","e",...}]}), either directly from URL or through an OpenID configuration document's
// jwks_uri (MetadataURL). Keys are cached for TTL; a token with an unknown kid triggers a reload
// at most once per MinRefresh, so that a key rotation is picked up without letting forged kids
// hammer the key endpoint. When a reload fails the previous keys stay in use. Use it by pointer.
type JWKS struct {
	// URL is the JWKS document. If empty, MetadataURL is read and its jwks_uri is used.
	URL string
	// MetadataURL is an OpenID configuration document ({"jwks_uri": ...}).
	MetadataURL string
	// HTTPClient fetches the documents; nil means a client with a 10 s timeout.
	HTTPClient *http.Client
	// TTL is how long loaded keys are used before a reload; 0 means 24 h.
	TTL time.Duration
	// MinRefresh is the minimum time between reloads caused by unknown kids; 0 means 5 min.
	MinRefresh time.Duration

	mu     sync.Mutex
	keys   map[string]*rsa.PublicKey
	loaded time.Time
	now    func() time.Time // tests move the clock
}

// Key implements KeySet. Errors: ErrUnknownKey, ErrKeysUnavailable (wrapping the load error).
func (j *JWKS) Key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	// One lock across the load keeps concurrent validations from loading the set in parallel.
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.clock()
	ttl := j.TTL
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	minRefresh := j.MinRefresh
	if minRefresh <= 0 {
		minRefresh = 5 * time.Minute
	}
	var loadErr error
	if j.keys == nil || now.Sub(j.loaded) >= ttl {
		loadErr = j.load(ctx, now)
		if j.keys == nil {
			return nil, fmt.Errorf("%w: %w", ErrKeysUnavailable, loadErr)
		}
	}
	if k, ok := j.keys[kid]; ok {
		return k, nil
	}
	if loadErr == nil && now.Sub(j.loaded) >= minRefresh {
		if err := j.load(ctx, now); err == nil {
			if k, ok := j.keys[kid]; ok {
				return k, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: kid %q", ErrUnknownKey, kid)
}

func (j *JWKS) clock() time.Time {
	if j.now != nil {
		return j.now()
	}
	return time.Now()
}

// load replaces the keys on success; a failed load leaves the previous keys (if any) in place but
// still counts as an attempt, so a broken endpoint is not asked again on every token.
func (j *JWKS) load(ctx context.Context, now time.Time) error {
	j.loaded = now
	jwksURL := j.URL
	if jwksURL == "" {
		var meta struct {
			JWKSURI string `json:"jwks_uri"`
		}
		if err := j.getJSON(ctx, j.MetadataURL, &meta); err != nil {
			return err
		}
		if meta.JWKSURI == "" {
			return errors.New("OpenID configuration has no jwks_uri")
		}
		jwksURL = meta.JWKSURI
	}
	var doc struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			N   string `json:"n"`
			E   string `json:"e"`
		} `json:"keys"`
	}
	if err := j.getJSON(ctx, jwksURL, &doc); err != nil {
		return err
	}
	keys := make(map[string]*rsa.PublicKey, len(doc.Keys))
	for _, k := range doc.Keys {
		if k.Kty != "RSA" || (k.Use != "" && k.Use != "sig") {
			continue
		}
		pub, err := rsaKey(k.N, k.E)
		if err != nil {
			continue
		}
		keys[k.Kid] = pub
	}
	if len(keys) == 0 {
		return errors.New("JWKS has no RSA signing keys")
	}
	j.keys = keys
	return nil
}

func (j *JWKS) getJSON(ctx context.Context, u string, dst any) error {
	if u == "" {
		return errors.New("no JWKS URL or OpenID metadata URL configured")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	client := j.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// rsaKey builds a public key from the base64url modulus and exponent of a JWK (RFC 7518 §6.3.1).
func rsaKey(n, e string) (*rsa.PublicKey, error) {
	nb, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(n, "="))
	if err != nil || len(nb) == 0 {
		return nil, errors.New("bad modulus")
	}
	eb, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(e, "="))
	if err != nil || len(eb) == 0 || len(eb) > 4 {
		return nil, errors.New("bad exponent")
	}
	exp := 0
	for _, b := range eb {
		exp = exp<<8 | int(b)
	}
	if exp < 3 {
		return nil, errors.New("bad exponent")
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(nb), E: exp}, nil
}
