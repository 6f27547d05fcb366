package directline

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
	"github.com/directline-go/directline/store"
)

// maxParamsBytes limits the optional JSON body of tokens/generate and conversations.
const maxParamsBytes = 64 << 10

// conversationResponse is the Direct Line 3.0 Conversation object. streamUrl is set by start and
// reconnect only.
type conversationResponse struct {
	ConversationID string `json:"conversationId"`
	Token          string `json:"token"`
	ExpiresIn      int64  `json:"expires_in"`
	StreamURL      string `json:"streamUrl,omitempty"`
}

// tokenParameters is the optional body of tokens/generate and of conversations (Direct Line 3.0
// TokenParameters; DirectLineJS sends {user:{id}, locale}). encoding/json matches member names
// case-insensitively, so the docs' own PascalCase samples ({"User":{"Id":"dl_x"}}) work too.
// trustedOrigins is accepted and not enforced. botEndpoint (an extension) ties the conversation to
// another bot than the service's default; only a secret may set it, as may the bot query
// parameter.
type tokenParameters struct {
	User *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"user"`
	TrustedOrigins []string `json:"trustedOrigins"`
	Locale         string   `json:"locale"`
	BotEndpoint    string   `json:"botEndpoint"`
}

func (p *tokenParameters) userID() string {
	if p.User == nil {
		return ""
	}
	return p.User.ID
}

// readParams decodes the optional tokenParameters body. An empty body or JSON null means none.
func readParams(r *http.Request) (tokenParameters, error) {
	var p tokenParameters
	body, err := readBody(r, maxParamsBytes)
	if err != nil {
		return p, err
	}
	if len(jsonscan.TrimSpace(body)) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return p, ErrBadArgument.Msg("body must be a JSON object {user:{id,name}, trustedOrigins, locale}")
	}
	if len(p.userID()) > maxIDLength {
		return p, ErrBadArgument.Msg("user.id is longer than %d characters", maxIDLength)
	}
	return p, nil
}

// newConversationID returns 22 random URL-safe characters, the length of the hosted service's ids.
func newConversationID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// generateToken is POST /tokens/generate (secret only): it reserves a conversation and returns a
// token for it, bound to the body's user when given, without a streamUrl (Direct Line 3.0:
// generate does not start the conversation). The conversation is created in the store right away,
// not started (Conversation.Started false); POST /conversations with the token starts it.
func (s *Server) generateToken(c echo.Context) error {
	if err := s.requireSecret(c.Request()); err != nil {
		return err
	}
	p, err := s.readStartParams(c, true)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	conv := store.Conversation{ID: newConversationID(), Created: s.tokens.now().UTC(), UserID: p.userID(), BotEndpoint: p.BotEndpoint}
	if p.Locale != "" {
		conv.Properties = map[string]string{"locale": p.Locale}
	}
	if _, _, err := s.store.CreateConversation(ctx, conv); err != nil {
		return err
	}
	resp, err := s.conversationResponse(conv.ID, conv.UserID, "")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// refreshToken is POST /tokens/refresh: a new token for the same conversation and user. Only an
// expired or invalid token gives 403 TokenExpired (Web Chat ends the session on any 403); a secret
// gives 400.
func (s *Server) refreshToken(c echo.Context) error {
	cred, err := s.authenticate(c.Request())
	if err != nil {
		return err
	}
	if cred.secret {
		return ErrBadArgument.Msg("tokens/refresh takes a token, not a secret")
	}
	resp, err := s.conversationResponse(cred.token.Conv, cred.token.User, "")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// startConversation is POST /conversations. With a secret it creates a new conversation (bound to
// the body's user when given) and answers 201. With a token it starts the token's conversation:
// 201 the first time, 200 when it was already started. The answer carries a fresh token and a
// streamUrl with watermark=-.
func (s *Server) startConversation(c echo.Context) error {
	cred, err := s.authenticate(c.Request())
	if err != nil {
		return err
	}
	p, err := s.readStartParams(c, cred.secret)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	conv, created, added, err := s.start(ctx, cred, p)
	if err != nil {
		return err
	}
	// The bot learns of the conversation once, when it starts, of the members not announced yet
	// (a message posted before the start announced its sender).
	s.sendConversationUpdate(ctx, conv, added, boundUser(cred, conv))
	resp, err := s.conversationResponse(conv.ID, boundUser(cred, conv), "-")
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, resp)
}

// start creates or starts the conversation and reports whether this call started it, and the
// members it added.
func (s *Server) start(ctx context.Context, cred credential, p tokenParameters) (conv store.Conversation, started bool, added []store.Member, err error) {
	user := cred.user()
	if user == "" {
		user = p.userID()
	}
	var props map[string]string
	if p.Locale != "" {
		props = map[string]string{"locale": p.Locale}
	}
	userMember := store.Member{ID: user, Role: activity.RoleUser}
	if cred.secret {
		conv := store.Conversation{ID: newConversationID(), Created: s.tokens.now().UTC(), UserID: user, Started: true,
			Properties: props, BotEndpoint: p.BotEndpoint}
		added := s.addMembers(&conv, userMember)
		conv, _, err := s.store.CreateConversation(ctx, conv)
		return conv, true, added, err
	}
	id := cred.token.Conv
	markStarted := func(cv *store.Conversation) error {
		started, added = !cv.Started, nil
		cv.Started = true
		if cv.UserID == "" {
			cv.UserID = user
		}
		if started {
			added = s.addMembers(cv, store.Member{ID: cv.UserID, Role: activity.RoleUser})
		}
		if p.Locale != "" && cv.Properties["locale"] == "" {
			cv.Properties = cloneProps(cv.Properties)
			cv.Properties["locale"] = p.Locale
		}
		return nil
	}
	conv, err = s.store.UpdateConversation(ctx, id, markStarted)
	if !errors.Is(err, store.ErrConversationNotFound) {
		return conv, started, added, err
	}
	// A valid token whose conversation is not in the store (for example a new data file): the
	// token still names it, so create it.
	fresh := store.Conversation{ID: id, Created: s.tokens.now().UTC(), UserID: user, Started: true, Properties: props}
	freshAdded := s.addMembers(&fresh, userMember)
	conv, created, err := s.store.CreateConversation(ctx, fresh)
	if err != nil || created {
		return conv, created, freshAdded, err
	}
	// Created concurrently by another start: start it like an existing one.
	conv, err = s.store.UpdateConversation(ctx, id, markStarted)
	return conv, started, added, err
}

// readStartParams reads the body of tokens/generate or conversations and the bot query parameter,
// which wins over the body's botEndpoint. A bot endpoint needs a secret (ErrForbidden otherwise),
// no app id for the bot (ErrBadArgument: Options.ConnectorValidator set) and must pass
// checkBotEndpoint.
func (s *Server) readStartParams(c echo.Context, secret bool) (tokenParameters, error) {
	p, err := readParams(c.Request())
	if err != nil {
		return p, err
	}
	if q := c.QueryParam("bot"); q != "" {
		p.BotEndpoint = q
	}
	if p.BotEndpoint == "" {
		return p, nil
	}
	if !secret {
		return p, ErrForbidden.Msg("only the Direct Line secret may choose the bot endpoint")
	}
	if s.validator != nil {
		// Deliveries then carry a token issued for the bot, which anyone could collect and replay
		// to the bot (as another channel) from an endpoint of their own.
		return p, ErrBadArgument.Msg("the bot has an app id: its endpoint cannot be chosen per conversation, as deliveries carry a token for it")
	}
	return p, checkBotEndpoint(p.BotEndpoint)
}

func cloneProps(m map[string]string) map[string]string {
	c := make(map[string]string, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	return c
}

// boundUser is the user a new token for conv carries: the caller's token's user, else the user
// the conversation was started with.
func boundUser(cred credential, conv store.Conversation) string {
	if u := cred.user(); u != "" {
		return u
	}
	return conv.UserID
}

// reconnect is GET /conversations/{id}?watermark=W: a fresh token and a streamUrl that resumes
// after W, or after the newest entry when W is past it. Without the parameter the stream holds
// only what comes after this request (DIRECTLINE.md §1.2); an empty W (DirectLineJS's first
// resume) replays everything (watermark=-). With a secret it is the way to get a token for an
// existing conversation (R10).
func (s *Server) reconnect(c echo.Context) error {
	cred, err := s.authenticate(c.Request())
	if err != nil {
		return err
	}
	id, err := conversationParam(c)
	if err != nil {
		return err
	}
	if err := cred.allows(id); err != nil {
		return err
	}
	w, ok, err := ParseWatermark(c.QueryParam("watermark"))
	if err != nil {
		return err
	}
	conv, err := s.current.Conversation(c.Request().Context(), id)
	if err != nil {
		return err
	}
	wm := "-"
	switch _, given := c.QueryParams()["watermark"]; {
	case ok:
		wm = formatWatermark(min(w, conv.LastSeq))
	case !given:
		wm = formatWatermark(conv.LastSeq)
	}
	resp, err := s.conversationResponse(conv.ID, boundUser(cred, conv), wm)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// conversationResponse issues a token for conv bound to user and, when watermark is not "", a
// streamUrl resuming after it.
func (s *Server) conversationResponse(conv, user, watermark string) (conversationResponse, error) {
	tok, exp, err := s.tokens.conversationToken(conv, user)
	if err != nil {
		return conversationResponse{}, err
	}
	resp := conversationResponse{ConversationID: conv, Token: tok, ExpiresIn: int64(s.tokens.lifetime / time.Second)}
	if watermark != "" {
		if resp.StreamURL, err = s.streamURL(conv, user, watermark, exp); err != nil {
			return conversationResponse{}, err
		}
	}
	return resp, nil
}

// streamURL is the absolute ws:// or wss:// URL of the conversation's stream with its watermark
// and a 60-second t= credential that carries the conversation token's expiry.
func (s *Server) streamURL(conv, user, watermark string, tokenExpires time.Time) (string, error) {
	t, err := s.tokens.streamToken(conv, user, tokenExpires)
	if err != nil {
		return "", err
	}
	u := s.apiURL("conversations", conv, "stream")
	if u.Scheme == "https" {
		u.Scheme = "wss"
	} else {
		u.Scheme = "ws"
	}
	u.RawQuery = "watermark=" + url.QueryEscape(watermark) + "&t=" + url.QueryEscape(t)
	return u.String(), nil
}

// apiURL is the public URL of BasePath joined with the escaped path segments.
func (s *Server) apiURL(segments ...string) *url.URL {
	u := *s.public
	u.Path = s.public.Path + BasePath
	u.RawPath = ""
	for _, seg := range segments {
		u.Path += "/" + seg
	}
	return &u
}
