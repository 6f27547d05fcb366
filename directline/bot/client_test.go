package bot

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/directline-go/directline/activity"
)

// event is one Observer call.
type event struct {
	code    string // "" for Pending
	pending bool
}

// recorder is an Observer that forwards every call to a channel.
type recorder struct{ events chan event }

func newRecorder() *recorder                               { return &recorder{events: make(chan event, 16)} }
func (r *recorder) Delivered(code string, _ time.Duration) { r.events <- event{code: code} }
func (r *recorder) Pending()                               { r.events <- event{pending: true} }

func (r *recorder) next(t *testing.T) event {
	t.Helper()
	select {
	case e := <-r.events:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no Observer call")
		return event{}
	}
}

// botServer is an httptest bot recording what it received.
type botServer struct {
	*httptest.Server
	requests atomic.Int32
	mu       sync.Mutex
	last     *http.Request
	lastBody []byte
}

func newBot(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *botServer {
	t.Helper()
	b := &botServer{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.last, b.lastBody = r, body
		b.mu.Unlock()
		b.requests.Add(1)
		h(w, r)
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *botServer) received() (*http.Request, []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last, b.lastBody
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newTestClient(t *testing.T, o Options) *Client {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quietLogger()
	}
	c := NewClient(o)
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func inbound() *activity.Activity {
	a, err := activity.Decode([]byte(`{"type":"message","id":"conv|0000001","timestamp":"2026-01-01T00:00:00.000Z",
		"channelId":"directline","serviceUrl":"http://127.0.0.1:3000/","from":{"id":"u1","role":"user"},
		"recipient":{"id":"bot","role":"bot"},"conversation":{"id":"conv"},"text":"hi",
		"channelData":{"clientActivityID":"c1","webchat:sequence-id":1},"localTimestamp":"2026-01-01T01:00:00+01:00"}`))
	if err != nil {
		panic(err)
	}
	return a
}

func TestDeliverAnswers(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		body      string
		wantAck   bool
		wantBody  string
		wantErrSt int // RejectedError status
	}{
		{"ok empty", 200, "", true, "", 0},
		{"accepted", 202, "", true, "", 0},
		{"invoke response", 200, `{"status":200,"body":{"ok":true}}`, true, `{"status":200,"body":{"ok":true}}`, 0},
		{"server error", 500, "boom", false, "", 500},
		{"not found", 404, "", false, "", 404},
		{"unauthorized", 401, "", false, "", 401},
		{"redirect is not followed", 302, "", false, "", 302},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBot(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.status == 302 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			obs := newRecorder()
			c := newTestClient(t, Options{Observer: obs})
			res, err := c.Deliver(context.Background(), b.URL+"/api/messages", inbound())
			if tc.wantAck {
				if err != nil || !res.Acked || res.Pending || res.Status != tc.status || string(res.Body) != tc.wantBody {
					t.Fatalf("got %+v, %v", res, err)
				}
			} else {
				var rej *RejectedError
				if !errors.As(err, &rej) || rej.Status != tc.wantErrSt || rej.Body != tc.body || res.Acked || res.Pending {
					t.Fatalf("got %+v, %v; want RejectedError %d", res, err, tc.wantErrSt)
				}
			}
			if e := obs.next(t); e.pending || e.code != strconv.Itoa(tc.status) {
				t.Fatalf("observer got %+v", e)
			}
			if n := b.requests.Load(); n != 1 {
				t.Fatalf("bot got %d requests, want 1", n)
			}
		})
	}
}

func TestDeliverSendsTheCompleteActivity(t *testing.T) {
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) {})
	c := newTestClient(t, Options{})
	a := inbound()
	if _, err := c.Deliver(context.Background(), b.URL+"/api/messages", a); err != nil {
		t.Fatal(err)
	}
	r, body := b.received()
	if r.Method != http.MethodPost || r.URL.Path != "/api/messages" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%s %s %q", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	want, _ := activity.Encode(a)
	if string(body) != string(want) {
		t.Fatalf("bot got\n%s\nwant\n%s", body, want)
	}
}

