package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// liveSource says where to fetch a conversation from.
type liveSource struct {
	base         string
	credential   string // secret or token; both go in the Authorization header
	secret       bool   // the log export accepts only a secret, so a token goes straight to paging
	conversation string
	client       *http.Client
}

// maxPages bounds paging through GET activities, so a service that never stops advancing the
// watermark cannot keep the tool running forever.
const maxPages = 100000

// fetch returns the conversation's log as JSON Lines, and how it was read (for messages). With a
// secret it first asks for the service's full log export, GET
// {base}/v3/directline/conversations/{id}/log (JSON Lines); with a token, or when the service does
// not have it (404, 405 or 501), it pages Direct Line 3.0 GET .../activities?watermark= until no
// new activities arrive. The paged form only holds what the service replays (no typing
// activities).
func (s *liveSource) fetch(ctx context.Context) ([]byte, string, error) {
	conv := s.root() + "/v3/directline/conversations/" + url.PathEscape(s.conversation)
	// tried names the /log export in an error about the activities it fell back to.
	tried := ""
	if s.secret {
		body, status, err := s.get(ctx, conv+"/log")
		if err != nil {
			return nil, "", err
		}
		switch status {
		case http.StatusOK:
			return body, "its /log export", nil
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			tried = fmt.Sprintf(" (after HTTP %d from %s/log)", status, conv)
		default:
			return nil, "", s.statusError(conv+"/log", status, body)
		}
	}
	var out bytes.Buffer
	watermark := ""
	for range maxPages {
		u := conv + "/activities"
		if watermark != "" {
			u += "?watermark=" + url.QueryEscape(watermark)
		}
		body, status, err := s.get(ctx, u)
		if err != nil {
			return nil, "", err
		}
		if status != http.StatusOK {
			return nil, "", fmt.Errorf("%w%s", s.statusError(u, status, body), tried)
		}
		var set struct {
			Activities []json.RawMessage `json:"activities"`
			Watermark  string            `json:"watermark"`
		}
		if err := json.Unmarshal(body, &set); err != nil {
			return nil, "", fmt.Errorf("GET %s: response is not an ActivitySet: %v", u, err)
		}
		for _, a := range set.Activities {
			if err := json.Compact(&out, a); err != nil {
				return nil, "", fmt.Errorf("GET %s: bad activity: %v", u, err)
			}
			out.WriteByte('\n')
		}
		if len(set.Activities) == 0 || set.Watermark == "" || set.Watermark == watermark {
			return out.Bytes(), "GET activities", nil
		}
		watermark = set.Watermark
	}
	return nil, "", fmt.Errorf("GET %s/activities: still paging after %d pages", conv, maxPages)
}

// root is the service's root URL: the base, which may also be Web Chat's domain
// (<root>/v3/directline).
func (s *liveSource) root() string {
	return strings.TrimSuffix(strings.TrimRight(s.base, "/"), "/v3/directline")
}

// rootPath is the path of root, "" when the service is at the root of its host: a path prefix
// that the service is not behind gives a 404 that looks like an unknown conversation.
func (s *liveSource) rootPath() string {
	u, err := url.Parse(s.root())
	if err != nil {
		return ""
	}
	return u.Path
}

func (s *liveSource) get(ctx context.Context, u string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+s.credential)
	req.Header.Set("Accept", "application/json, application/x-ndjson")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %v", u, err)
	}
	if int64(len(body)) > maxResponseBytes {
		return nil, 0, fmt.Errorf("GET %s: response body over sortcheck's limit of %d bytes (%d MiB)", u, maxResponseBytes, maxResponseBytes>>20)
	}
	// A proxy's or a sign-in page's 200 would otherwise be reported as invalid JSON at its '<';
	// JSON under another Content-Type is still read.
	if t := bytes.TrimSpace(body); resp.StatusCode == http.StatusOK && len(t) > 0 && t[0] == '<' {
		return nil, 0, fmt.Errorf("GET %s: response is not JSON (Content-Type %s)", u, resp.Header.Get("Content-Type"))
	}
	return body, resp.StatusCode, nil
}

// maxResponseBytes caps each response body, so that a service or proxy that never ends one
// cannot exhaust memory: 1 GiB, over three times a million-event log. Tests lower it.
var maxResponseBytes int64 = 1 << 30

// statusError reports an answer other than 200, with a hint at the usual cause of a refusal.
func (s *liveSource) statusError(u string, status int, body []byte) error {
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	hint := ""
	switch {
	case (status == http.StatusUnauthorized || status == http.StatusForbidden) && s.secret:
		hint = "; is --secret the secret of the service at --base?"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		hint = "; has the token expired, or is it for another conversation or service?"
	case status == http.StatusNotFound && s.rootPath() != "":
		hint = fmt.Sprintf("; is %q a conversation of the service at --base, and is %s the path of that service's root?", s.conversation, s.rootPath())
	case status == http.StatusNotFound:
		hint = fmt.Sprintf("; is %q a conversation of the service at --base?", s.conversation)
	}
	return fmt.Errorf("GET %s: HTTP %d %s%s", u, status, msg, hint)
}

func newHTTPClient() *http.Client { return &http.Client{Timeout: 60 * time.Second} }
