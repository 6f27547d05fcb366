package directline

import (
	"log/slog"
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

// TestRequestLogStatus: the request log gives each request the status the client got, as the
// metrics do: 101 for an upgraded stream, not the 200 echo's response is left at.
func TestRequestLogStatus(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	conv := e.startConversation("u1")
	ws := e.dial(conv.StreamURL)
	ws.Close()
	want := "path=" + BasePath + "/conversations/" + conv.ConversationID + "/stream status=101 "
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("request log lacks %q:\n%s", want, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "path="+BasePath+"/conversations status=201 ") {
		t.Errorf("request log lacks the conversation's start:\n%s", logs.String())
	}
}
