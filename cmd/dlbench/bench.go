package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/directline/client"
)

// config is the parsed command line.
type config struct {
	Base          string
	Secret        string
	TokenEndpoint string
	Conversations int
	Messages      int
	Concurrency   int
	Transport     string
	PollInterval  time.Duration
	Think         time.Duration
	Interval      time.Duration
	Warmup        int
	Bot           string
	Timeout       time.Duration
	ProbeWait     time.Duration
	GapWait       time.Duration
	JSON          bool
	CPUProfile    string
	LatencyLog    string

	Idle       int
	Hold       time.Duration
	IdlePost   bool
	ServerPID  int
	MetricsURL string
}

// bench is one load run.
type bench struct {
	cfg  config
	http *http.Client
	// shared is http's transport: the users' own transports send through it what they do not
	// send themselves.
	shared http.RoundTripper
	// userConns gives each user a connection of its own (userTransport); idle mode shares the
	// pool instead, so that the server's memory per stream does not include an idle HTTP
	// connection per stream.
	userConns bool
	bot       bool
	// botUnknown: --bot auto's probe met errors, so bot=false is a guess.
	botUnknown bool
	post       *latency
	echo       *latency
	reply      *latency
	errs       *counter
	verify     *verifier

	received atomic.Int64
	measured atomic.Int64
	sent     atomic.Int64
	mu       sync.Mutex
	first    time.Time // start of the first measured POST
	last     time.Time // end of the last measured message
	// timeline holds every measured message's times with --latency-log (nil without).
	timeline []timed
}

// timed is one measured message in the --latency-log: when its POST started and how long its
// POST, echo and reply took (reply zero without one).
type timed struct {
	start             time.Time
	post, echo, reply time.Duration
}

func newBench(cfg config) *bench {
	shared := bot.PooledTransport(cfg.Concurrency + 16)
	return &bench{
		cfg:       cfg,
		http:      &http.Client{Timeout: exchangeTimeout, Transport: shared},
		shared:    shared,
		userConns: true,
		post:      newLatency(),
		echo:      newLatency(),
		reply:     newLatency(),
		errs:      newCounter(),
		verify:    newVerifier(),
	}
}

// counter counts by key.
type counter struct {
	mu sync.Mutex
	m  map[string]int64
}

func newCounter() *counter { return &counter{m: map[string]int64{}} }

func (c *counter) add(key string) {
	c.mu.Lock()
	c.m[key]++
	c.mu.Unlock()
}

func (c *counter) snapshot() (map[string]int64, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.m))
	var total int64
	for k, v := range c.m {
		out[k] = v
		total += v
	}
	return out, total
}

// errorKey groups an error by request and status/code, without ids or addresses.
func errorKey(op string, err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		key := fmt.Sprintf("%s %d", e.Op, e.Status)
		if e.Code != "" {
			key += " " + e.Code
		}
		return key
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return op + ": timeout"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return op + ": " + msg
}

// newClient returns a client for one simulated user, with a token from the token endpoint when
// one is configured.
func (b *bench) newClient(ctx context.Context, user string) (*client.Client, error) {
	o := client.Options{
		BaseURL:        b.cfg.Base,
		Secret:         b.cfg.Secret,
		UserID:         user,
		HTTPClient:     b.http,
		GapWait:        b.cfg.GapWait,
		PollInterval:   b.cfg.PollInterval,
		ReconnectDelay: time.Second,
	}
	if b.userConns {
		// No client timeout: it would cost a context and a timer per request; the transport
		// bounds each exchange itself.
		o.HTTPClient = &http.Client{Transport: newUserTransport(b.cfg.Base, b.shared)}
	}
	if b.cfg.TokenEndpoint != "" {
		tok, err := b.fetchToken(ctx, user)
		if err != nil {
			return nil, err
		}
		o.Secret, o.Token = "", tok
	}
	return client.New(o)
}

// fetchToken POSTs {user:{id}} to the token endpoint and reads {token} from its answer.
func (b *bench) fetchToken(ctx context.Context, user string) (string, error) {
	body := fmt.Sprintf(`{"user":{"id":%q}}`, user)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.cfg.TokenEndpoint, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("token endpoint: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("token endpoint: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", &client.Error{Op: "token endpoint", Status: resp.StatusCode}
	}
	var t struct {
		Token string `json:"token"`
	}
	if json.Unmarshal(data, &t) != nil || t.Token == "" {
		return "", errors.New("token endpoint: the answer has no token")
	}
	return t.Token, nil
}

func (b *bench) transport() client.Transport {
	if b.cfg.Transport == "poll" {
		return client.Polling
	}
	return client.WebSocket
}

