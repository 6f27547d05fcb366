// Package directline serves the Direct Line 3.0 client API that Bot Framework Web Chat and
// botframework-directlinejs speak: tokens, conversations, activities, uploads and the WebSocket
// stream, under /v3/directline; and the Bot Connector API bots call back on (the serviceUrl of
// every activity they receive), under /v3/conversations and /v3/attachments. It is the only
// package that knows about HTTP routing (echo).
//
// Write path: POST activity → authenticate (auth.go) → decode and validate (activities.go) →
// store.Append (the store stamps id, timestamp and sequence id, dedupes by clientActivityID and
// hands the committed entry to the stream hub through its commit hook) → Bot.Deliver when a bot is
// configured → {id}. The client's POST waits for the bot at most the ack timeout: 2xx in time is
// 200 {id}, an error status in time is 502 BotRejectedActivity, an unreachable bot is 502
// BotUnreachable at once, and a bot still working is 200 {id} while its request goes on in the
// background (field case R07). The activity stays stored and echoed in every case.
//
// Bot side (connector.go, botdelivery.go, livestream.go): bot activities go through the same
// store append (one id space, contiguous seq, sort keys, stream fan-out). The bot learns who
// joined from conversationUpdates that are not log entries: one when the conversation starts
// (the bot, plus the user when the token or start body names one), and one with [user] right
// before the first activity of a user not known at start (field case R17); never for reconnects,
// refreshes or client-sent conversationUpdates, which are stored and echoed but not forwarded.
// UpdateActivity stores a revision that keeps the activity's id, timestamp and sequence id and is
// pushed live with a new watermark (DESIGN invariant 9). DeleteActivity removes the activity from
// history and pushes nothing: Web Chat cannot remove an activity, so live clients keep what they
// were shown and see it gone after a reload (field case R12). Livestreams are sealed by their
// final activity inside the store transaction (store.AppendIf, DESIGN invariant 10).
//
// Bot auth (DIRECTLINE.md §2.3): with no bot app id, nothing is sent to the bot and connector
// calls are accepted without a token from Options.ConnectorAllow (loopback by default); nothing
// needs the internet. With an app id and password, deliveries carry client-credentials tokens
// from a token endpoint and connector calls must carry a JWT the validator accepts; with the
// Azure AD defaults both need the internet (login.microsoftonline.com), with a local token
// endpoint and key set neither does.
package directline

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/botauth"
	"github.com/directline-go/directline/store"
)

// Defaults for Options fields left zero.
const (
	DefaultTokenLifetime         = 30 * time.Minute
	DefaultMaxActivityBytes      = 256 << 10
	DefaultMaxUploadBytes        = 4 << 20
	DefaultAttachmentURLLifetime = 24 * time.Hour
	// DefaultRequestTimeout bounds reading a request body and writing a response (the WebSocket
	// stream is exempt).
	DefaultRequestTimeout = 60 * time.Second
	// DefaultUploadAckTimeout is how long an upload waits for the bot, below Web Chat's 120 s
	// send timeout for activities with attachments and below DefaultRequestTimeout.
	DefaultUploadAckTimeout = 30 * time.Second
)

// BasePath is the prefix of every client API route (Direct Line 3.0).
const BasePath = "/v3/directline"

// StreamHub serves the WebSocket stream of a conversation; *stream.Hub implements it.
type StreamHub interface {
	// ServeWS upgrades the request and streams the conversation's ActivitySets, replaying from
	// watermark when hasWatermark, until the client leaves, the hub shuts down or expires passes.
	// It may return once the stream is set up, serving the connection from a goroutine of its own.
	ServeWS(w http.ResponseWriter, r *http.Request, conversationID string, watermark uint64, hasWatermark bool, expires time.Time)
}

// Bot receives the activities clients post, after they are stored, and the conversationUpdates
// the service generates; *BotClient implements it. A nil Bot in Options means no bot: activities
// are stored and echoed only.
type Bot interface {
	// Deliver hands activity a of conversation conv to the bot and returns when the bot
	// acknowledged it or ackTimeout (0 = the implementation's default) passed while the bot keeps
	// working, which is not an error. Errors are the bot package's (mapped by toError to
	// BotRejectedActivity, BotUnreachable, BotTimeout), catalogue entries, or anything else
	// (answered 500); the activity stays stored either way.
	Deliver(ctx context.Context, conv store.Conversation, a *activity.Activity, ackTimeout time.Duration) error
}

