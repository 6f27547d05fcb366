// Package metrics collects the service's Prometheus metrics and serves them in the Prometheus
// text format. One Metrics value is the observer of every part of the service: the store's group
// commit writer (store/bolt.Observer), the WebSocket stream hub (stream.Observer), bot delivery
// (bot.Observer) and the HTTP layer (directline.Metrics). Each Metrics has its own registry, so
// several services (or tests) in one process never share counters.
//
// Series, all prefixed directline_ and carrying their unit in the name:
//
//	store_appends_total                        counter    log entries committed (activities and revisions)
//	store_commit_batch_size                    histogram  writes grouped in one bbolt transaction
//	store_fsync_seconds                        histogram  bbolt commit of one transaction: page writes and fsync
//	stream_connections                         gauge      open WebSocket streams
//	stream_frames_sent_total                   counter    ActivitySet frames written to WebSocket streams
//	stream_bytes_sent_total                    counter    bytes of those frames
//	stream_slow_consumers_total                counter    subscribers whose queue overflowed
//	stream_disconnects_total{reason}           counter    closed WebSocket streams by reason (slow_consumer, client, ...)
//	bot_delivery_seconds{code}                 histogram  bot deliveries by outcome code ("200", "500", "timeout", ...)
//	bot_delivery_failures_total{code}          counter    deliveries whose outcome was not a 2xx answer
//	bot_delivery_pending_total                 counter    deliveries still running at their ack timeout
//	http_requests_total{route,method,status}   counter    requests by route pattern, method and final status
//	http_request_seconds{route,method}         histogram  time to serve a request (WebSocket streams excluded)
//
// plus the Go runtime (go_*) and process (process_*) collectors.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "directline"

// disconnectReasons are the reasons a stream.Observer reports (stream.Observer.Disconnected);
// their series exist from the start at 0, so a rate over them never starts from a missing series.
var disconnectReasons = []string{"client", "dead_peer", "network", "slow_consumer", "token_expired", "shutdown", "history_error"}

// Route labels for requests that matched no route pattern, and methods outside the standard
// set; both keep label values bounded whatever clients send.
const (
	RouteUnmatched = "unmatched"
	MethodOther    = "other"
)

// Metrics holds the collectors on a registry of its own. Build it with New; all methods are safe
// for concurrent use and never block.
type Metrics struct {
	reg *prometheus.Registry

	appends     prometheus.Counter
	batchSize   prometheus.Histogram
	fsync       prometheus.Histogram
	connections prometheus.Gauge
	frames      prometheus.Counter
	bytesSent   prometheus.Counter
	slow        prometheus.Counter
	disconnects *prometheus.CounterVec
	delivery    *prometheus.HistogramVec
	failures    *prometheus.CounterVec
	pending     prometheus.Counter
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	// series caches the request series by requestKey (*requestSeries): routes, methods and
	// statuses are few, and a cached series skips the label hashing and lookup of every request.
	series sync.Map
}

// requestKey names one request series: route, method and status as ObserveRequest labels them.
type requestKey struct {
	route, method string
	status        int
}

