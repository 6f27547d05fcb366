// Command directline runs the Direct Line 3.0 service: the client API and WebSocket stream for
// Bot Framework Web Chat and the Bot Connector API for the bot, on a bbolt file. See --help for
// the options.
//
// The bot: --bot-endpoint demo (the default) starts the built-in demo bot on a loopback port, a
// URL delivers to that bot's messaging endpoint, none stores and echoes only. What needs the
// internet: only a bot with --bot-app-id and --bot-app-password, whose tokens come from
// --bot-token-url and whose calls are checked with the keys of --bot-openid-metadata (or
// --bot-jwks-url), both Azure AD by default. Without an app id nothing leaves the machine but the
// deliveries to the bot, and the bot's calls are admitted by address (--connector-allow).
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/directline-go/directline/directline"
	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/directline/botauth"
	"github.com/directline-go/directline/directline/metrics"
	"github.com/directline-go/directline/directline/stream"
	"github.com/directline-go/directline/store"
	"github.com/directline-go/directline/store/bolt"
	"github.com/directline-go/directline/webchat-demo/demobot"
	"github.com/directline-go/directline/webchat-demo/page"
)

func main() {
	cfg, err := loadConfig(os.Args[1:], os.Getenv, os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "directline:", err)
		os.Exit(2)
	}
	applyGC(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "directline:", err)
		os.Exit(1)
	}
}

// applyGC sets the garbage collector's target and memory limit from cfg; zero values keep the
// runtime's (GOGC, GOMEMLIMIT). A percentage above 100 is tuned to the live heap (see gc.go). It
// is process-wide, so main calls it, not run. It returns the tuner when it started one.
func applyGC(cfg Config) *gcTuner {
	var t *gcTuner
	switch {
	case cfg.GCPercent > 100 && cfg.GCGrowth > 0:
		t = startGCTuner(uint64(cfg.GCGrowth), int(cfg.GCPercent))
	case cfg.GCPercent != 0:
		debug.SetGCPercent(int(cfg.GCPercent))
	}
	if cfg.MemoryLimit > 0 {
		debug.SetMemoryLimit(cfg.MemoryLimit)
	}
	return t
}

// HTTP server limits; the per-request body and response deadlines are set by the directline
// package (Config.RequestTimeout) because the WebSocket stream must be exempt from them.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
)

// webChatRefresh is how often DirectLineJS, and so Web Chat, refreshes its token; the interval is
// fixed.
const webChatRefresh = 15 * time.Minute

