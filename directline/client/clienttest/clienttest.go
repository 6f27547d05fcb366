// Package clienttest runs this repository's Direct Line service in-process for tests of Direct
// Line clients: a real bbolt store in a temporary directory, the stream hub, an optional bot that
// answers every message, and a WebSocket relay in front of the stream that can drop, duplicate
// or reorder an activity, or cut every open stream.
package clienttest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline"
	"github.com/directline-go/directline/directline/stream"
	"github.com/directline-go/directline/store"
	"github.com/directline-go/directline/store/bolt"
)

// Secret is the Direct Line secret the service accepts.
const Secret = "clienttest-secret.cwA.xyz"

// Options configure a Server.
type Options struct {
	// Bot makes the service answer every message activity with a bot message
	// "You said: <text>" whose replyToId is the message's id.
	Bot bool
	// Typing makes the bot send a typing activity before each reply (it takes a position that
	// GET activities never returns).
	Typing bool
	// Fault, when set, rewrites the frames the stream relay passes on.
	Fault Fault
}

// Fault rewrites one stream frame (an ActivitySet) into the frames the client gets instead
// (none, the same, several). It is called for every frame of every stream, one call at a time;
// stream numbers the connection the frame belongs to.
type Fault func(stream uint64, frame json.RawMessage) []json.RawMessage

// Server is the running service.
type Server struct {
	// URL is the base URL clients take: http://127.0.0.1:<port>/v3/directline.
	URL   string
	Store *bolt.Store

	front, back *httptest.Server
	fault       Fault
	faultMu     sync.Mutex
	streams     atomic.Uint64
	mu          sync.Mutex
	conns       map[*websocket.Conn]struct{}
}

// Start runs a service until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "directline.db")
	var hub *stream.Hub
	st, err := bolt.Open(path, bolt.Options{NoSync: true, OnCommit: func(c string, e []store.Entry) { hub.OnCommit(c, e) }})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub = stream.NewHub(st, stream.Options{Logger: logger})
	key, err := directline.LoadOrCreateKey(path + ".key")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Store: st, fault: o.Fault, conns: map[*websocket.Conn]struct{}{}}
	s.front = httptest.NewUnstartedServer(http.HandlerFunc(s.serveFront))
	opts := directline.Options{
		Store:      st,
		Hub:        hub,
		PublicURL:  "http://" + s.front.Listener.Addr().String(),
		Secrets:    []string{Secret},
		SigningKey: key,
		Logger:     logger,
	}
	if o.Bot {
		opts.Bot = &bot{store: st, typing: o.Typing}
	}
	srv, err := directline.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.back = httptest.NewServer(srv)
	s.front.Start()
	s.URL = s.front.URL + directline.BasePath
	t.Cleanup(func() {
		s.DropStreams()
		s.front.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hub.Shutdown(ctx)
		s.back.Close()
		_ = st.Close()
	})
	return s
}

// DropStreams cuts every open stream's connection to the client without a close frame, as a
// network failure would.
func (s *Server) DropStreams() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.NetConn().Close()
	}
}

// serveFront relays streams and hands every other request to the service.
func (s *Server) serveFront(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/stream") && websocket.IsWebSocketUpgrade(r) {
		s.relay(w, r)
		return
	}
	s.back.Config.Handler.ServeHTTP(w, r)
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) relay(w http.ResponseWriter, r *http.Request) {
	back, resp, err := websocket.DefaultDialer.Dial("ws://"+s.back.Listener.Addr().String()+r.URL.RequestURI(), nil)
	if err != nil {
		status := http.StatusBadGateway
		if resp != nil {
			status = resp.StatusCode
		}
		http.Error(w, "stream refused", status)
		return
	}
	defer back.Close()
	front, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.conns[front] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, front)
		s.mu.Unlock()
		front.Close()
	}()
	stream := s.streams.Add(1)
	go func() {
		for {
			if _, _, err := front.ReadMessage(); err != nil {
				back.Close()
				return
			}
		}
	}()
	for {
		_, data, err := back.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				_ = front.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(ce.Code, ce.Text), time.Now().Add(time.Second))
			}
			return
		}
		frames := []json.RawMessage{data}
		if len(data) > 0 && s.fault != nil {
			s.faultMu.Lock()
			frames = s.fault(stream, data)
			s.faultMu.Unlock()
		}
		for _, f := range frames {
			if err := front.WriteMessage(websocket.TextMessage, f); err != nil {
				return
			}
		}
	}
}

