// Package client talks to a Direct Line 3.0 service from Go: start or reconnect a conversation,
// post activities, read history and receive activities over the WebSocket stream or by polling,
// delivered in sequence-id order with gaps made visible.
//
// The base URL is the full route prefix, the same value Web Chat takes as its domain:
// "https://directline.botframework.com/v3/directline", "http://127.0.0.1:3000/v3/directline",
// or "http://localhost:3000/directline" for offline-directline (which has no /v3, no tokens and no
// WebSocket; use polling there).
//
// # Ordering and gaps
//
// Every activity's position is its channelData["webchat:sequence-id"], or else the sequence part
// of an id of the form "<conversationId>|<digits>" (Direct Line 3.0 ids). A Subscription delivers
// activities in that order, each once. When the stream jumps over positions it waits
// Options.GapWait (0.5 s by default) for the missing ones, then reads them with GET activities.
// Positions that GET's watermark passes without returning an activity are legitimate skips: this
// service and the hosted one give typing activities (and revisions) a position but never return
// them from GET, so a polling client or a resumed stream always sees such holes. Positions that
// neither arrive nor are covered by GET's watermark are reported as lost. Activities without any
// position (offline-directline's uuid ids) are delivered in arrival order, deduplicated by id.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
)

// Defaults for Options fields left zero.
const (
	DefaultGapWait        = 500 * time.Millisecond
	DefaultPollInterval   = time.Second
	DefaultReconnectDelay = time.Second
	DefaultMaxReconnects  = 5
	// maxBody bounds a response body read by the client (a history page is at most 100
	// activities of at most 256 KiB each on this service; other services may send more).
	maxBody = 64 << 20
)

// Options configure a Client. BaseURL is required; Secret or Token authenticates (neither for
// servers without authentication such as offline-directline).
type Options struct {
	// BaseURL is the route prefix, e.g. "http://127.0.0.1:3000/v3/directline".
	BaseURL string
	// Secret is a Direct Line secret; it may start any conversation.
	Secret string
	// Token is a Direct Line token (from tokens/generate or a token server); it starts the
	// conversation it was issued for.
	Token string
	// UserID is sent as {user:{id}} when starting a conversation and as from.id of posted
	// activities that have none. Optional.
	UserID string
	// HTTPClient defaults to a client with a 30 s timeout.
	HTTPClient *http.Client
	// Dialer opens WebSocket streams; default websocket.DefaultDialer.
	Dialer *websocket.Dialer
	// GapWait is how long a stream may leave a hole in the sequence before GET fills it.
	// Default 0.5 s.
	GapWait time.Duration
	// PollInterval is the time between GET activities requests of a polling Subscription,
	// measured from the start of one request to the next (as DirectLineJS does). Default 1 s.
	PollInterval time.Duration
	// ReconnectDelay is the wait before reopening a stream that dropped. Default 1 s.
	ReconnectDelay time.Duration
	// MaxReconnects is how many reconnects in a row may fail before a Subscription ends with
	// the last error. Default 5.
	MaxReconnects int
}

// Client is a Direct Line 3.0 client for one credential. It is safe for concurrent use.
type Client struct {
	base    string
	opts    Options
	http    *http.Client
	dialer  *websocket.Dialer
	gapWait time.Duration
}

// New checks o and returns a Client. Errors: a BaseURL that is not an absolute http(s) URL.
func New(o Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(o.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: BaseURL %q must be an absolute http or https URL", o.BaseURL)
	}
	c := &Client{base: u.String(), opts: o, http: o.HTTPClient, dialer: o.Dialer, gapWait: o.GapWait}
	if c.http == nil {
		c.http = &http.Client{Timeout: 30 * time.Second}
	}
	if c.dialer == nil {
		c.dialer = websocket.DefaultDialer
	}
	if c.gapWait <= 0 {
		c.gapWait = DefaultGapWait
	}
	if c.opts.PollInterval <= 0 {
		c.opts.PollInterval = DefaultPollInterval
	}
	if c.opts.ReconnectDelay <= 0 {
		c.opts.ReconnectDelay = DefaultReconnectDelay
	}
	if c.opts.MaxReconnects <= 0 {
		c.opts.MaxReconnects = DefaultMaxReconnects
	}
	return c, nil
}