// message is one posted message and what came back for it.
type message struct {
	clientID string
	id       string
	start    time.Time
	echoAt   time.Time
	replyAt  time.Time
	echoes   int
	replies  int
}

// conversation is one simulated user's conversation: it posts, and while it waits for an echo or
// a reply it takes the subscription's deliveries itself, matches them to messages and checks
// them. Handling deliveries on the sender's goroutine, rather than on one of their own, spares a
// goroutine switch per delivery and per message; the subscription's buffer holds what arrives
// while a POST is under way.
type conversation struct {
	b    *bench
	user string
	conv *client.Conversation
	sub  *client.Subscription
	// probe waits for replies without expecting them.
	probe bool
	// ended is set once the subscription's channel is closed.
	ended bool

	// body is the posted activity's JSON up to its number: the rest is the number, the
	// clientActivityID and the closing brackets.
	body  []byte
	timer *time.Timer

	byClient map[string]*message
	byID     map[string]*message
	// early holds replies that came before the POST's answer gave their message's id.
	early   map[string][]client.Delivery
	msgs    []*message
	lastSeq uint64
	hasLast bool
}

// open starts a user's conversation and subscription.
func (b *bench) open(ctx context.Context, n int, measure bool) (*conversation, bool) {
	user := fmt.Sprintf("dlbench-%d-%s", n, uuid.NewString()[:8])
	c, err := b.newClient(ctx, user)
	if err != nil {
		b.errs.add(errorKey("token endpoint", err))
		return nil, false
	}
	conv, err := c.StartConversation(ctx)
	if err != nil {
		b.errs.add(errorKey("POST conversations", err))
		return nil, false
	}
	// Sized for every message up front: growing them showed in profiles.
	cv := &conversation{b: b, user: user, conv: conv, probe: !measure, byClient: make(map[string]*message, b.cfg.Messages), byID: make(map[string]*message, b.cfg.Messages), early: map[string][]client.Delivery{}}
	cv.msgs = make([]*message, 0, b.cfg.Messages)
	cv.body = messagePrefix(user)
	cv.sub, err = conv.Subscribe(ctx, client.SubscribeOptions{Transport: b.transport(), OnEvent: cv.event, Sparse: true})
	if err != nil {
		b.errs.add(errorKey("open stream", err))
		return nil, false
	}
	return cv, true
}

// finish closes the subscription, takes what it still delivered and, for measured
// conversations, checks what never came.
func (cv *conversation) finish() {
	cv.sub.Close()
	for d := range cv.sub.C {
		cv.deliver(d)
	}
	if err := cv.sub.Err(); err != nil {
		cv.b.errs.add(errorKey("stream", err))
	}
	if !cv.probe {
		cv.check()
	}
}

// runConversation is one simulated user from start to the last message. A probe (measure false)
// waits for a reply even when no bot is expected, without counting a missing one as an error.
func (b *bench) runConversation(ctx context.Context, n int, measure bool, messages int) bool {
	cv, ok := b.open(ctx, n, measure)
	if !ok {
		return false
	}
	gotReply := false
	var next time.Time // with --interval: when the next message is due
	for i := range messages {
		var wait time.Duration
		switch {
		case i == 0:
		case b.cfg.Think > 0:
			wait = b.cfg.Think
		case b.cfg.Interval > 0:
			wait = time.Until(next)
		}
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
		if b.cfg.Interval > 0 {
			next = nextDue(next, time.Now(), b.cfg.Interval)
		}
		if ctx.Err() != nil {
			break
		}
		if cv.send(ctx, i, measure && i >= b.cfg.Warmup) {
			gotReply = true
		}
	}
	cv.finish()
	return gotReply
}

// nextDue is when the message after one starting at now is due, under --interval: one interval
// after the message's own due time, so that a message late by less than an interval does not
// push the ones after it back and the offered rate holds; one more than an interval late (or the
// first, due zero) starts the schedule anew from now rather than a burst to catch up.
func nextDue(due, now time.Time, interval time.Duration) time.Time {
	if due.IsZero() || now.Sub(due) > interval {
		due = now
	}
	return due.Add(interval)
}

// messagePrefix is the start of every message user posts: {"type":"message","from":{"id":user,
// "role":"user"},"text":"dlbench <user> #; send appends the message's number, its
// clientActivityID and the end.
func messagePrefix(user string) []byte {
	q, _ := json.Marshal(user)
	b := append([]byte(`{"type":"message","from":{"id":`), q...)
	b = append(b, `,"role":"user"},"text":"dlbench `...)
	b = append(b, q[1:len(q)-1]...)
	return append(b, ` #`...)
}

