// Package demobot is the built-in demo bot: a small bot that speaks the real Bot Framework
// protocol, so the service can be tried without installing a bot. It receives activities at
// POST /api/messages (DIRECTLINE.md §2.1) and answers through the activity's serviceUrl with the
// Bot Connector REST API (§2.2): ReplyToActivity for replies, SendToConversation for the welcome,
// with no Authorization header, as a bot with an empty app id does (§2.3).
//
// Commands (message text, case-insensitive):
//
//   - stream: a livestream of 12 typing revisions and a final message (WEBCHAT-ORDERING §8);
//   - steps: a HowTo part grouping of four steps, sent out of position order (3, 1, 4, 2);
//   - card: an Adaptive Card; submitting it is answered with the submitted values;
//   - upload, or any message with attachments: the name, content type and size of each file;
//   - help: the list of commands; anything else is echoed as "You said: <text>".
//
// A conversationUpdate that adds a member other than the bot gets one welcome message. Typing and
// every other activity type are acknowledged and ignored.
//
// Replies are sent inline, as botbuilder's adapter does: the turn sends its replies one by one,
// each after the previous POST has returned (so the service stores them in the order the bot
// produced them), and only then answers the inbound POST with 200. The service must therefore
// serve Bot Connector calls while its delivery to the bot is still waiting, which any botbuilder
// bot requires as well. If a reply cannot be sent, the inbound POST gets 500 with the reason.
package demobot

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
	"net/url"
	"strings"
	"time"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
	botclient "github.com/directline-go/directline/directline/bot"
)

// maxActivityBytes caps an inbound activity (Direct Line allows 256K characters serialized).
const maxActivityBytes = 1 << 20

// streamRevisions is the number of typing revisions of the livestream before its final message.
const streamRevisions = 12

// Options configure the demo bot. Zero values mean the documented defaults.
type Options struct {
	// HTTPClient makes the Bot Connector calls and attachment downloads; nil means a client with
	// a 30 s timeout.
	HTTPClient *http.Client
	// Logger receives a record per failed turn; nil means slog.Default().
	Logger *slog.Logger
	// StreamDelay is the pause between livestream revisions (default 60 ms), so that a client
	// sees the text grow.
	StreamDelay time.Duration
	// MaxDownloadBytes caps how much of an attachment is read to measure it (default 32 MiB).
	MaxDownloadBytes int64
}

type bot struct {
	http        *http.Client
	log         *slog.Logger
	streamDelay time.Duration
	maxDownload int64
}

