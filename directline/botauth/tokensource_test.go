package botauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tokenEndpoint is a fake Azure AD token endpoint that checks the client-credentials form and
// answers token "t<n>" for its n-th request.
type tokenEndpoint struct {
	t        *testing.T
	requests atomic.Int32
	answer   func(n int32, w http.ResponseWriter)
}

func (e *tokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := e.requests.Add(1)
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		e.t.Errorf("token request %s with Content-Type %q", r.Method, r.Header.Get("Content-Type"))
	}
	if err := r.ParseForm(); err != nil {
		e.t.Errorf("form: %v", err)
	}
	want := map[string]string{"grant_type": "client_credentials", "client_id": "app-1", "client_secret": "pw", "scope": "app-1/.default"}
	for k, v := range want {
		if got := r.PostForm.Get(k); got != v {
			e.t.Errorf("form %s = %q, want %q", k, got, v)
		}
	}
	if e.answer != nil {
		e.answer(n, w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"token_type":"Bearer","expires_in":3600,"access_token":"t%d"}`, n)
}

func newCredentials(t *testing.T, e *tokenEndpoint) *ClientCredentials {
	t.Helper()
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return &ClientCredentials{TokenURL: srv.URL, ClientID: "app-1", ClientSecret: "pw", HTTPClient: srv.Client()}
}

// idle waits until c has no fetch in flight, so that a background renewal has landed.
func idle(t *testing.T, c *ClientCredentials) {
	t.Helper()
	for {
		c.mu.Lock()
		f := c.inflight
		c.mu.Unlock()
		if f == nil {
			return
		}
		<-f.done
	}
}

// stoppedClock is a clock tests move by hand; it is read from the fetch goroutines too.
type stoppedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stoppedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stoppedClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestClientCredentialsRenewsShortlyBeforeExpiry(t *testing.T) {
	e := &tokenEndpoint{t: t}
	c := newCredentials(t, e)
	clock := &stoppedClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c.now = clock.now
	ctx := context.Background()

	steps := []struct {
		advance  time.Duration
		want     string
		requests int32 // once any renewal has landed
	}{
		{0, "t1", 1},
		{time.Minute, "t1", 1},
		{53*time.Minute + 59*time.Second, "t1", 1}, // 55 min - 1 s after issue: cached
		// Within 5 min of expiry the renewal starts; this caller still gets the valid t1.
		{2 * time.Second, "t1", 2},
		{time.Second, "t2", 2},
	}
	for i, s := range steps {
		clock.add(s.advance)
		got, err := c.Token(ctx)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		idle(t, c)
		if got != s.want || e.requests.Load() != s.requests {
			t.Fatalf("step %d: token %q after %d requests, want %q after %d", i, got, e.requests.Load(), s.want, s.requests)
		}
	}
}

func TestClientCredentialsShortLivedTokenRenewedAtHalfLife(t *testing.T) {
	e := &tokenEndpoint{t: t, answer: func(n int32, w http.ResponseWriter) {
		fmt.Fprintf(w, `{"expires_in":"60","access_token":"s%d"}`, n) // v1 endpoints send a string
	}}
	c := newCredentials(t, e)
	clock := &stoppedClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c.now = clock.now
	for _, s := range []struct {
		advance time.Duration
		want    string
	}{{0, "s1"}, {29 * time.Second, "s1"}, {time.Second, "s1"}, {time.Second, "s2"}} {
		clock.add(s.advance)
		got, err := c.Token(context.Background())
		idle(t, c)
		if err != nil || got != s.want {
			t.Fatalf("after %v: %q, %v; want %q", s.advance, got, err, s.want)
		}
	}
}

// A renewal that fails, or never answers, stops nothing while the cached token is still good;
// once it is not, callers get the failure, and the endpoint is asked again after a backoff.
func TestClientCredentialsFailedRenewalKeepsTheToken(t *testing.T) {
	var failing, hanging atomic.Bool
	release := make(chan struct{})
	e := &tokenEndpoint{t: t}
	e.answer = func(n int32, w http.ResponseWriter) {
		switch {
		case hanging.Load():
			<-release
			w.WriteHeader(http.StatusServiceUnavailable)
		case failing.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			fmt.Fprintf(w, `{"expires_in":3600,"access_token":"t%d"}`, n)
		}
	}
	c := newCredentials(t, e)
	clock := &stoppedClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c.now = clock.now
	ctx := context.Background()
	if tok, err := c.Token(ctx); tok != "t1" || err != nil {
		t.Fatalf("first token %q, %v", tok, err)
	}

	// The renewal hangs: callers are not held up.
	hanging.Store(true)
	clock.add(56 * time.Minute)
	for range 3 {
		if tok, err := c.Token(ctx); tok != "t1" || err != nil {
			t.Fatalf("while the renewal hangs: %q, %v", tok, err)
		}
	}
	failing.Store(true)
	hanging.Store(false)
	close(release)
	idle(t, c)

	// It failed: t1 is still handed out, and the next attempt waits for the backoff.
	if tok, err := c.Token(ctx); tok != "t1" || err != nil {
		t.Fatalf("after a failed renewal: %q, %v", tok, err)
	}
	idle(t, c)
	if n := e.requests.Load(); n != 2 {
		t.Fatalf("%d requests within the backoff, want 2", n)
	}
	// Past the token's end, callers get the failure without asking again during the backoff.
	clock.add(4*time.Minute - expiryMargin/2)
	tok, err := c.Token(ctx)
	var te *TokenEndpointError
	if tok != "" || !errors.As(err, &te) {
		t.Fatalf("past the token's end: %q, %v", tok, err)
	}
	if _, err := c.Token(ctx); !errors.Is(err, ErrBackoff) || !errors.As(err, &te) {
		t.Fatalf("within the backoff: %v, want ErrBackoff wrapping the endpoint's answer", err)
	}
	if n := e.requests.Load(); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	// The endpoint is back: after the backoff the next caller gets a new token.
	failing.Store(false)
	clock.add(maxBackoff)
	if tok, err := c.Token(ctx); tok != "t4" || err != nil {
		t.Fatalf("after the backoff: %q, %v", tok, err)
	}
}

func TestClientCredentialsConcurrentCallersShareOneFetch(t *testing.T) {
	release := make(chan struct{})
	e := &tokenEndpoint{t: t}
	e.answer = func(n int32, w http.ResponseWriter) {
		<-release
		fmt.Fprintf(w, `{"expires_in":3600,"access_token":"t%d"}`, n)
	}
	c := newCredentials(t, e)
	const callers = 8
	var wg sync.WaitGroup
	tokens := make([]string, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() { tokens[i], errs[i] = c.Token(context.Background()) })
	}
	// Every caller that started before the first answer joins the fetch in flight; with no
	// sharing, each would send its own request while the first one is held.
	for e.requests.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || tokens[i] != "t1" {
			t.Fatalf("caller %d: %q, %v", i, tokens[i], errs[i])
		}
	}
	if n := e.requests.Load(); n != 1 {
		t.Fatalf("%d token requests, want 1", n)
	}
}

func TestClientCredentialsErrors(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		check  func(error) bool
	}{
		{"invalid client", 401, `{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret"}`, func(err error) bool {
			var te *TokenEndpointError
			return errors.As(err, &te) && te.Status == 401 && te.Code == "invalid_client"
		}},
		{"server error without body", 503, ``, func(err error) bool {
			var te *TokenEndpointError
			return errors.As(err, &te) && te.Status == 503
		}},
		{"no access token", 200, `{"expires_in":3600}`, func(err error) bool { return errors.Is(err, ErrTokenResponse) }},
		{"no expiry", 200, `{"access_token":"x"}`, func(err error) bool { return errors.Is(err, ErrTokenResponse) }},
		{"not json", 200, `<html>`, func(err error) bool { return errors.Is(err, ErrTokenResponse) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &tokenEndpoint{t: t, answer: func(_ int32, w http.ResponseWriter) {
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}}
			c := newCredentials(t, e)
			clock := &stoppedClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			c.now = clock.now
			for i := range 3 {
				tok, err := c.Token(context.Background())
				if tok != "" || !tc.check(err) || (i == 1) != errors.Is(err, ErrBackoff) {
					t.Fatalf("call %d: got %q, %v", i, tok, err)
				}
				// The second call comes within the backoff, the third after it.
				if i == 1 {
					clock.add(minBackoff)
				}
			}
			if n := e.requests.Load(); n != 2 {
				t.Fatalf("%d requests, want 2", n)
			}
		})
	}
}

func TestClientCredentialsCallerContextEndsWait(t *testing.T) {
	release := make(chan struct{})
	e := &tokenEndpoint{t: t, answer: func(_ int32, w http.ResponseWriter) {
		<-release
		fmt.Fprint(w, `{"expires_in":3600,"access_token":"late"}`)
	}}
	c := newCredentials(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Token(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	close(release)
	// The fetch went on without the canceled caller, so the next caller gets its token.
	if tok, err := c.Token(context.Background()); err != nil || tok != "late" {
		t.Fatalf("got %q, %v", tok, err)
	}
	if n := e.requests.Load(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}
