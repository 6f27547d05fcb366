package botauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultTokenURL is the Azure AD v2 token endpoint of the multi-tenant Bot Framework authority
// (the one the Bot Framework Emulator uses to mint tokens for a bot). Single-tenant bots use
// "https://login.microsoftonline.com/<tenant>/oauth2/v2.0/token".
const DefaultTokenURL = "https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token"

// TokenSource gives the bearer token to put on a request. Implementations must be safe for
// concurrent use.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// ClientCredentials is a TokenSource using the OAuth 2.0 client-credentials grant (RFC 6749 §4.4):
// it POSTs the form grant_type=client_credentials, client_id, client_secret, scope to TokenURL and
// reads {"access_token", "expires_in" (seconds)}. The token is cached until shortly before it
// expires and then renewed in the background while callers keep getting it, so that a slow or
// failing endpoint stops no delivery before the token really runs out; concurrent callers share
// one request to the endpoint, and after a failure the endpoint is asked again only after a
// backoff (1 s, doubling up to 30 s), as Azure AD throttles clients that hammer it. Use it by
// pointer; do not copy it after first use.
type ClientCredentials struct {
	// TokenURL is the token endpoint; "" means DefaultTokenURL.
	TokenURL string
	// ClientID is the bot's Microsoft app id.
	ClientID string
	// ClientSecret is the bot's app password.
	ClientSecret string
	// Scope is the requested scope; "" means "<ClientID>/.default" (a token for the bot itself).
	Scope string
	// HTTPClient sends the token request; nil means a client with a 10 s timeout.
	HTTPClient *http.Client

	mu        sync.Mutex
	token     string
	refreshAt time.Time // when to start renewing token
	usableTo  time.Time // when to stop handing token out (shortly before it expires)
	inflight  *tokenFetch
	failures  int              // consecutive failed fetches
	retryAt   time.Time        // no fetch before this after a failure
	lastErr   error            // the last fetch's error, while retryAt holds
	now       func() time.Time // tests move the clock
}

type tokenFetch struct {
	done  chan struct{}
	token string
	err   error
}

// TokenEndpointError is a non-2xx answer of the token endpoint, with the OAuth error code and
// description when the body carried them (RFC 6749 §5.2).
type TokenEndpointError struct {
	Status      int
	Code        string
	Description string
}

func (e *TokenEndpointError) Error() string {
	msg := fmt.Sprintf("botauth: token endpoint answered %d", e.Status)
	if e.Code != "" {
		msg += ": " + e.Code
	}
	if e.Description != "" {
		msg += ": " + e.Description
	}
	return msg
}

// ErrTokenResponse is returned when a 2xx answer of the token endpoint has no usable access token.
var ErrTokenResponse = errors.New("botauth: token endpoint answer has no access_token")

// refreshMargin is how long before expiry renewing a cached token starts, so that a token never
// expires while a request that carries it is on its way, and a renewal has time to fail and retry.
const refreshMargin = 5 * time.Minute

// expiryMargin is how long before expiry a cached token stops being handed out (at most a quarter
// of its lifetime): time for the request that carries it to arrive.
const expiryMargin = 30 * time.Second

// Backoff after failed fetches: the first retry waits minBackoff, each next one twice as long, up
// to maxBackoff.
const (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
)

// fetchTimeout bounds one token request: Azure AD answers in well under a second, and a request
// that hangs holds back every caller without a usable token until it ends.
const fetchTimeout = 10 * time.Second

// ErrBackoff wraps the last fetch's error while no new fetch is made (see ClientCredentials).
var ErrBackoff = errors.New("botauth: waiting before asking the token endpoint again")

// Token returns a valid access token. The cached one is returned until it is within 30 s (or a
// quarter of its lifetime) of expiry; from five minutes (or half its lifetime) before expiry a
// renewal runs in the background. Without a usable cached token the caller waits for a fetch,
// which ctx bounds for this caller only: the shared fetch keeps going for the others. Within the
// backoff after a failure it returns that failure at once, wrapped in ErrBackoff. Errors:
// *TokenEndpointError, ErrTokenResponse, transport errors, ErrBackoff, ctx.Err().
func (c *ClientCredentials) Token(ctx context.Context) (string, error) {
	now := c.clock()
	c.mu.Lock()
	if c.token != "" && now.Before(c.refreshAt) {
		tok := c.token
		c.mu.Unlock()
		return tok, nil
	}
	f := c.inflight
	if f == nil && !now.Before(c.retryAt) {
		f = &tokenFetch{done: make(chan struct{})}
		c.inflight = f
		go c.fetch(context.WithoutCancel(ctx), f)
	}
	if c.token != "" && now.Before(c.usableTo) {
		// Still good: the renewal, if any, goes on in the background.
		tok := c.token
		c.mu.Unlock()
		return tok, nil
	}
	if f == nil {
		err := fmt.Errorf("%w until %s: %w", ErrBackoff, c.retryAt.Format(time.RFC3339), c.lastErr)
		c.mu.Unlock()
		return "", err
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.token, f.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (c *ClientCredentials) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

func (c *ClientCredentials) fetch(ctx context.Context, f *tokenFetch) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	start := c.clock()
	tok, lifetime, err := c.request(ctx)
	c.mu.Lock()
	if err == nil {
		c.token = tok
		c.refreshAt = start.Add(lifetime - min(refreshMargin, lifetime/2))
		c.usableTo = start.Add(lifetime - min(expiryMargin, lifetime/4))
		c.failures, c.retryAt, c.lastErr = 0, time.Time{}, nil
	} else {
		c.failures++
		c.retryAt = c.clock().Add(min(minBackoff<<min(c.failures-1, 10), maxBackoff))
		c.lastErr = err
	}
	c.inflight = nil
	c.mu.Unlock()
	f.token, f.err = tok, err
	close(f.done)
}

func (c *ClientCredentials) request(ctx context.Context) (string, time.Duration, error) {
	endpoint := c.TokenURL
	if endpoint == "" {
		endpoint = DefaultTokenURL
	}
	scope := c.Scope
	if scope == "" {
		scope = c.ClientID + "/.default"
	}
	form := url.Values{
		"grant_type":    {"client_credentials"},
		"client_id":     {c.ClientID},
		"client_secret": {c.ClientSecret},
		"scope":         {scope},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, fmt.Errorf("botauth: token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	client := c.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: fetchTimeout}
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("botauth: token request: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", 0, fmt.Errorf("botauth: token response: %w", err)
	}
	var tr struct {
		AccessToken      string          `json:"access_token"`
		ExpiresIn        json.RawMessage `json:"expires_in"`
		Error            string          `json:"error"`
		ErrorDescription string          `json:"error_description"`
	}
	decodeErr := json.Unmarshal(body, &tr)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", 0, &TokenEndpointError{Status: resp.StatusCode, Code: tr.Error, Description: tr.ErrorDescription}
	}
	if decodeErr != nil || tr.AccessToken == "" {
		return "", 0, ErrTokenResponse
	}
	secs, ok := parseSeconds(tr.ExpiresIn)
	if !ok || secs <= 0 {
		return "", 0, fmt.Errorf("%w: expires_in missing or not a positive number", ErrTokenResponse)
	}
	return tr.AccessToken, time.Duration(secs) * time.Second, nil
}

// parseSeconds reads expires_in as a JSON number or a numeric string (Azure AD v1 endpoints send
// strings).
func parseSeconds(raw json.RawMessage) (int64, bool) {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