func TestDeliverLongAnswerIsTruncated(t *testing.T) {
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 100)) })
	c := newTestClient(t, Options{MaxResponseBytes: 99})
	res, err := c.Deliver(context.Background(), b.URL, inbound())
	if err != nil || !res.Acked || !res.BodyTruncated || res.Body != nil {
		t.Fatalf("got %+v, %v", res, err)
	}
}

func TestResultActivitiesExpectReplies(t *testing.T) {
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"activities":[{"type":"message","text":"one"},{"type":"message","text":"two","x":1}]}`)
	})
	c := newTestClient(t, Options{})
	res, err := c.Deliver(context.Background(), b.URL, inbound())
	if err != nil {
		t.Fatal(err)
	}
	acts, err := res.Activities()
	if err != nil || len(acts) != 2 || acts[0].Text != "one" || acts[1].Text != "two" || string(acts[1].Extra["x"]) != "1" {
		t.Fatalf("%v, %v", acts, err)
	}
	if acts, err := (Result{Acked: true}).Activities(); acts != nil || err != nil {
		t.Fatalf("empty body: %v, %v", acts, err)
	}
	if _, err := (Result{Body: []byte("[1]")}).Activities(); err == nil {
		t.Fatal("array body accepted")
	}
}

func TestDeliverClosedPortIsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	obs := newRecorder()
	// An ack timeout far longer than the test: the refusal must come from the dial, not the timer.
	c := newTestClient(t, Options{Observer: obs, AckTimeout: time.Hour})
	res, err := c.Deliver(context.Background(), "http://"+addr+"/api/messages", inbound())
	if !errors.Is(err, ErrUnreachable) || !errors.Is(err, syscall.ECONNREFUSED) || res.Pending {
		t.Fatalf("got %+v, %v", res, err)
	}
	if e := obs.next(t); e.code != "unreachable" {
		t.Fatalf("observer got %+v", e)
	}
}

func TestDeliverDialFailuresAreUnreachable(t *testing.T) {
	cases := []struct {
		name string
		err  error
	}{
		{"dns", &net.DNSError{Err: "no such host", Name: "bot.invalid", IsNotFound: true}},
		{"no route", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.EHOSTUNREACH}},
		{"network down", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ENETUNREACH}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return nil, tc.err }}
			c := newTestClient(t, Options{HTTPClient: &http.Client{Transport: tr}, AckTimeout: time.Hour})
			_, err := c.Deliver(context.Background(), "http://bot.invalid/api/messages", inbound())
			if !errors.Is(err, ErrUnreachable) {
				t.Fatalf("err = %v, want ErrUnreachable", err)
			}
		})
	}
}

func TestDeliverConnectionDroppedIsNoResponse(t *testing.T) {
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	obs := newRecorder()
	c := newTestClient(t, Options{Observer: obs, AckTimeout: time.Hour})
	_, err := c.Deliver(context.Background(), b.URL, inbound())
	if !errors.Is(err, ErrNoResponse) {
		t.Fatalf("err = %v, want ErrNoResponse", err)
	}
	if e := obs.next(t); e.code != "no_response" {
		t.Fatalf("observer got %+v", e)
	}
	if n := b.requests.Load(); n != 1 {
		t.Fatalf("bot got %d requests: a dropped delivery must not be retried", n)
	}
}

// R07: a slow bot must not turn into an error; it gets the activity once and its late answer is
// still observed.
func TestDeliverSlowBotIsPendingAndCompletesInBackground(t *testing.T) {
	release := make(chan struct{})
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	obs := newRecorder()
	c := newTestClient(t, Options{Observer: obs, AckTimeout: 200 * time.Millisecond})
	res, err := c.Deliver(context.Background(), b.URL, inbound())
	if err != nil || !res.Pending || res.Acked {
		t.Fatalf("got %+v, %v; want Pending", res, err)
	}
	if e := obs.next(t); !e.pending {
		t.Fatalf("observer got %+v, want Pending", e)
	}
	close(release)
	if e := obs.next(t); e.code != "200" {
		t.Fatalf("observer got %+v, want background 200", e)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := b.requests.Load(); n != 1 {
		t.Fatalf("bot got %d requests, want exactly 1", n)
	}
}

func TestDeliverTimeoutInBackground(t *testing.T) {
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	obs := newRecorder()
	c := newTestClient(t, Options{Observer: obs, AckTimeout: 50 * time.Millisecond, Timeout: 300 * time.Millisecond})
	res, err := c.Deliver(context.Background(), b.URL, inbound())
	if err != nil || !res.Pending {
		t.Fatalf("got %+v, %v; want Pending", res, err)
	}
	if e := obs.next(t); !e.pending {
		t.Fatalf("observer got %+v", e)
	}
	if e := obs.next(t); e.code != "timeout" {
		t.Fatalf("observer got %+v, want timeout", e)
	}
}

func TestDeliverTimeoutBeforeAck(t *testing.T) {
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	c := newTestClient(t, Options{AckTimeout: time.Hour, Timeout: 100 * time.Millisecond})
	if _, err := c.Deliver(context.Background(), b.URL, inbound()); !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

func TestDeliverCallerContextEndsWaitNotDelivery(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{})
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
	})
	obs := newRecorder()
	c := newTestClient(t, Options{Observer: obs, AckTimeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	res, err := c.Deliver(ctx, b.URL, inbound())
	if !errors.Is(err, context.Canceled) || !res.Pending {
		t.Fatalf("got %+v, %v", res, err)
	}
	obs.next(t) // Pending
	close(release)
	if e := obs.next(t); e.code != "200" {
		t.Fatalf("observer got %+v: the delivery was canceled with the caller", e)
	}
}

type staticToken struct {
	tok string
	err error
}

func (s staticToken) Token(context.Context) (string, error) { return s.tok, s.err }

func TestDeliverAuthorizationHeader(t *testing.T) {
	cases := []struct {
		name  string
		creds *staticToken
		want  string
	}{
		{"no credentials, no header", nil, ""},
		{"credentials", &staticToken{tok: "aad-token"}, "Bearer aad-token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBot(t, func(w http.ResponseWriter, r *http.Request) {})
			o := Options{}
			if tc.creds != nil {
				o.Credentials = *tc.creds
			}
			c := newTestClient(t, o)
			if _, err := c.Deliver(context.Background(), b.URL, inbound()); err != nil {
				t.Fatal(err)
			}
			r, _ := b.received()
			got, present := r.Header.Get("Authorization"), len(r.Header.Values("Authorization")) > 0
			if got != tc.want || present != (tc.want != "") {
				t.Fatalf("Authorization %q (present %v), want %q", got, present, tc.want)
			}
		})
	}
}

func TestDeliverCredentialsFailureSendsNothing(t *testing.T) {
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) {})
	c := newTestClient(t, Options{Credentials: staticToken{err: errors.New("AADSTS7000215")}})
	if _, err := c.Deliver(context.Background(), b.URL, inbound()); !errors.Is(err, ErrCredentials) {
		t.Fatalf("err = %v, want ErrCredentials", err)
	}
	if n := b.requests.Load(); n != 0 {
		t.Fatalf("bot got %d requests", n)
	}
}

// hangingToken never answers: its caller waits until its context ends.
type hangingToken struct{}

func (hangingToken) Token(ctx context.Context) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// A token endpoint that does not answer makes the delivery fail at the ack timeout, with nothing
// sent and the outcome reported, not Pending: the bot has nothing, so the activity may be sent
// again, and a client hanging up meanwhile changes nothing.
func TestDeliverTokenWaitEndsAtAckTimeout(t *testing.T) {
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) {})
	obs := newRecorder()
	c := newTestClient(t, Options{Credentials: hangingToken{}, Observer: obs, AckTimeout: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := c.Deliver(ctx, b.URL, inbound())
	if !errors.Is(err, ErrCredentials) || res.Pending {
		t.Fatalf("got %+v, %v; want ErrCredentials and not Pending", res, err)
	}
	if e := obs.next(t); e.pending || e.code != "credentials" {
		t.Fatalf("observer got %+v, want the outcome credentials", e)
	}
	if n := b.requests.Load(); n != 0 {
		t.Fatalf("bot got %d requests", n)
	}
}

func TestDeliverBadEndpoint(t *testing.T) {
	c := newTestClient(t, Options{})
	for _, ep := range []string{"", "api/messages", "ftp://host/x", "http://", "::"} {
		if _, err := c.Deliver(context.Background(), ep, inbound()); !errors.Is(err, ErrBadEndpoint) {
			t.Errorf("%q: err = %v", ep, err)
		}
	}
}

func TestCloseWaitsForBackgroundDeliveries(t *testing.T) {
	release := make(chan struct{})
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	obs := newRecorder()
	c := newTestClient(t, Options{Observer: obs, AckTimeout: 10 * time.Millisecond})
	if res, err := c.Deliver(context.Background(), b.URL, inbound()); err != nil || !res.Pending {
		t.Fatalf("got %+v, %v", res, err)
	}
	obs.next(t) // Pending
	closed := make(chan error, 1)
	go func() { closed <- c.Close(context.Background()) }()
	for {
		c.mu.Lock()
		marked := c.closed
		c.mu.Unlock()
		if marked {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v while a delivery was running", err)
	default:
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	// Close returned only after the delivery had its outcome.
	select {
	case e := <-obs.events:
		if e.code != "200" {
			t.Fatalf("observer got %+v", e)
		}
	default:
		t.Fatal("Close returned before the background delivery finished")
	}
}

func TestCloseDeadlineCancelsDeliveries(t *testing.T) {
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	obs := newRecorder()
	c := newTestClient(t, Options{Observer: obs, AckTimeout: 10 * time.Millisecond})
	if res, err := c.Deliver(context.Background(), b.URL, inbound()); err != nil || !res.Pending {
		t.Fatalf("got %+v, %v", res, err)
	}
	obs.next(t) // Pending
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v", err)
	}
	if e := obs.next(t); e.code != "canceled" {
		t.Fatalf("observer got %+v, want canceled", e)
	}
	if _, err := c.Deliver(context.Background(), b.URL, inbound()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Deliver after Close: %v", err)
	}
}

func BenchmarkDeliverFastBot(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	c := NewClient(Options{Logger: quietLogger()})
	defer c.Close(context.Background())
	a := inbound()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Deliver(context.Background(), srv.URL, a); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDeliverWithinOwnAckTimeout: DeliverWithin waits for the bot up to its own ack timeout, not
// the client's, and 0 means the client's.
func TestDeliverWithinOwnAckTimeout(t *testing.T) {
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond) // four times the client's ack timeout
		w.WriteHeader(http.StatusOK)
	})
	c := newTestClient(t, Options{AckTimeout: 50 * time.Millisecond})
	res, err := c.DeliverWithin(context.Background(), b.URL, inbound(), 10*time.Second)
	if err != nil || !res.Acked || res.Status != http.StatusOK {
		t.Fatalf("DeliverWithin 10s: %+v, %v; want Acked 200", res, err)
	}
	res, err = c.DeliverWithin(context.Background(), b.URL, inbound(), 0)
	if err != nil || !res.Pending {
		t.Fatalf("DeliverWithin 0: %+v, %v; want Pending after the client's ack timeout", res, err)
	}
}

// A connection idle for longer than IdleReuse is not reused: Node closes a kept-alive socket
// after 5 s even with a request already in it, so a delivery on an older one could be reset.
func TestPooledTransportRedialsAfterIdleReuse(t *testing.T) {
	var (
		mu      sync.Mutex
		remotes []string
	)
	b := newBot(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes = append(remotes, r.RemoteAddr)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})
	c := newTestClient(t, Options{AckTimeout: time.Hour})
	for _, wait := range []time.Duration{0, IdleReuse / 4, IdleReuse + 500*time.Millisecond} {
		time.Sleep(wait)
		if _, err := c.Deliver(context.Background(), b.URL, inbound()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if remotes[0] != remotes[1] {
		t.Errorf("a connection idle for %v was not reused: %v", IdleReuse/4, remotes)
	}
	if remotes[1] == remotes[2] {
		t.Errorf("a connection idle for longer than %v was reused: %v", IdleReuse, remotes)
	}
}

// rawBot answers deliveries on raw TCP connections so a test can end the second request on
// the first connection as a server would: second(conn, br) runs in place of its answer.
// Every other request is answered 200. It counts the requests it read in full.
type rawBot struct {
	ln   net.Listener
	read atomic.Int32
}

func newRawBot(t *testing.T, second func(c *net.TCPConn, br *bufio.Reader, b *rawBot)) *rawBot {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &rawBot{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c *net.TCPConn, first bool) {
				defer c.Close()
				br := bufio.NewReader(c)
				for i := 0; ; i++ {
					if first && i == 1 {
						second(c, br, b)
						return
					}
					if !b.readRequest(br) {
						return
					}
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"); err != nil {
						return
					}
				}
			}(c.(*net.TCPConn), n == 0)
		}
	}()
	return b
}

func (b *rawBot) readRequest(br *bufio.Reader) bool {
	req, err := http.ReadRequest(br)
	if err != nil {
		return false
	}
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return false
	}
	b.read.Add(1)
	return true
}

// reset closes c so that the peer gets a reset rather than an end of stream.
func reset(c *net.TCPConn) {
	c.SetLinger(0)
	c.Close()
}

// A delivery on a kept-alive connection that the bot's server resets with the request unread
// (Node's keepAliveTimeout firing under a busy event loop) is sent again on a new connection;
// one the server read, or began to answer, is not (R07: the bot may have acted on it).
func TestDeliverResendsOnlyUnreadRequests(t *testing.T) {
	for _, tc := range []struct {
		name     string
		second   func(c *net.TCPConn, br *bufio.Reader, b *rawBot)
		wantErr  error
		wantRead int32
	}{
		{
			name: "reset with the request unread is resent",
			second: func(c *net.TCPConn, br *bufio.Reader, b *rawBot) {
				time.Sleep(200 * time.Millisecond) // the request arrives, unread
				reset(c)
			},
			wantRead: 2,
		},
		{
			name: "closed after reading is not resent",
			second: func(c *net.TCPConn, br *bufio.Reader, b *rawBot) {
				b.readRequest(br)
				c.Close()
			},
			wantErr:  ErrNoResponse,
			wantRead: 2,
		},
		{
			name: "reset after the answer began is not resent",
			second: func(c *net.TCPConn, br *bufio.Reader, b *rawBot) {
				time.Sleep(200 * time.Millisecond)
				io.WriteString(c, "HTTP/1.1 200")
				time.Sleep(50 * time.Millisecond)
				reset(c)
			},
			wantErr:  ErrNoResponse,
			wantRead: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newRawBot(t, tc.second)
			c := newTestClient(t, Options{AckTimeout: time.Hour})
			endpoint := "http://" + b.ln.Addr().String() + "/api/messages"
			if _, err := c.Deliver(context.Background(), endpoint, inbound()); err != nil {
				t.Fatalf("first delivery: %v", err)
			}
			_, err := c.Deliver(context.Background(), endpoint, inbound())
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("second delivery: err = %v, want %v", err, tc.wantErr)
			}
			if got := b.read.Load(); got != tc.wantRead {
				t.Fatalf("the bot read %d requests, want %d", got, tc.wantRead)
			}
		})
	}
}