// run serves until ctx is done, then shuts down gracefully: the listener closes, in-flight
// requests finish while the stream hub closes every WebSocket with a "reconnect with your
// watermark" code, and the store is closed last, all within cfg.ShutdownTimeout. It prints the
// listening address (and a generated secret, if none is configured) to out; logs go to logOut.
func run(ctx context.Context, cfg Config, out, logOut io.Writer) error {
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: cfg.LogLevel}))

	if err := os.MkdirAll(filepath.Dir(cfg.Data), 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	secrets := cfg.Secrets
	if len(secrets) == 0 {
		secret, err := newSecret()
		if err != nil {
			return err
		}
		secrets = []string{secret}
	}

	allow, err := botauth.ParseAllowList(cfg.ConnectorAllow...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	public := cfg.PublicURL
	if public == "" {
		public = "http://" + ln.Addr().String()
	}

	var hub *stream.Hub
	storeOpts := bolt.Options{
		OnCommit: func(conv string, entries []store.Entry) { hub.OnCommit(conv, entries) },
		Logger:   logger,
	}
	hubOpts := stream.Options{Logger: logger}
	botOpts := bot.Options{AckTimeout: cfg.BotAckTimeout, Timeout: cfg.BotTimeout, Logger: logger}
	var dlMetrics directline.Metrics
	if cfg.Metrics {
		// Set field by field: a nil *metrics.Metrics in an interface would not be a nil observer.
		m := metrics.New()
		storeOpts.Observer, hubOpts.Metrics, botOpts.Observer, dlMetrics = m, m, m, m
	}
	dataInfo, dataErr := os.Stat(cfg.Data)
	st, err := bolt.Open(cfg.Data, storeOpts)
	if err != nil {
		return err
	}
	// Made only once the data file is this process's: a start that fails on the port or the
	// file leaves no key behind, and no second process makes one for the same file.
	keyPath := cfg.Data + ".key"
	_, keyErr := os.Stat(keyPath)
	switch {
	case errors.Is(keyErr, os.ErrNotExist) && dataErr == nil && dataInfo.Size() > 0:
		logger.Warn("the data file has no key file beside it: a new signing key is made, so tokens and download links issued before no longer work; restore the key file to keep them",
			"data", cfg.Data, "key", keyPath)
	case keyErr == nil && dataErr == nil && dataInfo.Size() == 0:
		logger.Warn("the data file is empty although its key file is there: it starts with no conversations; restore the data file to keep them",
			"data", cfg.Data, "key", keyPath)
	}
	key, err := directline.LoadOrCreateKey(keyPath)
	if err != nil {
		return errors.Join(err, st.Close())
	}
	hub = stream.NewHub(st, hubOpts)
	delivery, validator, stopBot, err := startBot(cfg, botOpts, public, ln.Addr().(*net.TCPAddr), logger)
	if err != nil {
		return errors.Join(err, st.Close())
	}
	srv, err := directline.New(directline.Options{
		Bot:                   delivery,
		BotID:                 cfg.BotID,
		BotName:               cfg.BotName,
		UploadAckTimeout:      cfg.BotUploadAckTimeout,
		ConnectorValidator:    validator,
		ConnectorAllow:        allow,
		Store:                 st,
		Hub:                   hub,
		PublicURL:             public,
		Secrets:               secrets,
		SigningKey:            key,
		TokenLifetime:         cfg.TokenLifetime,
		MaxActivityBytes:      cfg.MaxActivityBytes,
		MaxUploadBytes:        cfg.MaxUploadBytes,
		AttachmentURLLifetime: cfg.AttachmentURLLifetime,
		CORSOrigins:           cfg.CORSOrigins,
		RequestTimeout:        cfg.RequestTimeout,
		Logger:                logger,
		Metrics:               dlMetrics,
	})
	if err != nil {
		return errors.Join(err, stopBot(context.Background()), st.Close())
	}
	handler, err := withDemoPage(srv, cfg, secrets[0], localURL(ln.Addr().(*net.TCPAddr)), logger)
	if err != nil {
		return errors.Join(err, stopBot(context.Background()), st.Close())
	}
	httpSrv := &http.Server{
		Handler:           withPprof(handler, cfg.Pprof),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(ln) }()
	// Printed once the service is up: a run that fails to start has no secret to give.
	if len(cfg.Secrets) == 0 {
		fmt.Fprintf(out, "no secret configured; generated secret for this run: %s\n", secrets[0])
	}
	fmt.Fprintf(out, "listening on %s (public URL %s)\n", ln.Addr(), public)
	logger.Info("started", "addr", ln.Addr().String(), "public_url", public, "data", cfg.Data, "bot_endpoint", cfg.BotEndpoint)
	if cfg.TokenLifetime < webChatRefresh {
		logger.Warn("tokens expire before Web Chat refreshes them (every 15 minutes): its sessions end at expiry",
			"token_lifetime", cfg.TokenLifetime)
	}

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		return errors.Join(err, shutdown(httpSrv, hub, stopBot, st, cfg.ShutdownTimeout, logger))
	}
	logger.Info("shutting down")
	start := time.Now()
	err = shutdown(httpSrv, hub, stopBot, st, cfg.ShutdownTimeout, logger)
	if err == nil {
		logger.Info("stopped", "took", time.Since(start).Round(time.Millisecond))
	}
	return err
}

// withDemoPage routes every path outside /v3/ and /metrics to the demo page unless --demo-page is
// none. The page's token backend calls this service's own tokens/generate over the listener with
// a secret, so the browser never sees the secret.
func withDemoPage(api http.Handler, cfg Config, secret, local string, logger *slog.Logger) (http.Handler, error) {
	if cfg.DemoPage == "none" {
		return api, nil
	}
	pg, err := page.New(page.Options{
		Secret:     secret,
		TokenURL:   local + directline.BasePath + "/tokens/generate",
		ModulesDir: cfg.DemoPage,
		Logger:     logger,
	})
	if err != nil {
		return nil, err
	}
	// Dispatched by prefix, not through an http.ServeMux: a ServeMux redirects a path with "//"
	// in it, which the API answers itself (a browser follows no redirect of a preflight).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v3/") || r.URL.Path == directline.MetricsPath {
			api.ServeHTTP(w, r)
			return
		}
		pg.ServeHTTP(w, r)
	}), nil
}

