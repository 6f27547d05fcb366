package botauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const (
	testIssuer = "https://sts.windows.net/f8cdef31-a31e-4b4a-93e4-5f571e91255a/"
	testAppID  = "11111111-2222-3333-4444-555555555555"
)

var (
	keysOnce         sync.Once
	botKey, otherKey *rsa.PrivateKey
)

// testKeys returns the signing key the validator trusts and an unrelated one, generated once.
func testKeys(t testing.TB) (*rsa.PrivateKey, *rsa.PrivateKey) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if botKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if otherKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return botKey, otherKey
}

// validClaims are the claims of an Azure AD v1.0 token minted for the test bot.
func validClaims() jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss":   testIssuer,
		"aud":   BotTokenAudience,
		"appid": testAppID,
		"ver":   "1.0",
		"sub":   "bot-sub",
		"nbf":   now.Add(-time.Minute).Unix(),
		"iat":   now.Add(-time.Minute).Unix(),
		"exp":   now.Add(time.Hour).Unix(),
	}
}

func sign(t testing.TB, key *rsa.PrivateKey, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testValidator(t testing.TB) *Validator {
	good, _ := testKeys(t)
	return &Validator{
		Audience: BotTokenAudience,
		AppID:    testAppID,
		Issuers:  BotFrameworkIssuers,
		Keys:     StaticKeys{"k1": &good.PublicKey},
	}
}

func TestValidate(t *testing.T) {
	good, other := testKeys(t)
	with := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		c := validClaims()
		mod(c)
		return c
	}
	hs256, err := jwt.NewWithClaims(jwt.SigningMethodHS256, validClaims()).SignedString([]byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, validClaims()).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		header string
		want   error // nil: valid
		cause  error // optional jwt cause that must also match
	}{
		{"valid v1 token", "Bearer " + sign(t, good, "k1", validClaims()), nil, nil},
		{"valid v2 token uses azp", "Bearer " + sign(t, good, "k1", with(func(c jwt.MapClaims) {
			delete(c, "appid")
			c["azp"] = testAppID
			c["ver"] = "2.0"
			c["iss"] = "https://login.microsoftonline.com/f8cdef31-a31e-4b4a-93e4-5f571e91255a/v2.0"
		})), nil, nil},
		{"scheme is case-insensitive", "bearer " + sign(t, good, "k1", validClaims()), nil, nil},
		{"expired within clock skew", "Bearer " + sign(t, good, "k1", with(func(c jwt.MapClaims) {
			c["exp"] = time.Now().Add(-2 * time.Minute).Unix()
		})), nil, nil},
		{"forged with another key", "Bearer " + sign(t, other, "k1", validClaims()), ErrInvalidToken, jwt.ErrTokenSignatureInvalid},
		{"expired", "Bearer " + sign(t, good, "k1", with(func(c jwt.MapClaims) {
			c["exp"] = time.Now().Add(-10 * time.Minute).Unix()
		})), ErrInvalidToken, jwt.ErrTokenExpired},
		{"not valid yet", "Bearer " + sign(t, good, "k1", with(func(c jwt.MapClaims) {
			c["nbf"] = time.Now().Add(10 * time.Minute).Unix()
		})), ErrInvalidToken, jwt.ErrTokenNotValidYet},
		{"no expiry", "Bearer " + sign(t, good, "k1", with(func(c jwt.MapClaims) { delete(c, "exp") })), ErrInvalidToken, jwt.ErrTokenRequiredClaimMissing},
		{"wrong audience", "Bearer " + sign(t, good, "k1", with(func(c jwt.MapClaims) { c["aud"] = testAppID })), ErrInvalidToken, jwt.ErrTokenInvalidAudience},
		{"wrong issuer", "Bearer " + sign(t, good, "k1", with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example/" })), ErrInvalidToken, jwt.ErrTokenInvalidIssuer},
		{"issued to another app", "Bearer " + sign(t, good, "k1", with(func(c jwt.MapClaims) { c["appid"] = "other-app" })), ErrInvalidToken, nil},
		{"unknown kid", "Bearer " + sign(t, good, "k2", validClaims()), ErrInvalidToken, ErrUnknownKey},
		{"HS256", "Bearer " + hs256, ErrInvalidToken, nil},
		{"alg none", "Bearer " + none, ErrInvalidToken, nil},
		{"garbage", "Bearer not.a.jwt", ErrInvalidToken, jwt.ErrTokenMalformed},
		{"no header", "", ErrMissingToken, nil},
		{"empty bearer", "Bearer ", ErrMissingToken, nil},
		{"basic scheme", "Basic dXNlcjpwdw==", ErrMissingToken, nil},
	}
	v := testValidator(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := v.Validate(context.Background(), tc.header)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if c.AppID != testAppID || c.ExpiresAt.IsZero() || len(c.Audience) != 1 || c.Audience[0] != BotTokenAudience {
					t.Fatalf("claims %+v", c)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.cause != nil && !errors.Is(err, tc.cause) {
				t.Fatalf("err = %v, want cause %v", err, tc.cause)
			}
		})
	}
}

func TestValidateWithoutAppIDAcceptsAnyApp(t *testing.T) {
	good, _ := testKeys(t)
	v := testValidator(t)
	v.AppID = ""
	c := validClaims()
	c["appid"] = "some-other-bot"
	got, err := v.Validate(context.Background(), "Bearer "+sign(t, good, "k1", c))
	if err != nil || got.AppID != "some-other-bot" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestValidateNeedsConfiguration(t *testing.T) {
	good, _ := testKeys(t)
	tok := "Bearer " + sign(t, good, "k1", validClaims())
	for _, v := range []*Validator{
		{Issuers: BotFrameworkIssuers, Keys: StaticKeys{}},
		{Audience: BotTokenAudience, Keys: StaticKeys{}},
		{Audience: BotTokenAudience, Issuers: BotFrameworkIssuers},
	} {
		if _, err := v.Validate(context.Background(), tok); !errors.Is(err, ErrConfig) {
			t.Fatalf("%+v: err = %v, want ErrConfig", v, err)
		}
	}
}

func FuzzValidate(f *testing.F) {
	good, _ := testKeys(f)
	f.Add("Bearer " + sign(f, good, "k1", validClaims()))
	f.Add("Bearer a.b.c")
	f.Add("bearer")
	f.Add("")
	v := testValidator(f)
	f.Fuzz(func(t *testing.T, header string) {
		c, err := v.Validate(context.Background(), header)
		if err == nil && c.AppID != testAppID {
			t.Fatalf("accepted %q with claims %+v", header, c)
		}
		if err != nil && !errors.Is(err, ErrInvalidToken) && !errors.Is(err, ErrMissingToken) {
			t.Fatalf("unexpected error class: %v", err)
		}
	})
}

func BenchmarkValidate(b *testing.B) {
	good, _ := testKeys(b)
	v := testValidator(b)
	header := "Bearer " + sign(b, good, "k1", validClaims())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Validate(context.Background(), header); err != nil {
			b.Fatal(err)
		}
	}
}
