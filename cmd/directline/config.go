package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/directline-go/directline/directline"
	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/directline/botauth"
)

// Defaults of --gc-percent and --gc-growth (see Config.GCPercent).
const (
	defaultGCPercent = 400
	defaultGCGrowth  = 64 << 20
)

// botDemo as --bot-endpoint starts the built-in demo bot.
const botDemo = "demo"

// envPrefix prefixes the environment variable of every option: --token-lifetime is
// DIRECTLINE_TOKEN_LIFETIME.
const envPrefix = "DIRECTLINE_"

// Config is the service's whole configuration. Every field is a flag and an environment
// variable; a flag given on the command line wins over the environment, which wins over the
// default.
type Config struct {
	// Addr is the listen address (host:port; port 0 picks a free port). Default 127.0.0.1:3000.
	Addr string
	// PublicURL is the base URL clients reach the service at; it builds streamUrl, serviceUrl and
	// download links. Default http://<the address listened on>.
	PublicURL string
	// Data is the bbolt data file; its directory is created, and the token signing key is kept
	// next to it in <Data>.key. Default ./data/directline.db.
	Data string
	// Secrets are the Direct Line secrets. None: one is generated and printed at start.
	Secrets []string
	// BotEndpoint is where posted activities go: an http(s) URL of a bot's messaging endpoint,
	// "demo" (the built-in demo bot on a loopback port) or "none" (store and echo only).
	// Default demo.
	BotEndpoint string
	// BotID and BotName name the bot in activities and members. Default: what the bot's first
	// activity says, else "bot" / "Bot".
	BotID, BotName string
	// BotAppID and BotAppPassword are the bot's Microsoft app credentials. Empty: no token is
	// sent to the bot and unauthenticated connector calls are accepted from ConnectorAllow.
	BotAppID, BotAppPassword string
	// BotTenantID is a single-tenant bot's Azure AD tenant: its tokens' issuers are accepted
	// too, and BotTokenURL defaults to the tenant's endpoint. Empty: a multi-tenant bot.
	BotTenantID string
	// BotTokenURL is the client-credentials token endpoint for tokens sent to the bot. Default
	// the Azure AD Bot Framework endpoint (the tenant's with BotTenantID).
	BotTokenURL string
	// BotOpenIDMetadata is the OpenID configuration whose jwks_uri has the keys of the bot's
	// tokens; BotJWKSURL, when set, names the key set directly instead.
	BotOpenIDMetadata, BotJWKSURL string
	// ConnectorAllow are the networks allowed to call the Bot Connector API without a token
	// (no app id). Default loopback.
	ConnectorAllow []string
	// BotAckTimeout is how long a client's POST waits for the bot (default 10s); BotTimeout
	// bounds the bot's request (default 120s); BotUploadAckTimeout is the wait for uploads
	// (default 30s).
	BotAckTimeout, BotTimeout, BotUploadAckTimeout time.Duration
	// TokenLifetime is a conversation token's lifetime (expires_in). Default 30m.
	TokenLifetime time.Duration
	// MaxActivityBytes limits a posted activity. Default 262144 (256 KiB).
	MaxActivityBytes int64
	// MaxUploadBytes limits each uploaded file. Default 4194304 (4 MiB).
	MaxUploadBytes int64
	// AttachmentURLLifetime is how long an upload's download link works. Default 24h.
	AttachmentURLLifetime time.Duration
	// CORSOrigins are the browser origins allowed to call the API. Default *.
	CORSOrigins []string
	// RequestTimeout bounds reading a request and writing its response. Default 60s.
	RequestTimeout time.Duration
	// ShutdownTimeout is the hard deadline of a graceful shutdown. Default 10s.
	ShutdownTimeout time.Duration
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel slog.Level
	// DemoPage is the node_modules folder the demo page loads Web Chat from, served at "/";
	// "none" serves no page. Default webchat-demo/node_modules.
	DemoPage string
	// Metrics serves Prometheus metrics at /metrics on the listener, without authentication;
	// false collects none. Default true.
	Metrics bool
	// GCPercent is the garbage collector's target, as GOGC: the heap may grow by this percentage
	// of the live heap before a collection. Above 100 it is the most: the growth is also held
	// within GCGrowth bytes, but never below the live heap's size (GOGC=100; see gc.go). 0 keeps the runtime's setting (the GOGC environment
	// variable, else 100); negative turns the collector off until MemoryLimit is reached.
	// Default 400: under a message load the live heap is small (tens of MB) and every message
	// allocates, so collecting up to four times less often saves CPU for at most GCGrowth bytes.
	GCPercent int64
	// GCGrowth caps, in bytes, the heap's growth between collections that a GCPercent above 100
	// allows, so a large live heap (many idle streams) is collected as with GOGC=100; 0 applies
	// GCPercent as it is. Default 64 MiB.
	GCGrowth int64
	// MemoryLimit is a soft limit on the Go runtime's memory in bytes (as GOMEMLIMIT): near it
	// the collector runs more often whatever GCPercent says. 0 keeps the runtime's setting (the
	// GOMEMLIMIT environment variable, else none). Set it below the memory the service may use.
	MemoryLimit int64
	// Pprof serves the runtime profiles of net/http/pprof at /debug/pprof/ on the listener,
	// without authentication; they expose internals (command line, heap, goroutine stacks), so
	// enable it on a loopback listener only. Default false.
	Pprof bool
}

