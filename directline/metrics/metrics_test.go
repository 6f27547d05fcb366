package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/directline-go/directline/directline"
	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/directline/stream"
	"github.com/directline-go/directline/store/bolt"
)

var (
	_ stream.Observer    = (*Metrics)(nil)
	_ bot.Observer       = (*Metrics)(nil)
	_ bolt.Observer      = (*Metrics)(nil)
	_ directline.Metrics = (*Metrics)(nil)
)

// sample is one gathered series: its labels and value (a histogram's value is its count).
type sample struct {
	labels map[string]string
	value  float64
	sum    float64
}

// gather returns the series of family name.
func gather(t *testing.T, m *Metrics, name string) []sample {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		var out []sample
		for _, mt := range f.GetMetric() {
			s := sample{labels: map[string]string{}}
			for _, l := range mt.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.value = mt.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.value = mt.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.value, s.sum = float64(mt.GetHistogram().GetSampleCount()), mt.GetHistogram().GetSampleSum()
			}
			out = append(out, s)
		}
		return out
	}
	return nil
}

// value is the value of the series of name with exactly labels (nil = no labels); missing is -1.
func value(t *testing.T, m *Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	for _, s := range gather(t, m, name) {
		if len(s.labels) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && s.labels[k] == v
		}
		if match {
			return s.value
		}
	}
	return -1
}

type l = map[string]string

func TestObservers(t *testing.T) {
	tests := []struct {
		name   string
		do     func(m *Metrics)
		series string
		labels l
		want   float64
	}{
		{"commit counts entries", func(m *Metrics) { m.Committed(3, 2, time.Millisecond); m.Committed(1, 1, time.Millisecond) },
			"directline_store_appends_total", nil, 3},
		{"commit observes batch size", func(m *Metrics) { m.Committed(3, 2, time.Millisecond); m.Committed(1, 0, 0) },
			"directline_store_commit_batch_size", nil, 2},
		{"commit observes fsync time", func(m *Metrics) { m.Committed(3, 2, time.Millisecond) },
			"directline_store_fsync_seconds", nil, 1},
		{"connections go up and down", func(m *Metrics) { m.Connected(1); m.Connected(1); m.Connected(-1) },
			"directline_stream_connections", nil, 1},
		{"frames are counted", func(m *Metrics) { m.FrameSent(100); m.FrameSent(23) },
			"directline_stream_frames_sent_total", nil, 2},
		{"frame bytes are summed", func(m *Metrics) { m.FrameSent(100); m.FrameSent(23) },
			"directline_stream_bytes_sent_total", nil, 123},
		{"slow consumers", func(m *Metrics) { m.SlowConsumer() },
			"directline_stream_slow_consumers_total", nil, 1},
		{"disconnects by reason", func(m *Metrics) { m.Disconnected("slow_consumer"); m.Disconnected("client") },
			"directline_stream_disconnects_total", l{"reason": "slow_consumer"}, 1},
		{"known disconnect reasons start at zero", func(*Metrics) {},
			"directline_stream_disconnects_total", l{"reason": "token_expired"}, 0},
		{"delivery latency by code", func(m *Metrics) { m.Delivered("200", time.Second); m.Delivered("200", time.Millisecond) },
			"directline_bot_delivery_seconds", l{"code": "200"}, 2},
		{"2xx is no failure", func(m *Metrics) { m.Delivered("200", time.Second); m.Delivered("204", time.Second) },
			"directline_bot_delivery_failures_total", l{"code": "200"}, -1},
		{"error status is a failure", func(m *Metrics) { m.Delivered("500", time.Second); m.Delivered("500", time.Second) },
			"directline_bot_delivery_failures_total", l{"code": "500"}, 2},
		{"transport outcome is a failure", func(m *Metrics) { m.Delivered("unreachable", time.Millisecond) },
			"directline_bot_delivery_failures_total", l{"code": "unreachable"}, 1},
		{"pending deliveries", func(m *Metrics) { m.Pending() },
			"directline_bot_delivery_pending_total", nil, 1},
		{"requests by route, method and status", func(m *Metrics) {
			m.ObserveRequest("/v3/directline/conversations/:id", "GET", 200, time.Millisecond)
			m.ObserveRequest("/v3/directline/conversations/:id", "GET", 404, time.Millisecond)
		}, "directline_http_requests_total", l{"route": "/v3/directline/conversations/:id", "method": "GET", "status": "404"}, 1},
		{"no route is unmatched", func(m *Metrics) { m.ObserveRequest("", "GET", 404, time.Millisecond) },
			"directline_http_requests_total", l{"route": RouteUnmatched, "method": "GET", "status": "404"}, 1},
		{"unknown methods are other", func(m *Metrics) { m.ObserveRequest("", "BREW", 405, time.Millisecond) },
			"directline_http_requests_total", l{"route": RouteUnmatched, "method": MethodOther, "status": "405"}, 1},
		{"request latency", func(m *Metrics) { m.ObserveRequest("/metrics", "GET", 200, time.Millisecond) },
			"directline_http_request_seconds", l{"route": "/metrics", "method": "GET"}, 1},
		{"upgraded streams are counted without latency", func(m *Metrics) {
			m.ObserveRequest("/v3/directline/conversations/:id/stream", "GET", 101, time.Hour)
		}, "directline_http_request_seconds", l{"route": "/v3/directline/conversations/:id/stream", "method": "GET"}, -1},
		{"repeated requests add to their series", func(m *Metrics) {
			for range 3 {
				m.ObserveRequest("/v3/directline/conversations/:id/activities", "POST", 200, time.Millisecond)
			}
			m.ObserveRequest("/v3/directline/conversations/:id/activities", "POST", 502, time.Millisecond)
		}, "directline_http_requests_total", l{"route": "/v3/directline/conversations/:id/activities", "method": "POST", "status": "200"}, 3},
		{"repeated requests add to their route's latency", func(m *Metrics) {
			for _, status := range []int{200, 200, 502} {
				m.ObserveRequest("/v3/directline/conversations/:id/activities", "POST", status, time.Millisecond)
			}
		}, "directline_http_request_seconds", l{"route": "/v3/directline/conversations/:id/activities", "method": "POST"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			tt.do(m)
			if got := value(t, m, tt.series, tt.labels); got != tt.want {
				t.Errorf("%s%v = %v, want %v (-1: absent)", tt.series, tt.labels, got, tt.want)
			}
		})
	}
}

// TestDurationsInSeconds: durations are recorded in seconds, whatever unit they come in.
func TestDurationsInSeconds(t *testing.T) {
	m := New()
	m.Committed(1, 1, 1500*time.Microsecond)
	m.Delivered("200", 2*time.Second)
	for name, want := range map[string]float64{"directline_store_fsync_seconds": 0.0015, "directline_bot_delivery_seconds": 2} {
		s := gather(t, m, name)
		if len(s) != 1 || s[0].sum != want {
			t.Errorf("%s = %+v, want one series with sum %v", name, s, want)
		}
	}
}

// TestHandlerText: the handler serves the text format with this registry's series and the
// process collector's, and separate Metrics do not share counters.
func TestHandlerText(t *testing.T) {
	a, b := New(), New()
	a.FrameSent(10)
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{"directline_stream_frames_sent_total 0\n", "go_goroutines ", "process_resident_memory_bytes "} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}
