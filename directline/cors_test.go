package directline

import (
	"net/http"
	"strings"
	"testing"
)

// TestCORSPreflightR20: browsers preflight every Direct Line call; the answer allows the headers
// DirectLineJS sends (R20 step 1), for every route Web Chat calls.
func TestCORSPreflightR20(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	for _, tt := range []struct{ method, path string }{
		{http.MethodPost, "/conversations/" + conv.ConversationID + "/upload"},
		{http.MethodPost, "/conversations/" + conv.ConversationID + "/activities"},
		{http.MethodGet, "/conversations/" + conv.ConversationID + "/activities"},
		{http.MethodGet, "/conversations/" + conv.ConversationID},
		{http.MethodPost, "/conversations"},
		{http.MethodPost, "/tokens/refresh"},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := e.do(request{method: http.MethodOptions, path: tt.path, header: map[string]string{
				"Origin":                        "https://chat.example",
				"Access-Control-Request-Method": tt.method,
				// What DirectLineJS 0.15's requests carry: its ajax adds X-Requested-With.
				"Access-Control-Request-Headers": "authorization,content-type,x-ms-bot-agent,x-requested-with",
			}})
			if r.status < 200 || r.status > 299 {
				t.Fatalf("preflight status %d", r.status)
			}
			if got := r.header.Get("Access-Control-Allow-Origin"); got != "*" {
				t.Fatalf("Allow-Origin %q", got)
			}
			allowed := strings.ToLower(r.header.Get("Access-Control-Allow-Headers"))
			for _, h := range []string{"authorization", "content-type", "x-ms-bot-agent", "x-requested-with"} {
				if !strings.Contains(allowed, h) {
					t.Fatalf("Allow-Headers %q lacks %s", allowed, h)
				}
			}
			if methods := r.header.Get("Access-Control-Allow-Methods"); !strings.Contains(methods, tt.method) {
				t.Fatalf("Allow-Methods %q lacks %s", methods, tt.method)
			}
		})
	}
}

// TestCORSOnErrors: error responses carry the CORS headers, or the browser hides the real status
// behind a CORS failure (R20 steps 3 and 4).
func TestCORSOnErrors(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	origin := map[string]string{"Origin": "https://chat.example"}
	for _, tt := range []struct {
		name   string
		req    request
		status int
	}{
		{"400", request{method: http.MethodPost, path: "/conversations/" + conv.ConversationID + "/activities", auth: conv.Token, body: `{`}, 400},
		{"401", request{method: http.MethodGet, path: "/conversations/" + conv.ConversationID + "/activities"}, 401},
		{"403", request{method: http.MethodGet, path: "/conversations/" + conv.ConversationID + "/activities", auth: "bad"}, 403},
		{"404", request{method: http.MethodGet, path: "/conversations/none/activities", auth: testSecret}, 404},
		{"404 route", request{method: http.MethodGet, path: "/nowhere"}, 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.header = origin
			r := e.do(tt.req)
			mustStatus(t, r, tt.status)
			r.errorCode(t)
			if r.header.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatalf("error without CORS headers: %v", r.header)
			}
		})
	}
}

// TestCORSOrigins: with a configured list, only those origins are allowed.
func TestCORSOrigins(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.CORSOrigins = []string{"https://good.example"} })
	for origin, want := range map[string]string{"https://good.example": "https://good.example", "https://evil.example": ""} {
		r := e.do(request{method: http.MethodOptions, path: "/conversations", header: map[string]string{
			"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization",
		}})
		if got := r.header.Get("Access-Control-Allow-Origin"); got != want {
			t.Fatalf("origin %s: Allow-Origin %q, want %q", origin, got, want)
		}
	}
}

// TestDomainWithTrailingSlash: given the domain ".../v3/directline/", DirectLineJS asks for
// ".../v3/directline//conversations" and so on; those calls and their preflights are answered as
// the calls without the extra slash, not redirected (a browser follows no redirect of a preflight).
func TestDomainWithTrailingSlash(t *testing.T) {
	e := newEnv(t)
	preflight := func(method, path string) {
		t.Helper()
		r := e.do(request{method: http.MethodOptions, path: path, header: map[string]string{
			"Origin": "https://chat.example", "Access-Control-Request-Method": method,
			"Access-Control-Request-Headers": "authorization,content-type",
		}})
		if r.status < 200 || r.status > 299 || r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("preflight of %s %s: status %d, headers %v", method, path, r.status, r.header)
		}
	}
	preflight(http.MethodPost, "//conversations")
	r := e.do(request{method: http.MethodPost, path: "//conversations", auth: testSecret})
	mustStatus(t, r, http.StatusCreated)
	var conv conversationResponse
	r.decode(t, &conv)
	activities := "//conversations/" + conv.ConversationID + "/activities"
	preflight(http.MethodPost, activities)
	r = e.do(request{method: http.MethodPost, path: activities, auth: conv.Token,
		body: `{"type":"message","from":{"id":"u1"},"text":"hi"}`})
	mustStatus(t, r, http.StatusOK)
	r = e.do(request{method: http.MethodGet, path: "//conversations//" + conv.ConversationID + "/activities", auth: conv.Token})
	mustStatus(t, r, http.StatusOK)
	var set struct {
		Activities []struct{ Text string } `json:"activities"`
	}
	r.decode(t, &set)
	if len(set.Activities) != 1 || set.Activities[0].Text != "hi" {
		t.Fatalf("activities %+v", set.Activities)
	}
}