// loader registers options on a FlagSet with defaults taken from the environment when set.
type loader struct {
	fs     *flag.FlagSet
	getenv func(string) string
	errs   []error
}

func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// env returns the option's environment value, or "" when unset.
func (l *loader) env(name string) string { return strings.TrimSpace(l.getenv(envName(name))) }

func (l *loader) usage(name, help string) string { return help + " [$" + envName(name) + "]" }

func (l *loader) fail(name string, err error) {
	l.errs = append(l.errs, fmt.Errorf("$%s: %w", envName(name), err))
}

func (l *loader) string(p *string, name, def, help string) {
	if v := l.env(name); v != "" {
		def = v
	}
	l.fs.StringVar(p, name, def, l.usage(name, help))
}

func (l *loader) duration(p *time.Duration, name string, def time.Duration, help string) {
	if v := l.env(name); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			l.fail(name, err)
		}
		def = d
	}
	l.fs.DurationVar(p, name, def, l.usage(name, help))
}

func (l *loader) int64(p *int64, name string, def int64, help string) {
	if v := l.env(name); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			l.fail(name, err)
		}
		def = n
	}
	l.fs.Int64Var(p, name, def, l.usage(name, help))
}

func (l *loader) level(p *slog.Level, name string, def slog.Level, help string) {
	if v := l.env(name); v != "" {
		if err := def.UnmarshalText([]byte(v)); err != nil {
			l.fail(name, err)
		}
	}
	*p = def
	l.fs.TextVar(p, name, def, l.usage(name, help))
}

func (l *loader) bool(p *bool, name string, def bool, help string) {
	if v := l.env(name); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			l.fail(name, err)
		}
		def = b
	}
	l.fs.BoolVar(p, name, def, l.usage(name, help))
}

// hidden is a string option whose value never shows in --help (passwords).
func (l *loader) hidden(p *string, name, help string) {
	*p = l.env(name)
	l.fs.Var(&hiddenValue{p: p}, name, l.usage(name, help))
}

type hiddenValue struct{ p *string }

func (v *hiddenValue) String() string { return "" }

func (v *hiddenValue) Set(s string) error {
	*v.p = s
	return nil
}

// list is a repeatable flag whose environment form is comma-separated. Values given on the
// command line replace the environment's. A hidden list never shows its value in --help (secrets).
func (l *loader) list(p *[]string, name string, def []string, hidden bool, help string) {
	if v := l.env(name); v != "" {
		def = splitList(v)
	}
	*p = def
	l.fs.Var(&listValue{p: p, hidden: hidden}, name, l.usage(name, help))
}

type listValue struct {
	p      *[]string
	hidden bool
	set    bool
}

func (v *listValue) String() string {
	if v.p == nil || v.hidden {
		return ""
	}
	return strings.Join(*v.p, ",")
}