// New returns the bot's handler: POST /api/messages; other methods on that path get 405, other
// paths 404.
func New(opts Options) http.Handler {
	b := &bot{http: opts.HTTPClient, log: opts.Logger, streamDelay: opts.StreamDelay, maxDownload: opts.MaxDownloadBytes}
	if b.http == nil {
		b.http = &http.Client{Timeout: 30 * time.Second, Transport: botclient.PooledTransport(256)}
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.streamDelay <= 0 {
		b.streamDelay = 60 * time.Millisecond
	}
	if b.maxDownload <= 0 {
		b.maxDownload = 32 << 20
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/messages", b.serveActivity)
	return mux
}

// Start serves the bot on a loopback listener at addr ("127.0.0.1:0", ":0" or "" pick a free
// port on 127.0.0.1; a non-loopback host is refused) and returns its base URL (the bot endpoint
// is url + "/api/messages") and a stop function that shuts the server down gracefully, waiting
// for running turns until ctx ends.
func Start(addr string, opts Options) (string, func(context.Context) error, error) {
	if addr == "" {
		addr = ":0"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, fmt.Errorf("demobot: address %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", nil, fmt.Errorf("demobot: address %q is not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return "", nil, fmt.Errorf("demobot: %w", err)
	}
	srv := &http.Server{Handler: New(opts), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), srv.Shutdown, nil
}

// errBadActivity is a client error in the inbound activity (answered with 400).
var errBadActivity = errors.New("bad activity")

func (b *bot) serveActivity(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxActivityBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "activity too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}
	in, err := activity.Decode(data)
	if err == nil {
		err = in.Validate()
	}
	if err != nil {
		http.Error(w, "activity: "+err.Error(), http.StatusBadRequest)
		return
	}
	t := &turn{bot: b, in: in}
	if err := t.run(r.Context()); err != nil {
		if errors.Is(err, errBadActivity) {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.log.Warn("demo bot turn failed", "type", in.Type, "activityId", in.ID,
			"conversation", conversationID(in), "error", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func conversationID(a *activity.Activity) string {
	if a.Conversation == nil {
		return ""
	}
	return a.Conversation.ID
}

// turn is the handling of one inbound activity.
type turn struct {
	*bot
	in *activity.Activity
}

func (t *turn) run(ctx context.Context) error {
	switch t.in.Type {
	case activity.TypeMessage:
		if err := t.checkAddress(); err != nil {
			return err
		}
		return t.onMessage(ctx)
	case activity.TypeConversationUpdate:
		if !t.userJoined() {
			return nil
		}
		if err := t.checkAddress(); err != nil {
			return err
		}
		welcome := t.newActivity(activity.TypeMessage)
		welcome.ReplyToID = ""
		welcome.Text = "Welcome to the Direct Line demo bot! " + helpText
		_, err := t.send(ctx, welcome)
		return err
	default:
		return nil
	}
}

// checkAddress rejects activities the bot cannot answer: replies need serviceUrl and
// conversation.id.
func (t *turn) checkAddress() error {
	u, err := url.Parse(t.in.ServiceURL)
	if t.in.ServiceURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%w: serviceUrl must be an http(s) URL", errBadActivity)
	}
	if conversationID(t.in) == "" {
		return fmt.Errorf("%w: conversation.id is required", errBadActivity)
	}
	return nil
}

const helpText = "Send **stream** for a livestreamed answer, **steps** for a grouped how-to sent out of " +
	"order, **card** for an Adaptive Card, **upload** (or attach a file) to have your files described, " +
	"and anything else to have it echoed."

// userJoined reports whether membersAdded holds someone other than the bot itself (botbuilder's
// welcome pattern; field case R17: the bot's own join must not trigger a welcome).
func (t *turn) userJoined() bool {
	var added []activity.ChannelAccount
	if raw, ok := t.in.Extra["membersAdded"]; !ok || json.Unmarshal(raw, &added) != nil {
		return false
	}
	for _, m := range added {
		if t.in.Recipient == nil || m.ID != t.in.Recipient.ID {
			return true
		}
	}
	return false
}

func (t *turn) onMessage(ctx context.Context) error {
	cmd := strings.ToLower(strings.TrimSpace(t.in.Text))
	switch {
	case len(t.in.Attachments) > 0 || cmd == "upload":
		return t.describeAttachments(ctx)
	case cmd == "stream":
		return t.livestream(ctx)
	case cmd == "steps":
		return t.steps(ctx)
	case cmd == "card":
		return t.card(ctx)
	case cmd == "help":
		return t.say(ctx, helpText)
	case t.in.Text == "" && len(t.in.Extra["value"]) > 0:
		return t.say(ctx, "You submitted: "+string(t.in.Extra["value"]))
	default:
		return t.say(ctx, "You said: "+t.in.Text)
	}
}

func (t *turn) say(ctx context.Context, text string) error {
	a := t.newActivity(activity.TypeMessage)
	a.Text = text
	_, err := t.send(ctx, a)
	return err
}

// newActivity addresses a reply the way botbuilder does: from = the inbound recipient,
// recipient = the inbound from, conversation copied, replyToId = the inbound id.
// The accounts are copied so that a reply's changes never reach the inbound activity; their
// unknown members are shared, as nothing modifies them.
func (t *turn) newActivity(typ string) *activity.Activity {
	in := t.in
	return &activity.Activity{
		Type:         typ,
		ChannelID:    in.ChannelID,
		ServiceURL:   in.ServiceURL,
		From:         cloneAccount(in.Recipient),
		Recipient:    cloneAccount(in.From),
		Conversation: cloneConversation(in.Conversation),
		ReplyToID:    in.ID,
	}
}

func cloneAccount(a *activity.ChannelAccount) *activity.ChannelAccount {
	if a == nil {
		return nil
	}
	c := *a
	return &c
}

func cloneConversation(a *activity.ConversationAccount) *activity.ConversationAccount {
	if a == nil {
		return nil
	}
	c := *a
	return &c
}

// send POSTs a to the Bot Connector API and returns the id the service gave it: ReplyToActivity
// (POST /v3/conversations/{conversationId}/activities/{replyToId}) when a has replyToId, else
// SendToConversation (POST /v3/conversations/{conversationId}/activities). Path ids are escaped
// ("|" becomes %7C), as botbuilder's connector client does.
func (t *turn) send(ctx context.Context, a *activity.Activity) (string, error) {
	endpoint := strings.TrimRight(t.in.ServiceURL, "/") + "/v3/conversations/" +
		url.PathEscape(conversationID(t.in)) + "/activities"
	if a.ReplyToID != "" {
		endpoint += "/" + url.PathEscape(a.ReplyToID)
	}
	body, err := activity.AppendJSON(nil, a)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := t.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("send %s: %w", a.Type, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	// Bot Connector answers 200, 201 or 202 with a ResourceResponse {id} (DIRECTLINE.md §2.2).
	if resp.StatusCode < 200 || resp.StatusCode > 202 {
		return "", fmt.Errorf("send %s: connector answered %d: %s", a.Type, resp.StatusCode, bytes.TrimSpace(data))
	}
	var rr struct {
		ID string `json:"id"`
	}
	if len(jsonscan.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &rr); err != nil {
			return "", fmt.Errorf("send %s: connector answer is not a ResourceResponse: %w", a.Type, err)
		}
	}
	return rr.ID, nil
}

// sleep pauses between livestream revisions; it ends early with ctx.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with values that always encode
	}
	return b
}