// Error is a failed request: Op names it ("POST conversations", "GET activities", ...), Status is
// the HTTP status and Code/Message come from the Direct Line error body
// {"error":{"code","message"}} when there is one.
type Error struct {
	Op      string
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: HTTP %d", e.Op, e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Conversation is a started conversation as the service answered it (Direct Line 3.0
// Conversation object). Token is the conversation token to use from now on, or the client's own
// credential when the service issued none.
type Conversation struct {
	ID        string
	Token     string
	ExpiresIn time.Duration
	// StreamURL is the WebSocket URL; empty when the service has no stream.
	StreamURL string

	c *Client
}

// conversationJSON accepts both the documented expires_in and offline-directline's expiresIn.
type conversationJSON struct {
	ConversationID string `json:"conversationId"`
	Token          string `json:"token"`
	ExpiresIn      int64  `json:"expires_in"`
	ExpiresInCamel int64  `json:"expiresIn"`
	StreamURL      string `json:"streamUrl"`
}

// StartConversation is POST /conversations: with a secret it creates a conversation, with a token
// it starts the token's conversation (Direct Line 3.0: Start a conversation).
func (c *Client) StartConversation(ctx context.Context) (*Conversation, error) {
	var body []byte
	if c.opts.UserID != "" {
		var err error
		if body, err = json.Marshal(map[string]any{"user": map[string]string{"id": c.opts.UserID}}); err != nil {
			return nil, err
		}
	}
	var cj conversationJSON
	if err := c.do(ctx, "POST conversations", http.MethodPost, "/conversations", c.credential(), body, &cj); err != nil {
		return nil, err
	}
	return c.conversation(cj, "")
}

// Reconnect is GET /conversations/{id}?watermark=W: a fresh token and a streamUrl that resumes
// after watermark ("" = from the start). cred is the credential to use ("" = the client's).
func (c *Client) Reconnect(ctx context.Context, conversationID, watermark, cred string) (*Conversation, error) {
	if cred == "" {
		cred = c.credential()
	}
	path := "/conversations/" + url.PathEscape(conversationID)
	if watermark != "" {
		path += "?watermark=" + url.QueryEscape(watermark)
	}
	var cj conversationJSON
	if err := c.do(ctx, "GET conversations/{id}", http.MethodGet, path, cred, nil, &cj); err != nil {
		return nil, err
	}
	return c.conversation(cj, conversationID)
}

func (c *Client) conversation(cj conversationJSON, id string) (*Conversation, error) {
	if cj.ConversationID == "" {
		cj.ConversationID = id
	}
	if cj.ConversationID == "" {
		return nil, errors.New("client: the service answered without a conversationId")
	}
	cv := &Conversation{ID: cj.ConversationID, Token: cj.Token, StreamURL: cj.StreamURL, c: c}
	if cv.Token == "" {
		cv.Token = c.credential()
	}
	exp := cj.ExpiresIn
	if exp == 0 {
		exp = cj.ExpiresInCamel
	}
	cv.ExpiresIn = time.Duration(exp) * time.Second
	return cv, nil
}

// Conversation returns a handle on an existing conversation, using the client's credential.
func (c *Client) Conversation(id string) *Conversation {
	return &Conversation{ID: id, Token: c.credential(), c: c}
}

func (c *Client) credential() string {
	if c.opts.Token != "" {
		return c.opts.Token
	}
	return c.opts.Secret
}

// Post is POST /conversations/{id}/activities and returns the id the service gave the activity.
// A missing from.id is set to Options.UserID.
func (c *Conversation) Post(ctx context.Context, a *activity.Activity) (string, error) {
	if (a.From == nil || a.From.ID == "") && c.c.opts.UserID != "" {
		from := &activity.ChannelAccount{ID: c.c.opts.UserID}
		if a.From != nil {
			f := *a.From
			f.ID = c.c.opts.UserID
			from = &f
		}
		a.From = from
	}
	body, err := activity.Encode(a)
	if err != nil {
		return "", err
	}
	return c.PostJSON(ctx, body)
}

// PostJSON is POST /conversations/{id}/activities with an activity already encoded as JSON, sent
// as it is (from.id is not filled in), for callers that post many activities alike and encode
// them once; it returns the id the service gave the activity.
func (c *Conversation) PostJSON(ctx context.Context, body []byte) (string, error) {
	var rr postAnswer
	if err := c.c.do(ctx, "POST activities", http.MethodPost, c.path("/activities"), c.Token, body, &rr); err != nil {
		return "", err
	}
	return rr.ID, nil
}

// postAnswer is the answer to POST activities: {"id"} (Direct Line 3.0 ResourceResponse).
type postAnswer struct {
	ID string `json:"id"`
}

// decode reads {"id"} as json.Unmarshal into postAnswer would, without its reflection.
func (r *postAnswer) decode(data []byte) error {
	if !json.Valid(data) {
		return json.Unmarshal(data, r)
	}
	t := jsonscan.TrimSpace(data)
	if string(t) == "null" {
		return nil
	}
	var id []byte
	repeated := false
	if jsonscan.Members(t, func(key, val []byte) {
		if bytes.EqualFold(key, []byte("id")) {
			repeated = repeated || id != nil
			id = val
		}
	}) != nil || repeated {
		// encoding/json decodes every duplicate in turn, and one of the wrong type fails.
		return json.Unmarshal(data, r)
	}
	if id == nil || string(id) == "null" {
		return nil
	}
	s, ok := jsonscan.StringValue(id)
	if !ok {
		return json.Unmarshal(data, r)
	}
	r.ID = s
	return nil
}

// ActivitySet is the Direct Line 3.0 ActivitySet: activities after the request's watermark and
// the watermark to continue from.
type ActivitySet struct {
	Activities []*activity.Activity `json:"activities"`
	Watermark  string               `json:"watermark"`

	// digests are the digests of the activities' JSON when the set was decoded from it.
	digests []uint64
}

// UnmarshalJSON also takes a watermark sent as a JSON number (offline-directline does) or null.
func (s *ActivitySet) UnmarshalJSON(data []byte) error { return s.decode(data, false) }

// digest is the digest of activity i: of its JSON as received when the set was decoded, else of
// its encoding.
func (s *ActivitySet) digest(i int) uint64 {
	if i < len(s.digests) {
		return s.digests[i]
	}
	return encodedDigest(s.Activities[i])
}

// Activities is GET /conversations/{id}/activities?watermark=W (W "" = from the start); the
// service answers one page (at most 100 activities on this service).
func (c *Conversation) Activities(ctx context.Context, watermark string) (ActivitySet, error) {
	return c.activities(ctx, watermark, false)
}

// activities is Activities, with each activity read by decodeSparse when sparse.
func (c *Conversation) activities(ctx context.Context, watermark string, sparse bool) (ActivitySet, error) {
	path := c.path("/activities")
	if watermark != "" {
		path += "?watermark=" + url.QueryEscape(watermark)
	}
	var set ActivitySet
	var out any = &set
	if sparse {
		out = sparseSet{&set}
	}
	err := c.c.do(ctx, "GET activities", http.MethodGet, path, c.Token, nil, out)
	return set, err
}

// sparseSet asks do to decode an ActivitySet answer sparsely.
type sparseSet struct{ *ActivitySet }

func (c *Conversation) path(suffix string) string {
	return "/conversations/" + url.PathEscape(c.ID) + suffix
}

// do sends one request, with body (JSON, nil for none), and decodes a 2xx JSON answer into out
// (an empty body leaves out unchanged). Non-2xx answers are *Error.
func (c *Client) do(ctx context.Context, op, method, path, cred string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header["Content-Type"] = jsonType
	}
	req.Header["Accept"] = jsonType
	if cred != "" {
		req.Header["Authorization"] = []string{"Bearer " + cred}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	data, err := readBody(resp)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &Error{Op: op, Status: resp.StatusCode}
		var eb struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &eb) == nil {
			e.Code, e.Message = eb.Error.Code, eb.Error.Message
		}
		return e
	}
	if out == nil || len(jsonscan.TrimSpace(data)) == 0 {
		return nil
	}
	if err := decodeAnswer(data, out); err != nil {
		return fmt.Errorf("%s: decoding the answer: %w", op, err)
	}
	return nil
}

// jsonType is the Content-Type and Accept of every request; the transport only reads it.
var jsonType = []string{"application/json"}

// readBody reads an answer of at most maxBody bytes: with a Content-Length, into a buffer of
// that size in one piece (the read that fills it also sees the end, so the connection goes back
// to the pool).
func readBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= maxBody {
		data := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, data); err != nil {
			return nil, err
		}
		return data, nil
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxBody))
}

// decodeAnswer decodes a 2xx answer into out. An ActivitySet and a POST answer decode
// themselves, and check the JSON as they do, so the scan json.Unmarshal makes before calling an
// Unmarshaler is skipped.
func decodeAnswer(data []byte, out any) error {
	switch o := out.(type) {
	case *ActivitySet:
		return o.decode(data, false)
	case sparseSet:
		return o.decode(data, true)
	case *postAnswer:
		return o.decode(data)
	}
	return json.Unmarshal(data, out)
}