// messageBody is message i's JSON with clientActivityID cid (both from messagePrefix's user and
// the number, so nothing needs escaping).
func (cv *conversation) messageBody(i int, cid string) []byte {
	b := make([]byte, 0, len(cv.body)+len(cid)+48)
	b = append(b, cv.body...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `","channelData":{"clientActivityID":"`...)
	b = append(b, cid...)
	return append(b, `"}}`...)
}

// send posts message i and waits for its echo and, with a bot, its reply. It reports whether a
// reply arrived.
func (cv *conversation) send(ctx context.Context, i int, measure bool) bool {
	b := cv.b
	// Unique in the conversation (the service deduplicates by clientActivityID there) and
	// beyond: the user id holds a random part.
	m := &message{clientID: cv.user + "." + strconv.Itoa(i)}
	cv.byClient[m.clientID] = m
	cv.msgs = append(cv.msgs, m)
	body := cv.messageBody(i, m.clientID)
	m.start = time.Now()
	b.sent.Add(1)
	id, err := cv.conv.PostJSON(ctx, body)
	postDone := time.Now()
	if err != nil {
		b.errs.add(errorKey("POST activities", err))
		return false
	}
	m.id = id
	cv.byID[id] = m
	// The reply may have come before the POST's answer named the message.
	for _, d := range cv.early[id] {
		cv.gotReply(m, d)
	}
	delete(cv.early, id)
	if measure {
		b.post.add(postDone.Sub(m.start))
	}
	if cv.timer == nil {
		cv.timer = time.NewTimer(b.cfg.Timeout)
	} else {
		cv.timer.Reset(b.cfg.Timeout)
	}
	defer cv.timer.Stop()
	switch cv.wait(ctx, cv.timer.C, &m.echoes) {
	case waitExpired:
		b.errs.add("echo timeout")
		return false
	case waitCanceled:
		return false
	}
	end := m.echoAt
	replied := false
	if b.bot || cv.probe {
		expire := cv.timer.C
		if cv.probe {
			expire = time.After(min(b.cfg.Timeout, b.cfg.ProbeWait))
		}
		switch cv.wait(ctx, expire, &m.replies) {
		case waitDone:
			replied = true
			end = m.replyAt
		case waitExpired:
			if !cv.probe {
				b.errs.add("reply timeout")
			}
		}
	}
	if measure {
		b.echo.add(m.echoAt.Sub(m.start))
		if replied && b.bot {
			b.reply.add(m.replyAt.Sub(m.start))
		}
		b.measured.Add(1)
		b.mu.Lock()
		if b.timeline != nil {
			t := timed{start: m.start, post: postDone.Sub(m.start), echo: m.echoAt.Sub(m.start)}
			if replied {
				t.reply = m.replyAt.Sub(m.start)
			}
			b.timeline = append(b.timeline, t)
		}
		if b.first.IsZero() || m.start.Before(b.first) {
			b.first = m.start
		}
		if end.After(b.last) {
			b.last = end
		}
		b.mu.Unlock()
	}
	return replied
}

// waitResult is how a wait ended.
type waitResult int

const (
	waitDone waitResult = iota
	// waitExpired: the time ran out, or the subscription ended, before it came.
	waitExpired
	waitCanceled
)

// wait takes deliveries until *count (a message's echoes or replies) is above zero, expire
// fires, the subscription ends or ctx is done.
func (cv *conversation) wait(ctx context.Context, expire <-chan time.Time, count *int) waitResult {
	for *count == 0 {
		if cv.ended {
			return waitExpired
		}
		select {
		case d, ok := <-cv.sub.C:
			if !ok {
				cv.ended = true
				continue
			}
			cv.deliver(d)
		case <-expire:
			return waitExpired
		case <-ctx.Done():
			return waitCanceled
		}
	}
	return waitDone
}

// deliver matches one delivery to the message it echoes or answers, and checks its sort keys and
// position.
func (cv *conversation) deliver(d client.Delivery) {
	cv.b.received.Add(1)
	a := d.Activity
	if d.Revision {
		return
	}
	cv.b.verify.sortKeys(cv.conv.ID, a)
	if d.HasSeq {
		if cv.hasLast && d.Seq <= cv.lastSeq {
			cv.b.verify.problem(catOrder, "%s: position %d delivered after %d", cv.conv.ID, d.Seq, cv.lastSeq)
		}
		cv.lastSeq, cv.hasLast = d.Seq, true
	}
	if a.Type != activity.TypeMessage {
		return
	}
	if m := cv.echoOf(a); m != nil {
		m.echoes++
		if m.echoes == 1 {
			m.echoAt = d.Received
		} else {
			cv.b.verify.problem(catDuplicate, "%s: echo of %s delivered %d times", cv.conv.ID, a.ID, m.echoes)
		}
		return
	}
	if a.ReplyToID == "" {
		return
	}
	if m := cv.byID[a.ReplyToID]; m != nil {
		cv.gotReply(m, d)
	} else {
		cv.early[a.ReplyToID] = append(cv.early[a.ReplyToID], d)
	}
}