// jsonBot is a Bot that can send an activity the store has already encoded (store.Entry.JSON)
// instead of encoding it again; BotClient is one.
type jsonBot interface {
	DeliverJSON(ctx context.Context, conv store.Conversation, a *activity.Activity, body []byte, ackTimeout time.Duration) error
}

// Metrics records HTTP requests and serves the service's metrics; *metrics.Metrics implements it.
type Metrics interface {
	// ObserveRequest is called once per request when it ends (a WebSocket stream's once it is
	// upgraded), with echo's route pattern (e.g. /v3/directline/conversations/:id/activities,
	// never the raw path; "" when no route matched), the method, the final status (after the
	// error handler; 101 for a WebSocket upgrade) and the time to serve it.
	ObserveRequest(route, method string, status int, d time.Duration)
	// Handler serves the metrics (Prometheus exposition format) at GET MetricsPath.
	Handler() http.Handler
}

// MetricsPath is where the metrics are served when Options.Metrics is set.
const MetricsPath = "/metrics"

// Options configure a Server. Store, Hub and SigningKey are required.
type Options struct {
	Store store.Store
	Hub   StreamHub
	// Bot receives posted activities; nil = none.
	Bot Bot
	// BotID and BotName name the bot (from, recipient, members); "" = what the bot's first
	// activity in a conversation says, else DefaultBotID and DefaultBotName.
	BotID, BotName string
	// UploadAckTimeout is how long an upload waits for the bot's answer (Web Chat waits longer
	// for activities with attachments than for others). Default DefaultUploadAckTimeout.
	UploadAckTimeout time.Duration
	// ConnectorValidator, when set, checks the bearer token of every Bot Connector call (a bot
	// with an app id); a missing, forged or expired token is 401. It also means deliveries carry a
	// token for the bot, so a conversation may not choose its own bot endpoint.
	ConnectorValidator *botauth.Validator
	// ConnectorAllow lists the networks whose unauthenticated Bot Connector calls are accepted
	// when ConnectorValidator is nil (a bot without an app id sends no token); others get 403.
	// Nil means botauth.DefaultAllow (loopback).
	ConnectorAllow *botauth.AllowList
	// PublicURL is the base URL clients reach the service at (scheme, host and an optional path
	// prefix that a reverse proxy strips). It builds serviceUrl, streamUrl (http→ws, https→wss)
	// and download links, and is the tokens' iss and aud. Routes are served at BasePath.
	PublicURL string
	// Secrets are the Direct Line secrets (Bearer values that can act on every conversation).
	Secrets []string
	// SigningKey signs tokens (HS256), at least 32 bytes; see LoadOrCreateKey.
	SigningKey []byte
	// TokenLifetime is a conversation token's lifetime (expires_in). Default 30 min.
	TokenLifetime time.Duration
	// MaxActivityBytes limits the body of POST activities and of an upload's activity part.
	// Default 256 KiB (Direct Line 3.0: an activity must stay under 256K).
	MaxActivityBytes int64
	// MaxUploadBytes limits each uploaded file. Default 4 MiB.
	MaxUploadBytes int64
	// AttachmentURLLifetime is how long a download link works. Default 24 h (Direct Line keeps
	// uploads 24 h).
	AttachmentURLLifetime time.Duration
	// CORSOrigins are the allowed browser origins; default ["*"].
	CORSOrigins []string
	// RequestTimeout bounds reading a request and writing its response. Default 60 s.
	RequestTimeout time.Duration
	// Logger receives request logs and errors; default slog.Default().
	Logger *slog.Logger
	// Now is the clock for tokens; default time.Now.
	Now func() time.Time
	// Metrics, when set, records every request and is served, without authentication, at GET
	// MetricsPath; nil records and serves nothing.
	Metrics Metrics
}

// Server is the Direct Line 3.0 client API. It is an http.Handler.
type Server struct {
	store store.Store
	// current is the store without the metadata cache, for the reads that need LastSeq.
	current    store.Store
	hub        StreamHub
	bot        Bot
	botID      string
	botName    string
	uploadAck  time.Duration
	validator  *botauth.Validator
	allow      *botauth.AllowList
	public     *url.URL
	serviceURL string
	secrets    []string
	tokens     *tokens
	maxAct     int64
	maxUpload  int64
	attLife    time.Duration
	reqTimeout time.Duration
	log        *slog.Logger
	metrics    Metrics
	echo       *echo.Echo
}