// withPprof serves net/http/pprof's profiles under /debug/pprof/ in front of h when enabled
// (--pprof). They are registered here rather than through the package's side effect on
// http.DefaultServeMux, which this service does not serve.
func withPprof(h http.Handler, enabled bool) http.Handler {
	if !enabled {
		return h
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// Everything else goes to h as it came (see withDemoPage).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			mux.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// startBot builds the delivery to the bot with opts (starting the demo bot for --bot-endpoint
// demo) and, for a bot with an app id, the validator of its connector calls. stop ends the
// deliveries in flight and the demo bot. public and listen are the service's public URL and
// listening address, which the in-process demo bot uses to reach the service directly.
func startBot(cfg Config, opts bot.Options, public string, listen *net.TCPAddr, logger *slog.Logger) (*directline.BotClient, *botauth.Validator, func(context.Context) error, error) {
	var validator *botauth.Validator
	if cfg.BotAppID != "" {
		creds := &botauth.ClientCredentials{TokenURL: cfg.BotTokenURL, ClientID: cfg.BotAppID, ClientSecret: cfg.BotAppPassword}
		opts.Credentials = creds
		validator = botauth.BotFramework(cfg.BotAppID, nil)
		keys := &botauth.JWKS{URL: cfg.BotJWKSURL, MetadataURL: cfg.BotOpenIDMetadata}
		validator.Keys = keys
		if cfg.BotTenantID != "" {
			validator.Issuers = append(slices.Clone(validator.Issuers), botauth.TenantIssuers(cfg.BotTenantID)...)
		}
		// A wrong password, or an unreachable token endpoint or key set, then shows in the log at
		// start, not first as a client's 502 or a bot's 503; the token and keys are cached.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), botTokenCheckTimeout)
			defer cancel()
			if _, err := creds.Token(ctx); err != nil {
				logger.Error("cannot get a token to call the bot with; deliveries fail until one is had",
					"token_url", cfg.BotTokenURL, "app_id", cfg.BotAppID, "err", err)
			}
		}()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), botTokenCheckTimeout)
			defer cancel()
			if _, err := keys.Key(ctx, ""); errors.Is(err, botauth.ErrKeysUnavailable) {
				logger.Error("cannot load the keys of the bot's tokens; its Bot Connector calls get 503 until they load",
					"openid_metadata", cfg.BotOpenIDMetadata, "jwks_url", cfg.BotJWKSURL, "err", err)
			}
		}()
	}
	client := bot.NewClient(opts)
	delivery := &directline.BotClient{Client: client, Endpoint: cfg.BotEndpoint, Fixed: cfg.BotAppID != ""}
	stopDemo := func(context.Context) error { return nil }
	if cfg.BotEndpoint == botDemo {
		client := &http.Client{Timeout: 30 * time.Second, Transport: localTransport{public: strings.TrimRight(public, "/"), local: localURL(listen), next: bot.PooledTransport(256)}}
		u, stop, err := demobot.Start("127.0.0.1:0", demobot.Options{Logger: logger, HTTPClient: client})
		if err != nil {
			return nil, nil, nil, err
		}
		delivery.Endpoint, stopDemo = u+"/api/messages", stop
	}
	stop := func(ctx context.Context) error {
		// Deliveries first: their bot may still be calling back.
		return errors.Join(client.Close(ctx), stopDemo(ctx))
	}
	return delivery, validator, stop, nil
}

// botTokenCheckTimeout bounds the token request made at start to check the bot's credentials.
const botTokenCheckTimeout = 30 * time.Second

// localTransport sends requests for URLs under public (the demo bot's Bot Connector calls and
// attachment downloads, addressed by serviceUrl) to the local listener instead, so the in-process
// demo bot works behind a reverse proxy or TLS terminator it may not be able to reach, and its
// calls come from loopback (--connector-allow).
type localTransport struct {
	public, local string
	next          http.RoundTripper
}

func (t localTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if rest, ok := strings.CutPrefix(r.URL.String(), t.public); ok && (rest == "" || rest[0] == '/' || rest[0] == '?') {
		u, err := url.Parse(t.local + rest)
		if err != nil {
			return nil, err
		}
		// A shallow copy: the request's headers and body are only read on the way.
		local := *r
		local.URL, local.Host = u, ""
		r = &local
	}
	return t.next.RoundTrip(r)
}

// localURL is the plain-HTTP URL of the listener, on loopback when it listens on every address.
func localURL(a *net.TCPAddr) string {
	ip := a.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(a.Port))
}

// shutdown lets the bot deliveries in flight end and stops the demo bot, then stops the HTTP
// server and the hub together, then closes the store. When the deadline passes, deliveries are
// cancelled and remaining connections closed hard; the store still waits for writes in flight so
// nothing acknowledged is lost.
func shutdown(httpSrv *http.Server, hub *stream.Hub, stopBot func(context.Context) error, st store.Store, timeout time.Duration, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Deliveries in flight end first, while the listener still takes the bot's calls: a turn
	// under way posts its replies (a livestream's revisions, its final) through the Bot Connector
	// API, and the client waiting on the POST gets the bot's answer. New deliveries are refused
	// meanwhile (503).
	botErr := stopBot(ctx)
	var (
		wg             sync.WaitGroup
		httpErr, hbErr error
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if httpErr = httpSrv.Shutdown(ctx); httpErr != nil {
			logger.Warn("shutdown deadline passed; closing connections", "err", httpErr)
			httpErr = httpSrv.Close()
		}
	}()
	go func() {
		defer wg.Done()
		hbErr = hub.Shutdown(ctx)
	}()
	wg.Wait()
	return errors.Join(httpErr, hbErr, botErr, st.Close())
}

// newSecret returns a random secret in the dotted shape of Direct Line secrets.
func newSecret() (string, error) {
	b := make([]byte, 33)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	s := base64.RawURLEncoding.EncodeToString(b)
	return s[:11] + ".dl." + s[11:], nil
}