// activitySet is the frame shape the faults take apart.
type activitySet struct {
	Activities []json.RawMessage `json:"activities"`
	Watermark  string            `json:"watermark"`
}

func split(frame json.RawMessage) (activitySet, bool) {
	var set activitySet
	return set, json.Unmarshal(frame, &set) == nil
}

func join(set activitySet) json.RawMessage {
	b, _ := json.Marshal(set)
	return b
}

// Matching adapts a test on the decoded activity to the faults' matchers.
func Matching(f func(*activity.Activity) bool) func(json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		a, err := activity.Decode(raw)
		return err == nil && f(a)
	}
}

// Text matches activities whose text is t.
func Text(t string) func(json.RawMessage) bool {
	return Matching(func(a *activity.Activity) bool { return a.Text == t })
}

// Drop removes the first activity that matches from its frame, once. A frame left empty is not
// sent at all, watermark included, as a lost frame would be: the client can tell the activity is
// missing only from what follows it, so use it where something is sure to follow (as Swap).
func Drop(match func(json.RawMessage) bool) Fault {
	done := false
	return func(_ uint64, frame json.RawMessage) []json.RawMessage {
		set, ok := split(frame)
		if done || !ok {
			return []json.RawMessage{frame}
		}
		for i, a := range set.Activities {
			if match(a) {
				done = true
				set.Activities = append(set.Activities[:i:i], set.Activities[i+1:]...)
				if len(set.Activities) == 0 {
					return nil
				}
				return []json.RawMessage{join(set)}
			}
		}
		return []json.RawMessage{frame}
	}
}

// Duplicate repeats the first matching activity right after itself in its frame, once, so the
// copy arrives before anything that follows it: a frame sent twice could be read after a client
// that had all it waited for had stopped reading.
func Duplicate(match func(json.RawMessage) bool) Fault {
	done := false
	return func(_ uint64, frame json.RawMessage) []json.RawMessage {
		set, ok := split(frame)
		if done || !ok {
			return []json.RawMessage{frame}
		}
		for i, a := range set.Activities {
			if match(a) {
				done = true
				set.Activities = append(set.Activities[:i+1:i+1], set.Activities[i:]...)
				return []json.RawMessage{join(set)}
			}
		}
		return []json.RawMessage{frame}
	}
}

// Swap delivers the first matching activity after the activity that follows it, once: inside
// its frame when another activity follows there, else by holding the frame back until the next
// frame of the same stream. Use it where something is sure to follow (a bot reply after the
// echo).
func Swap(match func(json.RawMessage) bool) Fault {
	var held json.RawMessage
	var heldOn uint64
	done := false
	return func(stream uint64, frame json.RawMessage) []json.RawMessage {
		if held != nil && stream == heldOn {
			out := []json.RawMessage{frame, held}
			held = nil
			return out
		}
		set, ok := split(frame)
		if done || !ok {
			return []json.RawMessage{frame}
		}
		for i, a := range set.Activities {
			if !match(a) {
				continue
			}
			done = true
			if i+1 < len(set.Activities) {
				set.Activities[i], set.Activities[i+1] = set.Activities[i+1], set.Activities[i]
				return []json.RawMessage{join(set)}
			}
			held, heldOn = frame, stream
			return nil
		}
		return []json.RawMessage{frame}
	}
}

// bot answers each message by appending its reply to the store, as a connector would.
type bot struct {
	store  *bolt.Store
	typing bool
}

func (b *bot) Deliver(ctx context.Context, conv store.Conversation, a *activity.Activity, _ time.Duration) error {
	if a.Type != activity.TypeMessage {
		return nil
	}
	from := &activity.ChannelAccount{ID: "bot", Name: "Bot", Role: activity.RoleBot}
	base := activity.Activity{ChannelID: "directline", From: from, Conversation: &activity.ConversationAccount{ID: conv.ID}, Recipient: a.From, ReplyToID: a.ID}
	if b.typing {
		typing := base
		typing.Type = activity.TypeTyping
		if _, err := b.store.Append(ctx, conv.ID, &typing); err != nil {
			return err
		}
	}
	reply := base
	reply.Type = activity.TypeMessage
	reply.Text = "You said: " + a.Text
	_, err := b.store.Append(ctx, conv.ID, &reply)
	return err
}
