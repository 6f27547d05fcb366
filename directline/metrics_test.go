package directline

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/directline-go/directline/directline/metrics"
	"github.com/directline-go/directline/directline/metrics/metricstest"
)

// TestMetricsRecordRoutePatternAndFinalStatus: every request is counted under its route pattern
// (never the raw path, so conversation ids do not become label values) with the status the
// client got: errors mapped by the error handler, 101 for an upgraded stream, and "unmatched" for
// paths no route knows.
func TestMetricsRecordRoutePatternAndFinalStatus(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Metrics = metrics.New() })
	conv := e.startConversation("u1")
	e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "from": map[string]string{"id": "u1"}, "text": "hi"})
	mustStatus(t, e.do(request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/activities",
		body: map[string]any{"type": "message", "text": "no credential"}}), http.StatusUnauthorized)
	mustStatus(t, e.do(request{method: http.MethodGet, path: "/conversations/missing/activities", auth: testSecret}), http.StatusNotFound)
	mustStatus(t, e.do(request{method: http.MethodGet, path: e.ts.URL + "/nowhere/at-all"}), http.StatusNotFound)
	ws := e.dial(conv.StreamURL)
	readActivities(t, ws, 1)
	badStream := strings.Replace(conv.StreamURL, "t=", "t=x", 1)
	if _, resp, err := websocket.DefaultDialer.Dial(badStream, nil); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("dial with a bad stream token: %v, %+v; want 403", err, resp)
	}

	// A stream's request ends, and is counted, when the stream closes.
	ws.Close()
	stream := map[string]string{"route": BasePath + "/conversations/:id/stream", "method": "GET", "status": "101"}
	s := metricstest.Get(t, e.ts.URL+MetricsPath)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if _, ok := s.Value("directline_http_requests_total", stream); ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
		s = metricstest.Get(t, e.ts.URL+MetricsPath)
	}
	const conversations = BasePath + "/conversations"
	for _, c := range []struct {
		route, method, status string
		want                  float64
	}{
		{conversations, "POST", "201", 1},
		{conversations + "/:id/activities", "POST", "200", 1},
		{conversations + "/:id/activities", "POST", "401", 1},
		{conversations + "/:id/activities", "GET", "404", 1},
		{metrics.RouteUnmatched, "GET", "404", 1},
		{conversations + "/:id/stream", "GET", "101", 1},
		{conversations + "/:id/stream", "GET", "403", 1},
	} {
		labels := map[string]string{"route": c.route, "method": c.method, "status": c.status}
		if v, ok := s.Value("directline_http_requests_total", labels); !ok || v != c.want {
			t.Errorf("directline_http_requests_total%v = %v (present %v), want %v", labels, v, ok, c.want)
		}
	}
	for _, l := range s.Labels("directline_http_requests_total") {
		if strings.Contains(l["route"], conv.ConversationID) || strings.Contains(l["route"], "missing") || strings.Contains(l["route"], "nowhere") {
			t.Errorf("a raw path became a route label: %v", l)
		}
	}
	if v, ok := s.Value("directline_http_request_seconds", map[string]string{"route": conversations, "method": "POST"}); !ok || v != 1 {
		t.Errorf("request latency of the start: count %v (present %v), want 1", v, ok)
	}
	if _, ok := s.Value("directline_http_request_seconds", map[string]string{"route": conversations + "/:id/stream", "method": "GET"}); !ok {
		t.Error("the refused stream's latency is missing")
	}
}

// TestNoMetricsNoRoute: without Options.Metrics there is no /metrics.
func TestNoMetricsNoRoute(t *testing.T) {
	e := newEnv(t)
	mustStatus(t, e.do(request{method: http.MethodGet, path: e.ts.URL + MetricsPath}), http.StatusNotFound)
}