// gotReply records a bot reply to m.
func (cv *conversation) gotReply(m *message, d client.Delivery) {
	m.replies++
	if m.replies == 1 {
		m.replyAt = d.Received
		return
	}
	cv.b.verify.problem(catDuplicate, "%s: reply %s to %s is reply number %d", cv.conv.ID, d.Activity.ID, m.id, m.replies)
}

// echoOf returns the message a is the echo of: same clientActivityID, or the id POST answered.
func (cv *conversation) echoOf(a *activity.Activity) *message {
	if a.From != nil && a.From.Role != "" && a.From.Role != activity.RoleUser {
		return nil
	}
	// As a.ClientActivityID, without encoding/json for a plain string.
	if id, ok := jsonscan.StringValue(a.ChannelData[activity.KeyClientActivityID]); ok && id != "" {
		if m := cv.byClient[id]; m != nil {
			return m
		}
	}
	if a.ReplyToID == "" {
		if m := cv.byID[a.ID]; m != nil {
			return m
		}
	}
	return nil
}

// event turns the client's sequence events into verification problems.
func (cv *conversation) event(e client.Event) {
	v := cv.b.verify
	switch e.Kind {
	case client.EventDuplicate:
		v.problem(catDuplicate, "%s: %s (position %d) arrived again", cv.conv.ID, e.ID, e.Seq)
	case client.EventOutOfOrder:
		v.problem(catOrder, "%s: %s (position %d) arrived after a higher position", cv.conv.ID, e.ID, e.Seq)
	case client.EventGapFilled:
		v.problem(catGap, "%s: the stream skipped %s (position %d); GET activities returned it", cv.conv.ID, e.ID, e.Seq)
	case client.EventLost:
		v.problem(catLost, "%s: positions %d..%d never arrived and GET's watermark does not pass them", cv.conv.ID, e.From, e.To)
	case client.EventGapSkipped:
		v.skipped.Add(int64(e.To - e.From + 1))
	case client.EventReconnect:
		v.reconnects.Add(1)
	case client.EventError:
		cv.b.errs.add(errorKey("stream", e.Err))
	}
}

// check reports messages whose echo or expected reply never came.
func (cv *conversation) check() {
	for _, m := range cv.msgs {
		if m.id == "" {
			continue
		}
		if m.echoes == 0 {
			cv.b.verify.problem(catMissing, "%s: no echo of %s", cv.conv.ID, m.id)
		}
		if cv.b.bot && m.replies == 0 {
			cv.b.verify.problem(catMissing, "%s: no bot reply to %s", cv.conv.ID, m.id)
		}
	}
}

// detectBot runs one probe conversation (not counted) and reports whether a bot answered, and
// whether the probe met errors, which leave that unknown.
func (b *bench) detectBot(ctx context.Context) (bot, unknown bool) {
	b.bot = false
	_, before := b.errs.snapshot()
	bot = b.runConversation(ctx, 0, false, 1)
	_, after := b.errs.snapshot()
	return bot, after > before
}

// runLoad runs every conversation, at most Concurrency at a time, and returns the wall time.
func (b *bench) runLoad(ctx context.Context) time.Duration {
	sem := make(chan struct{}, b.cfg.Concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for n := 1; n <= b.cfg.Conversations; n++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			b.runConversation(ctx, n, true, b.cfg.Messages)
		})
	}
	wg.Wait()
	return time.Since(start)
}

// writeLatencyLog writes the measured messages as text lines, in order of their POST's start:
// "start_ms post_ms echo_ms reply_ms", start counted from the first measured POST, all in
// milliseconds with microsecond precision, reply 0 without one. It shows a latency tail's timing
// (bursts, periodic stalls) that the percentiles hide.
func (b *bench) writeLatencyLog(w io.Writer) error {
	slices.SortFunc(b.timeline, func(x, y timed) int { return x.start.Compare(y.start) })
	bw := bufio.NewWriter(w)
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64) }
	fmt.Fprintln(bw, "# start_ms post_ms echo_ms reply_ms")
	for _, t := range b.timeline {
		fmt.Fprintln(bw, ms(t.start.Sub(b.first)), ms(t.post), ms(t.echo), ms(t.reply))
	}
	return bw.Flush()
}
