package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/directline-go/directline/directline/metrics/metricstest"
)

// check is one expectation on a scrape.
type check struct {
	name   string
	labels map[string]string
	ok     func(v float64) bool
	want   string
}

func atLeast(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }
func exactly(n float64) func(float64) bool { return func(v float64) bool { return v == n } }

// scrapeUntil scrapes /metrics until every check holds (counters updated after the client got
// its answer, such as a delivery's outcome, arrive a moment later) and fails with the checks that
// never held. The deadline only guards against a hang.
func scrapeUntil(t *testing.T, addr string, checks []check) metricstest.Scrape {
	t.Helper()
	var failed []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		s := metricstest.Get(t, "http://"+addr+"/metrics")
		failed = failed[:0]
		for _, c := range checks {
			v, present := s.Value(c.name, c.labels)
			if !present || !c.ok(v) {
				failed = append(failed, fmt.Sprintf("%s%v = %v (present %v), want %s", c.name, c.labels, v, present, c.want))
			}
		}
		if len(failed) == 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("scrape:\n%s", strings.Join(failed, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMetricsScrape: after a conversation (start, a stream, two posts the bot answers 200 and 500,
// a refused request), /metrics on the service's listener has the store, stream, bot and HTTP
// series with the values that conversation implies, and the process collector's memory gauge.
func TestMetricsScrape(t *testing.T) {
	bot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a struct{ Text string }
		_ = json.NewDecoder(r.Body).Decode(&a)
		if a.Text == "fail" {
			http.Error(w, "bot failure", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(bot.Close)
	addr := runService(t, "--bot-endpoint", bot.URL+"/api/messages")
	conv := startWithUser(t, addr)
	ws, _, err := websocket.DefaultDialer.Dial(conv.StreamURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	activities := "/conversations/" + conv.ConversationID + "/activities"
	apiCall(t, addr, http.MethodPost, activities, conv.Token, `{"type":"message","text":"hello"}`)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v3/directline"+activities, strings.NewReader(`{"type":"message","text":"fail"}`))
	req.Header.Set("Authorization", "Bearer "+conv.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("post the bot refuses: %d, want 502", resp.StatusCode)
	}
	resp, err = http.Get("http://" + addr + "/v3/directline" + activities)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("get activities without credential: %d, want 401", resp.StatusCode)
	}

	activitiesRoute := "/v3/directline/conversations/:id/activities"
	s := scrapeUntil(t, addr, []check{
		{"directline_store_appends_total", nil, atLeast(2), ">= 2 (two posted messages)"},
		{"directline_store_commit_batch_size", nil, atLeast(3), ">= 3 commits (start, two posts)"},
		{"directline_store_fsync_seconds", nil, atLeast(3), ">= 3 commits"},
		{"directline_stream_connections", nil, exactly(1), "1 open stream"},
		{"directline_stream_frames_sent_total", nil, atLeast(2), ">= 2 frames (one per posted message)"},
		{"directline_stream_bytes_sent_total", nil, atLeast(float64(2 * len(`{"activities":[],"watermark":"1"}`))), "the frames' bytes"},
		{"directline_stream_slow_consumers_total", nil, exactly(0), "0"},
		{"directline_stream_disconnects_total", map[string]string{"reason": "slow_consumer"}, exactly(0), "0, present from the start"},
		// The conversationUpdate of the start and "hello" are answered 200, "fail" 500.
		{"directline_bot_delivery_seconds", map[string]string{"code": "200"}, exactly(2), "2 deliveries answered 200"},
		{"directline_bot_delivery_seconds", map[string]string{"code": "500"}, exactly(1), "1 delivery answered 500"},
		{"directline_bot_delivery_failures_total", map[string]string{"code": "500"}, exactly(1), "1 failure"},
		{"directline_bot_delivery_pending_total", nil, exactly(0), "0"},
		{"directline_http_requests_total", map[string]string{"route": "/v3/directline/conversations", "method": "POST", "status": "201"}, exactly(1), "the start"},
		{"directline_http_requests_total", map[string]string{"route": activitiesRoute, "method": "POST", "status": "200"}, exactly(1), "hello"},
		{"directline_http_requests_total", map[string]string{"route": activitiesRoute, "method": "POST", "status": "502"}, exactly(1), "fail, refused by the bot"},
		{"directline_http_requests_total", map[string]string{"route": activitiesRoute, "method": "GET", "status": "401"}, exactly(1), "the unauthenticated read"},
		{"directline_http_request_seconds", map[string]string{"route": activitiesRoute, "method": "POST"}, exactly(2), "both posts"},
		{"process_resident_memory_bytes", nil, atLeast(1), "> 0"},
	})
	if _, ok := s.Value("directline_bot_delivery_failures_total", map[string]string{"code": "200"}); ok {
		t.Error("a 200 answer counted as a failure")
	}

	// A close frame is the client leaving.
	if err := ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	scrapeUntil(t, addr, []check{
		{"directline_stream_connections", nil, exactly(0), "0 once the stream closed"},
		{"directline_stream_disconnects_total", map[string]string{"reason": "client"}, exactly(1), "1"},
		{"directline_http_requests_total", map[string]string{"route": "/v3/directline/conversations/:id/stream", "method": "GET", "status": "101"}, exactly(1), "the stream"},
	})
}

// TestMetricsAndPprofFlags: /metrics is on by default and off with --metrics=false;
// /debug/pprof/ is off by default (404) and on with --pprof.
func TestMetricsAndPprofFlags(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		metrics, prof int
	}{
		{nil, http.StatusOK, http.StatusNotFound},
		{[]string{"--metrics=false", "--pprof"}, http.StatusNotFound, http.StatusOK},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			addr := runService(t, append([]string{"--bot-endpoint", "none"}, tc.args...)...)
			for path, want := range map[string]int{"/metrics": tc.metrics, "/debug/pprof/": tc.prof, "/debug/pprof/cmdline": tc.prof} {
				resp, err := http.Get("http://" + addr + path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
				}
				if path == "/debug/pprof/" && want == http.StatusOK && !strings.Contains(string(body), "goroutine") {
					t.Errorf("GET %s: not the pprof index: %.200s", path, body)
				}
			}
		})
	}
}