// New checks o and builds the server. Errors: a missing Store, Hub or key, a key shorter than 32
// bytes, or an unusable PublicURL.
func New(o Options) (*Server, error) {
	if o.Store == nil || o.Hub == nil {
		return nil, errors.New("directline: Options.Store and Options.Hub are required")
	}
	if len(o.SigningKey) < keyBytes {
		return nil, errors.New("directline: Options.SigningKey must have at least 32 bytes")
	}
	public, err := url.Parse(strings.TrimRight(o.PublicURL, "/"))
	if err != nil || (public.Scheme != "http" && public.Scheme != "https") || public.Host == "" {
		return nil, errors.New("directline: Options.PublicURL must be an absolute http or https URL")
	}
	public.RawQuery, public.Fragment = "", ""
	s := &Server{
		store:      &convCache{Store: o.Store},
		current:    o.Store,
		hub:        o.Hub,
		bot:        o.Bot,
		botID:      o.BotID,
		botName:    o.BotName,
		uploadAck:  orDefault(o.UploadAckTimeout, DefaultUploadAckTimeout),
		validator:  o.ConnectorValidator,
		allow:      o.ConnectorAllow,
		public:     public,
		serviceURL: public.String() + "/",
		maxAct:     orDefault(o.MaxActivityBytes, DefaultMaxActivityBytes),
		maxUpload:  orDefault(o.MaxUploadBytes, DefaultMaxUploadBytes),
		attLife:    orDefault(o.AttachmentURLLifetime, DefaultAttachmentURLLifetime),
		reqTimeout: orDefault(o.RequestTimeout, DefaultRequestTimeout),
		log:        o.Logger,
		metrics:    o.Metrics,
	}
	for _, sec := range o.Secrets {
		if sec != "" {
			s.secrets = append(s.secrets, sec)
		}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.allow == nil {
		s.allow, _ = botauth.ParseAllowList() // the default list always parses
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	s.tokens = &tokens{
		key:      o.SigningKey,
		issuer:   s.serviceURL,
		lifetime: orDefault(o.TokenLifetime, DefaultTokenLifetime),
		now:      now,
	}
	origins := o.CORSOrigins
	if len(origins) == 0 {
		origins = []string{"*"}
	}
	s.echo = s.routes(origins)
	return s, nil
}

// joinSlashes routes a path with repeated slashes as the path with each run of them made one.
// DirectLineJS appends "/conversations..." to the domain it is given, so a domain written with a
// trailing slash (".../v3/directline/") asks for ".../v3/directline//conversations".
func joinSlashes(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := c.Request().URL
		if strings.Contains(u.Path, "//") {
			u.Path = oneSlash(u.Path)
			u.RawPath = oneSlash(u.RawPath)
		}
		return next(c)
	}
}

// oneSlash is p with each run of slashes made one.
func oneSlash(p string) string {
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && i > 0 && p[i-1] == '/' {
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

func (s *Server) routes(origins []string) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.JSONSerializer = jsonSerializer{}
	e.Pre(joinSlashes)
	if s.metrics != nil {
		// Outermost, so it sees the status the error handler chose and the whole latency.
		e.Use(s.observe)
	}
	e.Use(middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		// Only the path is logged: stream and download URLs carry credentials in their query.
		LogMethod: true, LogURIPath: true, LogStatus: true, LogLatency: true, LogError: true,
		HandleError: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			if v.Status >= 500 {
				level = slog.LevelError
			}
			status := v.Status
			if upgraded(c, v.Error) {
				status = http.StatusSwitchingProtocols
			}
			attrs := []slog.Attr{slog.String("method", v.Method), slog.String("path", v.URIPath),
				slog.Int("status", status), slog.Duration("latency", v.Latency), slog.String("remote", c.Request().RemoteAddr)}
			// The address a proxy says it forwarded for; the client may have written it itself.
			if fwd := c.Request().Header.Get(echo.HeaderXForwardedFor); fwd != "" {
				attrs = append(attrs, slog.String("forwarded_for", fwd))
			}
			s.log.LogAttrs(c.Request().Context(), level, "request", attrs...)
			return nil
		},
	}))
	// CORS sets its headers before the handler runs, so error responses carry them too (R20).
	e.Use(middleware.CORSWithConfig(middleware.CORSConfig{
		AllowOrigins: origins,
		AllowMethods: []string{http.MethodGet, http.MethodPost, http.MethodOptions},
		// DirectLineJS's ajax adds X-Requested-With to every request of a page on another origin.
		AllowHeaders:  []string{"authorization", "content-type", "x-ms-bot-agent", "x-requested-with", "accept"},
		ExposeHeaders: []string{"retry-after"},
		MaxAge:        600,
	}))
	// A panic becomes an error returned up the chain, so the logger records the 500 and CORS
	// headers stay on the answer.
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisableStackAll:     true,
		DisableErrorHandler: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.Error("panic while serving a request", "path", c.Request().URL.Path, "err", err, "stack", string(stack))
			return err
		},
	}))
	e.Use(s.deadlines)

	g := e.Group(BasePath)
	g.POST("/tokens/generate", s.generateToken)
	g.POST("/tokens/refresh", s.refreshToken)
	g.POST("/conversations", s.startConversation)
	g.GET("/conversations/:id", s.reconnect)
	g.GET("/conversations/:id/activities", s.getActivities)
	g.POST("/conversations/:id/activities", s.postActivity)
	g.POST("/conversations/:id/upload", s.upload)
	g.GET("/conversations/:id/attachments/:att", s.download)
	g.GET("/conversations/:id/stream", s.stream)
	g.GET("/conversations/:id/log", s.exportLog)
	s.connectorRoutes(e)
	if s.metrics != nil {
		e.GET(MetricsPath, echo.WrapHandler(s.metrics.Handler()))
	}
	return e
}

