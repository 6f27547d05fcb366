// Package bot delivers activities to a bot's messaging endpoint, the channel → bot half of the
// Bot Framework protocol (DIRECTLINE.md §2.1): one POST of the complete activity as JSON, answered
// by the bot with 200 and an empty body for ordinary activities, with the invoke response for
// invoke activities, or with {"activities":[...]} for deliveryMode "expectReplies".
//
// Deliver waits for the bot only up to an ack timeout. Web Chat shows "send failed" when the
// POST of the client takes longer than its send timeout, and a retry makes the bot handle the
// message twice (field case R07), so a slow bot is not an error: the request keeps running in the
// background and its outcome is logged and reported to the Observer.
package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
	"github.com/directline-go/directline/directline/botauth"
)

// Defaults of Options.
const (
	DefaultAckTimeout       = 10 * time.Second
	DefaultTimeout          = 120 * time.Second
	DefaultMaxResponseBytes = 4 << 20
)

// bodyExcerpt is how much of an error body RejectedError keeps.
const bodyExcerpt = 512

// Errors of Deliver; compare with errors.Is.
var (
	// ErrUnreachable: no connection to the endpoint (connection refused, no route, DNS failure,
	// dial timeout). Nothing reached the bot. Maps to 502 BotUnreachable.
	ErrUnreachable = errors.New("bot: endpoint unreachable")
	// ErrNoResponse: the connection was made but no HTTP response came back (reset, closed,
	// malformed answer). The bot may have received the activity.
	ErrNoResponse = errors.New("bot: no response from endpoint")
	// ErrTimeout: no answer within Options.Timeout.
	ErrTimeout = errors.New("bot: endpoint timed out")
	// ErrCredentials: no token could be obtained for the Authorization header; nothing was sent.
	ErrCredentials = errors.New("bot: cannot obtain credentials")
	// ErrBadEndpoint: the endpoint is not an absolute http or https URL.
	ErrBadEndpoint = errors.New("bot: endpoint is not an http(s) URL")
	// ErrClosed: Deliver after Close, or a delivery canceled because Close's deadline passed.
	ErrClosed = errors.New("bot: client closed")
)

// RejectedError is a bot's non-2xx answer (Direct Line 3.0 maps it to 502 BotRejectedActivity).
type RejectedError struct {
	// Status is the bot's HTTP status code.
	Status int
	// Body is the start of the bot's answer (at most 512 bytes), for logs and error messages.
	Body string
}

func (e *RejectedError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("bot: endpoint answered %d", e.Status)
	}
	return fmt.Sprintf("bot: endpoint answered %d: %s", e.Status, e.Body)
}

// Observer receives delivery metrics. Methods must be safe for concurrent use and return quickly.
type Observer interface {
	// Delivered reports the outcome of every delivery exactly once, including deliveries that
	// finish in the background. code is the bot's HTTP status as a decimal string ("200", "500")
	// or one of "unreachable", "no_response", "timeout", "credentials", "canceled"; d is the time
	// from the start of the delivery to its outcome.
	Delivered(code string, d time.Duration)
	// Pending reports a delivery that was still running when its ack timeout passed.
	Pending()
}

// Options configure a Client. Zero values mean the documented defaults.
type Options struct {
	// AckTimeout is how long Deliver waits for the bot's answer before reporting Pending
	// (default 10 s, below the 15 s the hosted service gives bots and Web Chat's 20 s send timeout).
	AckTimeout time.Duration
	// Timeout bounds the whole request, including the part in the background (default 120 s).
	Timeout time.Duration
	// HTTPClient sends the requests; nil means a client that does not follow redirects (a POST
	// redirected to a GET would lose the activity). Its own Timeout, if any, also applies.
	HTTPClient *http.Client
	// Credentials give the bearer token for the Authorization header; nil sends no header (bots
	// with an empty app id do not check it, DIRECTLINE.md §2.3).
	Credentials botauth.TokenSource
	// Logger receives one record per failed or background delivery; nil means slog.Default().
	Logger *slog.Logger
	// Observer receives metrics; nil means none.
	Observer Observer
	// MaxResponseBytes caps the body read from the bot (default 4 MiB); see Result.BodyTruncated.
	MaxResponseBytes int64
}

