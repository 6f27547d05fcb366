package botauth

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// keyServer serves an OpenID configuration at /metadata pointing at a JWKS at /keys whose content
// the test can swap.
type keyServer struct {
	srv       *httptest.Server
	mu        sync.Mutex
	keys      map[string]*rsa.PublicKey
	status    int
	keyLoads  atomic.Int32
	metaLoads atomic.Int32
}

func newKeyServer(t *testing.T, keys map[string]*rsa.PublicKey) *keyServer {
	ks := &keyServer{keys: keys, status: http.StatusOK}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metadata", func(w http.ResponseWriter, r *http.Request) {
		ks.metaLoads.Add(1)
		json.NewEncoder(w).Encode(map[string]string{"issuer": testIssuer, "jwks_uri": ks.srv.URL + "/keys"})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		ks.keyLoads.Add(1)
		ks.mu.Lock()
		defer ks.mu.Unlock()
		if ks.status != http.StatusOK {
			w.WriteHeader(ks.status)
			return
		}
		// An EC key and an encryption key are listed too; both must be skipped.
		doc := []map[string]any{
			{"kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"},
			{"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
		}
		for kid, k := range ks.keys {
			doc = append(doc, map[string]any{
				"kty": "RSA", "use": "sig", "kid": kid,
				"n":            base64.RawURLEncoding.EncodeToString(k.N.Bytes()),
				"e":            base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes()),
				"endorsements": []string{"directline"},
			})
		}
		json.NewEncoder(w).Encode(map[string]any{"keys": doc})
	})
	ks.srv = httptest.NewServer(mux)
	t.Cleanup(ks.srv.Close)
	return ks
}

func (ks *keyServer) set(status int, keys map[string]*rsa.PublicKey) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.status, ks.keys = status, keys
}

func TestValidateWithKeysFromOpenIDMetadata(t *testing.T) {
	good, _ := testKeys(t)
	ks := newKeyServer(t, map[string]*rsa.PublicKey{"k1": &good.PublicKey})
	v := testValidator(t)
	v.Keys = &JWKS{MetadataURL: ks.srv.URL + "/metadata", HTTPClient: ks.srv.Client()}
	for range 3 {
		if _, err := v.Validate(context.Background(), "Bearer "+sign(t, good, "k1", validClaims())); err != nil {
			t.Fatal(err)
		}
	}
	if m, k := ks.metaLoads.Load(), ks.keyLoads.Load(); m != 1 || k != 1 {
		t.Fatalf("metadata loaded %d times, keys %d times; want 1 and 1", m, k)
	}
}

func TestJWKSReloads(t *testing.T) {
	good, other := testKeys(t)
	ks := newKeyServer(t, map[string]*rsa.PublicKey{"k1": &good.PublicKey})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	j := &JWKS{URL: ks.srv.URL + "/keys", HTTPClient: ks.srv.Client(), TTL: time.Hour, MinRefresh: time.Minute}
	j.now = func() time.Time { return now }
	ctx := context.Background()

	key := func(kid string) (*rsa.PublicKey, error) { return j.Key(ctx, kid) }
	if k, err := key("k1"); err != nil || !k.Equal(&good.PublicKey) {
		t.Fatalf("k1: %v", err)
	}
	// Rotation: k2 appears. An unknown kid right after a load does not reload (MinRefresh)...
	ks.set(http.StatusOK, map[string]*rsa.PublicKey{"k1": &good.PublicKey, "k2": &other.PublicKey})
	if _, err := key("k2"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("k2 before MinRefresh: %v", err)
	}
	if n := ks.keyLoads.Load(); n != 1 {
		t.Fatalf("%d loads, want 1", n)
	}
	// ...but does once MinRefresh has passed.
	now = now.Add(time.Minute)
	if k, err := key("k2"); err != nil || !k.Equal(&other.PublicKey) {
		t.Fatalf("k2 after MinRefresh: %v", err)
	}
	// A forged kid asks the endpoint at most once per MinRefresh.
	now = now.Add(time.Minute)
	for range 5 {
		if _, err := key("forged"); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("forged: %v", err)
		}
	}
	if n := ks.keyLoads.Load(); n != 3 {
		t.Fatalf("%d loads, want 3", n)
	}
	// After TTL the set is reloaded; if the endpoint fails, the old keys stay in use.
	ks.set(http.StatusInternalServerError, nil)
	now = now.Add(time.Hour)
	if k, err := key("k1"); err != nil || !k.Equal(&good.PublicKey) {
		t.Fatalf("k1 with endpoint down: %v", err)
	}
	if n := ks.keyLoads.Load(); n != 4 {
		t.Fatalf("%d loads, want 4", n)
	}
}

func TestJWKSUnavailable(t *testing.T) {
	good, _ := testKeys(t)
	ks := newKeyServer(t, nil)
	ks.set(http.StatusServiceUnavailable, nil)
	v := testValidator(t)
	v.Keys = &JWKS{URL: ks.srv.URL + "/keys", HTTPClient: ks.srv.Client()}
	_, err := v.Validate(context.Background(), "Bearer "+sign(t, good, "k1", validClaims()))
	if !errors.Is(err, ErrKeysUnavailable) || errors.Is(err, ErrInvalidToken) {
		t.Fatalf("err = %v, want ErrKeysUnavailable only", err)
	}
	if _, err := (&JWKS{}).Key(context.Background(), "k1"); !errors.Is(err, ErrKeysUnavailable) {
		t.Fatalf("unconfigured JWKS: %v", err)
	}
}