// observe reports every request to Metrics with its final status. An error still unhandled is
// handed to the error handler here, so the status recorded is the one the client gets (the error
// handler ignores the error echo hands it again once the response is committed). A WebSocket
// upgrade hijacks the connection without committing the echo response; it is recorded as 101.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil && !c.Response().Committed {
			c.Error(err)
		}
		status := c.Response().Status
		if upgraded(c, err) {
			status = http.StatusSwitchingProtocols
		}
		s.metrics.ObserveRequest(c.Path(), c.Request().Method, status, time.Since(start))
		return err
	}
}

// upgraded reports a request served by upgrading it to a WebSocket (RFC 6455 §4.1): the upgrade
// hijacks the connection and writes 101 on it, leaving echo's response uncommitted at 200.
func upgraded(c echo.Context, err error) bool {
	return !c.Response().Committed && err == nil && strings.EqualFold(c.Request().Header.Get("Upgrade"), "websocket")
}

// deadlines bounds body reads and response writes of every request except the WebSocket stream,
// whose connection manages its own deadlines after the upgrade.
func (s *Server) deadlines(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !strings.HasSuffix(c.Path(), "/stream") {
			rc := http.NewResponseController(c.Response())
			deadline := time.Now().Add(s.reqTimeout)
			// Not every ResponseWriter supports deadlines (httptest.ResponseRecorder).
			_ = rc.SetReadDeadline(deadline)
			_ = rc.SetWriteDeadline(deadline)
		}
		return next(c)
	}
}

// jsonSerializer writes JSON without HTML escaping, so URLs and text keep their characters
// ("&" in a streamUrl, "<" in a message) as the client sent or expects them. Request bodies are
// never bound through echo; each handler decodes its own.
type jsonSerializer struct{}

func (jsonSerializer) Serialize(c echo.Context, v any, indent string) error {
	enc := json.NewEncoder(c.Response())
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	return enc.Encode(v)
}

func (jsonSerializer) Deserialize(echo.Context, any) error {
	return ErrBadArgument.Msg("request bodies are decoded by their handlers")
}

// conversationParam returns the unescaped :id path parameter.
func conversationParam(c echo.Context) (string, error) {
	id, err := url.PathUnescape(c.Param("id"))
	if err != nil || id == "" || len(id) > maxIDLength {
		return "", ErrNotFound.Msg("conversation not found")
	}
	return id, nil
}

// maxIDLength bounds ids taken from paths and bodies (conversation, user, attachment).
const maxIDLength = 256

// maxClientActivityIDLength bounds a client's channelData.clientActivityID, which the store
// indexes for the resend dedupe (Web Chat's are a few dozen bytes).
const maxClientActivityIDLength = 1024
