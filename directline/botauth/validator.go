package botauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// BotTokenAudience is the audience of the tokens bots obtain for their Bot Connector calls
// (botbuilder's to-channel-from-bot OAuth scope is "https://api.botframework.com").
const BotTokenAudience = "https://api.botframework.com"

// BotFrameworkIssuers are the issuers of Azure AD tokens minted for bots (Bot Framework
// authentication v3.1 and v3.2, v1.0 and v2.0 token formats), as botbuilder and the Emulator
// accept them.
var BotFrameworkIssuers = []string{
	"https://sts.windows.net/d6d49420-f39b-4df7-a1dc-d59a935871db/",
	"https://login.microsoftonline.com/d6d49420-f39b-4df7-a1dc-d59a935871db/v2.0",
	"https://sts.windows.net/f8cdef31-a31e-4b4a-93e4-5f571e91255a/",
	"https://login.microsoftonline.com/f8cdef31-a31e-4b4a-93e4-5f571e91255a/v2.0",
}

// TenantIssuers are the issuers of Azure AD tokens minted in tenant (a directory id or domain) in
// the v1.0 and v2.0 formats: those of a single-tenant bot, whose tokens come from its own tenant
// rather than the Bot Framework one.
func TenantIssuers(tenant string) []string {
	return []string{"https://sts.windows.net/" + tenant + "/", "https://login.microsoftonline.com/" + tenant + "/v2.0"}
}

// TenantTokenURL is the Azure AD v2 token endpoint of tenant.
func TenantTokenURL(tenant string) string {
	return "https://login.microsoftonline.com/" + tenant + "/oauth2/v2.0/token"
}

// Validation errors. Every rejected token gives an error that matches ErrInvalidToken with
// errors.Is (and also the jwt/v5 cause, e.g. jwt.ErrTokenExpired), except a missing header
// (ErrMissingToken) and key sets that cannot be loaded (ErrKeysUnavailable), which are not the
// caller's fault.
var (
	ErrMissingToken = errors.New("botauth: missing bearer token")
	ErrInvalidToken = errors.New("botauth: invalid token")
	ErrConfig       = errors.New("botauth: validator needs Audience, Issuers and Keys")
)

// Validator checks the bearer token of a bot's call to the service's Bot Connector routes: an
// RS256 JWT whose signature verifies with Keys (by the header's kid), that is within exp/nbf
// allowing ClockSkew, whose iss is one of Issuers and whose aud is Audience, and, when AppID is
// set, whose appid (v1.0 tokens) or azp (v2.0 tokens) claim is AppID.
type Validator struct {
	// Audience is the required aud; for Azure AD bot tokens, BotTokenAudience.
	Audience string
	// AppID is the bot's Microsoft app id the token must be issued to; "" skips the check.
	AppID string
	// Issuers are the accepted iss values; for Azure AD bot tokens, BotFrameworkIssuers.
	Issuers []string
	// Keys verify signatures.
	Keys KeySet
	// ClockSkew tolerated on exp and nbf; 0 means 5 minutes (Bot Framework's value).
	ClockSkew time.Duration
}

// Claims are the checked claims of a valid token.
type Claims struct {
	Issuer   string
	Audience []string
	// AppID is the appid (v1.0) or azp (v2.0) claim: the app the token was issued to.
	AppID     string
	Subject   string
	ExpiresAt time.Time
	// Raw holds every claim as decoded JSON.
	Raw map[string]any
}

// BotFramework returns a Validator for the Azure AD tokens a bot with Microsoft app id appID
// sends: audience BotTokenAudience, BotFrameworkIssuers, keys from the Bot Framework OpenID
// metadata (fetched over the internet, cached). client may be nil.
func BotFramework(appID string, client *http.Client) *Validator {
	return &Validator{
		Audience: BotTokenAudience,
		AppID:    appID,
		Issuers:  BotFrameworkIssuers,
		Keys:     &JWKS{MetadataURL: BotFrameworkOpenIDMetadataURL, HTTPClient: client},
	}
}

// Validate checks the value of an Authorization header, "Bearer <jwt>" (scheme case-insensitive).
// Errors: ErrMissingToken (no header, other scheme, empty token), ErrInvalidToken (wrapping the
// reason), ErrKeysUnavailable, ErrConfig.
func (v *Validator) Validate(ctx context.Context, authorization string) (Claims, error) {
	if v.Audience == "" || len(v.Issuers) == 0 || v.Keys == nil {
		return Claims{}, ErrConfig
	}
	scheme, raw, _ := strings.Cut(strings.TrimSpace(authorization), " ")
	raw = strings.TrimSpace(raw)
	if !strings.EqualFold(scheme, "Bearer") || raw == "" {
		return Claims{}, ErrMissingToken
	}
	skew := v.ClockSkew
	if skew <= 0 {
		skew = 5 * time.Minute
	}
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{"RS256"}),
		jwt.WithLeeway(skew),
		jwt.WithExpirationRequired(),
		jwt.WithAudience(v.Audience),
	)
	mc := jwt.MapClaims{}
	_, err := parser.ParseWithClaims(raw, mc, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return v.Keys.Key(ctx, kid)
	})
	if err != nil {
		if errors.Is(err, ErrKeysUnavailable) {
			return Claims{}, err
		}
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	c := Claims{Raw: mc}
	c.Issuer, _ = mc.GetIssuer()
	c.Subject, _ = mc.GetSubject()
	c.Audience, _ = mc.GetAudience()
	if exp, _ := mc.GetExpirationTime(); exp != nil {
		c.ExpiresAt = exp.Time
	}
	if !slices.Contains(v.Issuers, c.Issuer) {
		return Claims{}, fmt.Errorf("%w: %w: %q", ErrInvalidToken, jwt.ErrTokenInvalidIssuer, c.Issuer)
	}
	c.AppID, _ = mc["appid"].(string)
	if c.AppID == "" {
		c.AppID, _ = mc["azp"].(string)
	}
	if v.AppID != "" && c.AppID != v.AppID {
		return Claims{}, fmt.Errorf("%w: issued to app %q, not %q", ErrInvalidToken, c.AppID, v.AppID)
	}
	return c, nil
}