// Result is the outcome of a Deliver call that did not fail. Exactly one of Acked and Pending is
// true.
type Result struct {
	// Acked: the bot answered 2xx within the ack timeout.
	Acked bool
	// Pending: the ack timeout passed first; the request goes on in the background.
	Pending bool
	// Status is the bot's HTTP status when Acked.
	Status int
	// Body is the bot's raw answer when Acked: empty for ordinary activities, the invoke response
	// for invoke activities, {"activities":[...]} for deliveryMode "expectReplies".
	Body []byte
	// BodyTruncated is set when the answer was longer than MaxResponseBytes; Body is then empty.
	BodyTruncated bool
}

// Activities decodes Body as an expectReplies answer {"activities":[...]}; nil, nil for an empty
// body. Errors are JSON or *activity.FieldError errors.
func (r Result) Activities() ([]*activity.Activity, error) {
	if len(jsonscan.TrimSpace(r.Body)) == 0 {
		return nil, nil
	}
	var set struct {
		Activities []*activity.Activity `json:"activities"`
	}
	if err := json.Unmarshal(r.Body, &set); err != nil {
		return nil, err
	}
	return set.Activities, nil
}

// Client delivers activities to bots. It is safe for concurrent use.
type Client struct {
	opts   Options
	http   *http.Client
	log    *slog.Logger
	base   context.Context // canceled when Close gives up waiting
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// NewClient returns a Client with o's zero values replaced by the defaults.
func NewClient(o Options) *Client {
	if o.AckTimeout <= 0 {
		o.AckTimeout = DefaultAckTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	c := &Client{opts: o, http: o.HTTPClient, log: o.Logger}
	if c.http == nil {
		c.http = &http.Client{Transport: PooledTransport(256), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.base, c.cancel = context.WithCancel(context.Background())
	return c
}

// outcome is what one request ended with.
type outcome struct {
	res Result
	err error
}

// delivery tracks whether Deliver is still waiting for the request or has let it go on alone.
type delivery struct {
	mu       sync.Mutex
	detached bool // Deliver returned Pending
	finished bool // the request has an outcome
	done     chan outcome
}

// Deliver POSTs the complete inbound activity a as JSON to endpoint, once; it is not retried,
// as the bot may already be acting on it, unless the bot's server reset a kept-alive connection
// with the request unread (see errUnread). It returns when the bot answers or the ack timeout
// passes, whichever comes first:
//
//   - 2xx in time: Result{Acked: true, Status, Body}, nil
//   - another status in time: *RejectedError{Status, Body excerpt}
//   - no connection: ErrUnreachable (wrapping the cause), as soon as the dial fails
//   - no token from Options.Credentials within the ack timeout: ErrCredentials, nothing sent
//   - still running at the ack timeout: Result{Pending: true}, nil; the request continues up to
//     Options.Timeout and its outcome is logged and reported to the Observer.
//
// ctx bounds only the wait, not the request: the activity is already stored when it is delivered,
// so a client that hangs up must not cancel the bot's turn. If ctx ends first, Deliver returns
// Result{Pending: true} and ctx.Err(). Other errors: ErrNoResponse, ErrTimeout (when Timeout is
// not longer than AckTimeout), ErrCredentials, ErrBadEndpoint, ErrClosed, JSON encoding errors.
func (c *Client) Deliver(ctx context.Context, endpoint string, a *activity.Activity) (Result, error) {
	return c.DeliverWithin(ctx, endpoint, a, c.opts.AckTimeout)
}

// DeliverWithin is Deliver with its own ack timeout instead of Options.AckTimeout (uploads get a
// longer one, as Web Chat waits longer for activities with attachments); ackTimeout <= 0 means
// Options.AckTimeout. Options.Timeout still bounds the request.
func (c *Client) DeliverWithin(ctx context.Context, endpoint string, a *activity.Activity, ackTimeout time.Duration) (Result, error) {
	body, err := activity.AppendJSON(nil, a)
	if err != nil {
		return Result{}, fmt.Errorf("bot: encode activity: %w", err)
	}
	return c.DeliverJSONWithin(ctx, endpoint, a, body, ackTimeout)
}

// DeliverJSONWithin is DeliverWithin for an activity already encoded: body is a as
// activity.Encode writes it (the store's store.Entry.JSON), sent as is; a names the activity in
// logs. body is not modified and may be shared.
func (c *Client) DeliverJSONWithin(ctx context.Context, endpoint string, a *activity.Activity, body []byte, ackTimeout time.Duration) (Result, error) {
	if ackTimeout <= 0 {
		ackTimeout = c.opts.AckTimeout
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Result{}, fmt.Errorf("%w: %q", ErrBadEndpoint, endpoint)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return Result{}, ErrClosed
	}
	c.wg.Add(1)
	c.mu.Unlock()

	// The token comes first, within the ack timeout: until the request is on its way the bot has
	// nothing, so a delivery that cannot get one fails here (and may be sent again) instead of
	// being reported Pending and failing unseen. The client hanging up does not stop it.
	start := time.Now()
	var header http.Header
	if c.opts.Credentials != nil {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
		tok, err := c.opts.Credentials.Token(tctx)
		cancel()
		if err != nil {
			c.wg.Done()
			err = fmt.Errorf("%w: %w", ErrCredentials, err)
			if c.opts.Observer != nil {
				c.opts.Observer.Delivered("credentials", time.Since(start))
			}
			c.log.Warn("bot delivery failed", slog.String("endpoint", endpoint), slog.String("activityId", a.ID),
				slog.String("type", a.Type), slog.String("code", "credentials"), slog.String("error", err.Error()))
			return Result{}, err
		}
		header = http.Header{"Authorization": {"Bearer " + tok}}
		ackTimeout -= time.Since(start)
	}

	d := &delivery{done: make(chan outcome, 1)}
	go c.run(context.WithoutCancel(ctx), d, endpoint, body, header, a, start)

	ack := time.NewTimer(max(ackTimeout, 0))
	defer ack.Stop()
	var waitErr error
	select {
	case o := <-d.done:
		return o.res, o.err
	case <-ack.C:
	case <-ctx.Done():
		waitErr = ctx.Err()
	}
	d.mu.Lock()
	if d.finished {
		// The outcome raced the timer and is already on its way: report it, not Pending.
		d.mu.Unlock()
		o := <-d.done
		return o.res, o.err
	}
	d.detached = true
	d.mu.Unlock()
	if c.opts.Observer != nil {
		c.opts.Observer.Pending()
	}
	return Result{Pending: true}, waitErr
}

// run performs one delivery and hands its outcome to Deliver, or logs it when Deliver has
// returned Pending.
func (c *Client) run(ctx context.Context, d *delivery, endpoint string, body []byte, header http.Header, a *activity.Activity, start time.Time) {
	defer c.wg.Done()
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	stop := context.AfterFunc(c.base, cancel)
	defer stop()

	res, code, err := c.post(ctx, endpoint, body, header)
	elapsed := time.Since(start)

	d.mu.Lock()
	d.finished = true
	background := d.detached
	d.mu.Unlock()
	d.done <- outcome{res, err}

	if c.opts.Observer != nil {
		c.opts.Observer.Delivered(code, elapsed)
	}
	if err == nil && !background {
		return // the common case: nothing to log, so no record to build
	}
	attrs := []any{
		slog.String("endpoint", endpoint), slog.String("activityId", a.ID), slog.String("type", a.Type),
		slog.String("code", code), slog.Duration("duration", elapsed), slog.Bool("background", background),
	}
	if err != nil {
		c.log.Warn("bot delivery failed", append(attrs, slog.String("error", err.Error()))...)
		return
	}
	c.log.Info("bot answered after the ack timeout", attrs...)
}

// post sends the request with header added and classifies the result; code is the Observer's
// outcome code.
func (c *Client) post(ctx context.Context, endpoint string, body []byte, header http.Header) (Result, string, error) {
	resp, err := c.send(ctx, endpoint, body, header)
	if errors.Is(err, errUnread) {
		resp, err = c.send(ctx, endpoint, body, header)
	}
	if errors.Is(err, ErrBadEndpoint) {
		return Result{}, "unreachable", err
	}
	if err != nil {
		return c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	limit := c.opts.MaxResponseBytes
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return c.transportError(ctx, err)
	}
	code := strconv.Itoa(resp.StatusCode)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		excerpt := data
		if len(excerpt) > bodyExcerpt {
			excerpt = excerpt[:bodyExcerpt]
		}
		return Result{}, code, &RejectedError{Status: resp.StatusCode, Body: string(excerpt)}
	}
	res := Result{Acked: true, Status: resp.StatusCode, Body: data}
	if int64(len(data)) > limit {
		res.Body, res.BodyTruncated = nil, true
	}
	return res, code, nil
}

// errUnread marks a delivery the bot's server never read: a kept-alive connection reset before
// any byte of the answer. A server resets a connection it closes with data still unread in it,
// as Node does when its keepAliveTimeout fires while its busy event loop has yet to read the
// request that has just arrived; a bot that read the request and then failed closes without a
// reset, or has begun its answer. Only such a delivery is sent again (once): the bot may have
// acted on any other (field case R07).
var errUnread = errors.New("bot: kept-alive connection reset before the request was read")

// send POSTs body to endpoint once. Errors: ErrBadEndpoint when no request can be built for
// endpoint, errUnread (wrapping the connection's error), or the HTTP client's.
func (c *Client) send(ctx context.Context, endpoint string, body []byte, header http.Header) (*http.Response, error) {
	var reused, answered bool
	trace := &httptrace.ClientTrace{
		GotConn:              func(info httptrace.GotConnInfo) { reused = info.Reused },
		GotFirstResponseByte: func() { answered = true },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadEndpoint, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil && reused && !answered && errors.Is(err, syscall.ECONNRESET) {
		return nil, fmt.Errorf("%w: %w", errUnread, err)
	}
	return resp, err
}

func (c *Client) transportError(ctx context.Context, err error) (Result, string, error) {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr), errors.As(err, &opErr) && opErr.Op == "dial":
		return Result{}, "unreachable", fmt.Errorf("%w: %w", ErrUnreachable, err)
	case c.base.Err() != nil:
		return Result{}, "canceled", fmt.Errorf("%w: %w", ErrClosed, err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || isTimeout(err):
		return Result{}, "timeout", fmt.Errorf("%w: %w", ErrTimeout, err)
	default:
		return Result{}, "no_response", fmt.Errorf("%w: %w", ErrNoResponse, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Close stops new deliveries (they get ErrClosed) and waits for the running ones, including those
// in the background. When ctx ends first, the running requests are canceled (their outcome is
// "canceled") and Close returns ctx.Err() once they have stopped.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		c.cancel()
		return nil
	case <-ctx.Done():
		c.cancel()
		<-done
		return ctx.Err()
	}
}

// IdleReuse is how long PooledTransport keeps an idle connection for reuse: well under Node's
// default keepAliveTimeout (5 s, node:http and so restify and botbuilder-js samples). Node closes
// a socket whose timer expired even when a request already waits in it unread, which a busy
// event loop notices late; the request then fails with "connection reset by peer". A connection
// idle for less than IdleReuse leaves such a loop 3 s of lag (and a delivery reset unread is sent
// again, see errUnread).
const IdleReuse = 2 * time.Second

// PooledTransport is http.DefaultTransport keeping up to perHost idle connections per host, each
// for IdleReuse: the default keeps two, so many concurrent requests to one host (deliveries to a
// bot, a bot's replies, a load generator's users) would mostly dial new connections.
func PooledTransport(perHost int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = max(perHost, 2)
	t.MaxIdleConns = 4 * t.MaxIdleConnsPerHost
	t.IdleConnTimeout = IdleReuse
	return t
}