// requestSeries is one request counter and its route's latency histogram (nil for 101).
type requestSeries struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// New builds the collectors and registers them, with the Go runtime and process collectors, on
// a new registry.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		appends: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "store", Name: "appends_total",
			Help: "Log entries committed to the store (activities and revisions).",
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "store", Name: "commit_batch_size",
			Help: "Writes grouped in one store transaction (group commit).",
			// 1 to 1024, the writer's largest batch.
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
		fsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "store", Name: "fsync_seconds",
			Help: "Time bbolt took to commit one transaction: page writes and fsync.",
			// 50 µs (no fsync, page cache) to about 1.6 s (a stalled disk).
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16),
		}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "stream", Name: "connections",
			Help: "Open WebSocket streams.",
		}),
		frames: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "stream", Name: "frames_sent_total",
			Help: "ActivitySet frames written to WebSocket streams.",
		}),
		bytesSent: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "stream", Name: "bytes_sent_total",
			Help: "Bytes of the ActivitySet frames written to WebSocket streams.",
		}),
		slow: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "stream", Name: "slow_consumers_total",
			Help: "Stream subscribers disconnected because their queue overflowed.",
		}),
		disconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "stream", Name: "disconnects_total",
			Help: "Closed WebSocket streams by reason.",
		}, []string{"reason"}),
		delivery: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "bot", Name: "delivery_seconds",
			Help: "Bot deliveries by outcome code (the bot's HTTP status, or unreachable, no_response, timeout, credentials, canceled), from start to outcome.",
			// Up to the default bot request timeout (120 s).
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120},
		}, []string{"code"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "bot", Name: "delivery_failures_total",
			Help: "Bot deliveries whose outcome was not a 2xx answer, by outcome code.",
		}, []string{"code"}),
		pending: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "bot", Name: "delivery_pending_total",
			Help: "Bot deliveries still running when their ack timeout passed.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests by route pattern, method and final status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "http", Name: "request_seconds",
			Help:    "Time to serve an HTTP request, by route pattern and method (WebSocket streams excluded).",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
	}
	for _, r := range disconnectReasons {
		m.disconnects.WithLabelValues(r)
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.appends, m.batchSize, m.fsync,
		m.connections, m.frames, m.bytesSent, m.slow, m.disconnects,
		m.delivery, m.failures, m.pending,
		m.requests, m.latency,
	)
	return m
}

// Registry is the registry the collectors are on, for adding more or gathering in tests.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format (text, or protobuf when the
// scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Committed implements store/bolt.Observer: one durable transaction of requests writes that
// appended entries log entries, whose commit took d.
func (m *Metrics) Committed(requests, entries int, d time.Duration) {
	m.appends.Add(float64(entries))
	m.batchSize.Observe(float64(requests))
	m.fsync.Observe(d.Seconds())
}

// Connected implements stream.Observer: +1 when a WebSocket stream opens, -1 when it closes.
func (m *Metrics) Connected(delta int) { m.connections.Add(float64(delta)) }

// FrameSent implements stream.Observer: one frame of n bytes written.
func (m *Metrics) FrameSent(n int) {
	m.frames.Inc()
	m.bytesSent.Add(float64(n))
}

// SlowConsumer implements stream.Observer.
func (m *Metrics) SlowConsumer() { m.slow.Inc() }

// Disconnected implements stream.Observer: one WebSocket stream closed for reason.
func (m *Metrics) Disconnected(reason string) { m.disconnects.WithLabelValues(reason).Inc() }

// Delivered implements bot.Observer: a delivery ended with code after d. Codes other than a 2xx
// status also count as failures.
func (m *Metrics) Delivered(code string, d time.Duration) {
	m.delivery.WithLabelValues(code).Observe(d.Seconds())
	if status, err := strconv.Atoi(code); err != nil || status < 200 || status > 299 {
		m.failures.WithLabelValues(code).Inc()
	}
}

// Pending implements bot.Observer.
func (m *Metrics) Pending() { m.pending.Inc() }

// ObserveRequest implements directline.Metrics: a request to route (a route pattern such as
// /v3/directline/conversations/:id/activities; "" when none matched) answered status after d.
// Upgraded requests (101, WebSocket streams) are counted but their duration, the handshake's
// alone, is not observed.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if route == "" {
		route = RouteUnmatched
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
	default:
		method = MethodOther
	}
	k := requestKey{route, method, status}
	v, ok := m.series.Load(k)
	if !ok {
		rs := &requestSeries{count: m.requests.WithLabelValues(route, method, strconv.Itoa(status))}
		if status != http.StatusSwitchingProtocols {
			rs.latency = m.latency.WithLabelValues(route, method)
		}
		v, _ = m.series.LoadOrStore(k, rs)
	}
	rs := v.(*requestSeries)
	rs.count.Inc()
	if rs.latency != nil {
		rs.latency.Observe(d.Seconds())
	}
}