func (v *listValue) Set(s string) error {
	if !v.set {
		*v.p, v.set = nil, true
	}
	*v.p = append(*v.p, splitList(s)...)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// loadConfig reads the configuration from args (without the program name) and the environment.
// It returns flag.ErrHelp for -h/--help after writing the usage to out.
func loadConfig(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("directline", flag.ContinueOnError)
	fs.SetOutput(out)
	l := &loader{fs: fs, getenv: getenv}
	l.string(&c.Addr, "addr", "127.0.0.1:3000", "listen address host:port (port 0 picks a free port)")
	l.string(&c.PublicURL, "public-url", "", "public base URL of the service, e.g. https://chat.example.com (default http://<listen address>)")
	l.string(&c.Data, "data", "./data/directline.db", "bbolt data file; the token signing key is kept in <data>.key")
	l.list(&c.Secrets, "secret", nil, true, "Direct Line secret, repeatable (environment: comma-separated); none = generate one and print it")
	l.string(&c.BotEndpoint, "bot-endpoint", "demo", `bot messaging endpoint URL (e.g. http://127.0.0.1:3978/api/messages), "demo" for the built-in demo bot, or "none" to store and echo activities without a bot`)
	l.string(&c.BotID, "bot-id", "", `the bot's id in activities and members (default: from the bot's first activity, else "bot")`)
	l.string(&c.BotName, "bot-name", "", `the bot's display name (default: from the bot's first activity, else "Bot")`)
	l.string(&c.BotAppID, "bot-app-id", "", "the bot's Microsoft app id; empty = no auth between service and bot (needs no internet)")
	l.hidden(&c.BotAppPassword, "bot-app-password", "the bot's Microsoft app password (with --bot-app-id)")
	l.string(&c.BotTenantID, "bot-tenant-id", "", "a single-tenant bot's Azure AD tenant id, a GUID (with --bot-app-id): its tokens are accepted and it gets tokens from the tenant")
	l.string(&c.BotTokenURL, "bot-token-url", botauth.DefaultTokenURL, "client-credentials token endpoint for the tokens sent to the bot (with --bot-app-id; internet unless local)")
	l.string(&c.BotOpenIDMetadata, "bot-openid-metadata", botauth.BotFrameworkOpenIDMetadataURL, "OpenID configuration naming the keys of the bot's tokens (with --bot-app-id; internet unless local)")
	l.string(&c.BotJWKSURL, "bot-jwks-url", "", "JWKS with the keys of the bot's tokens; replaces --bot-openid-metadata when set")
	l.list(&c.ConnectorAllow, "connector-allow", strings.Split(botauth.DefaultAllow, ","), false, "networks (CIDRs or addresses) allowed to call the Bot Connector API without a token when no app id is set")
	l.duration(&c.BotAckTimeout, "bot-ack-timeout", bot.DefaultAckTimeout, "how long a client's POST waits for the bot before answering 200 while the bot keeps working")
	l.duration(&c.BotTimeout, "bot-timeout", bot.DefaultTimeout, "how long the service keeps a request to the bot open")
	l.duration(&c.BotUploadAckTimeout, "bot-upload-ack-timeout", directline.DefaultUploadAckTimeout, "how long an upload waits for the bot")
	l.duration(&c.TokenLifetime, "token-lifetime", directline.DefaultTokenLifetime, "conversation token lifetime")
	l.int64(&c.MaxActivityBytes, "max-activity-bytes", directline.DefaultMaxActivityBytes, "largest accepted activity, in bytes")
	l.int64(&c.MaxUploadBytes, "max-upload-bytes", directline.DefaultMaxUploadBytes, "largest accepted uploaded file, in bytes")
	l.duration(&c.AttachmentURLLifetime, "attachment-url-lifetime", directline.DefaultAttachmentURLLifetime, "how long an upload's download link works")
	l.list(&c.CORSOrigins, "cors-origins", []string{"*"}, false, "allowed browser origins, comma-separated or repeated")
	l.duration(&c.RequestTimeout, "request-timeout", directline.DefaultRequestTimeout, "deadline for reading a request and writing its response (not the WebSocket stream)")
	l.duration(&c.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "hard deadline of a graceful shutdown")
	l.level(&c.LogLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	l.string(&c.DemoPage, "demo-page", "webchat-demo/node_modules", `node_modules folder of the demo page served at "/" (stock Web Chat from npm), or "none" for no page`)
	l.bool(&c.Metrics, "metrics", true, "serve Prometheus metrics at /metrics on the listener (no authentication); --metrics=false collects none")
	l.int64(&c.GCPercent, "gc-percent", defaultGCPercent, "garbage collector target percentage, as GOGC (0 = keep GOGC or 100; negative = off until --memory-limit)")
	l.int64(&c.GCGrowth, "gc-growth", defaultGCGrowth, "most bytes the heap may grow between collections under a --gc-percent above 100 (never less than the live heap's size); 0 = no cap")
	l.int64(&c.MemoryLimit, "memory-limit", 0, "soft limit of the Go runtime's memory in bytes, as GOMEMLIMIT (0 = keep GOMEMLIMIT or none)")
	l.bool(&c.Pprof, "pprof", false, "serve Go runtime profiles (net/http/pprof) at /debug/pprof/ on the listener (no authentication; exposes internals, use on a loopback listener only)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: directline [flags]\n\nA Direct Line 3.0 service for Bot Framework Web Chat. Every flag can also be set with the environment variable shown; a flag wins.\n\n")
		fs.PrintDefaults()
	}
	if err := errors.Join(l.errs...); err != nil {
		return c, err
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if c.BotTenantID != "" && c.BotTokenURL == botauth.DefaultTokenURL {
		c.BotTokenURL = botauth.TenantTokenURL(c.BotTenantID)
	}
	err := c.validate()
	return c, err
}

// validate checks values the flag types cannot.
func (c *Config) validate() error {
	var errs []error
	switch c.BotEndpoint {
	case botDemo, directline.BotEndpointNone:
	default:
		u, err := url.Parse(c.BotEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf(`--bot-endpoint %q: want an http(s) URL, "demo" or "none"`, c.BotEndpoint))
		}
	}
	if (c.BotAppID == "") != (c.BotAppPassword == "") {
		errs = append(errs, errors.New("--bot-app-id and --bot-app-password go together"))
	}
	if c.BotTenantID != "" {
		if c.BotAppID == "" {
			errs = append(errs, errors.New("--bot-tenant-id needs --bot-app-id"))
		}
		// Azure AD writes the tenant's GUID, never its domain, in the tokens' issuer.
		if _, err := uuid.Parse(c.BotTenantID); err != nil || len(c.BotTenantID) != 36 {
			errs = append(errs, fmt.Errorf("--bot-tenant-id %q: want the tenant's id, a GUID such as 72f988bf-86f1-41af-91ab-2d7cd011db47 (Azure AD puts it, not the domain, in its tokens)", c.BotTenantID))
		}
	}
	if c.BotAppID != "" && c.BotEndpoint == botDemo {
		errs = append(errs, errors.New("the demo bot has no app id: use --bot-app-id with a bot endpoint URL"))
	}
	if _, err := botauth.ParseAllowList(c.ConnectorAllow...); err != nil {
		errs = append(errs, err)
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--public-url %q: want an absolute http or https URL", c.PublicURL))
		}
	}
	if c.Data == "" {
		errs = append(errs, errors.New("--data must not be empty"))
	}
	for name, d := range map[string]time.Duration{"token-lifetime": c.TokenLifetime, "attachment-url-lifetime": c.AttachmentURLLifetime,
		"request-timeout": c.RequestTimeout, "shutdown-timeout": c.ShutdownTimeout, "bot-ack-timeout": c.BotAckTimeout,
		"bot-timeout": c.BotTimeout, "bot-upload-ack-timeout": c.BotUploadAckTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be positive", name))
		}
	}
	if c.GCGrowth < 0 {
		errs = append(errs, errors.New("--gc-growth must not be negative"))
	}
	if c.MemoryLimit < 0 {
		errs = append(errs, errors.New("--memory-limit must not be negative"))
	}
	if c.GCPercent < 0 && c.MemoryLimit == 0 {
		errs = append(errs, errors.New("--gc-percent below 0 turns the collector off and needs --memory-limit"))
	}
	if c.MaxActivityBytes <= 0 || c.MaxUploadBytes <= 0 {
		errs = append(errs, errors.New("--max-activity-bytes and --max-upload-bytes must be positive"))
	}
	return errors.Join(errs...)
}
