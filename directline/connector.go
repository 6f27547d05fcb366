package directline

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/botauth"
	"github.com/directline-go/directline/store"
)

// ConnectorPath is the prefix of the Bot Connector API the bot calls back on (the base is the
// serviceUrl of every activity the bot receives, DIRECTLINE.md §2.2).
const ConnectorPath = "/v3/conversations"

// conversationsPageSize is the page size of GetConversations.
const conversationsPageSize = 100

// connectorRoutes mounts the Bot Connector API. Status codes are the ones botbuilder-js accepts
// for each operation (DIRECTLINE.md §2.2): any other code, even a 2xx, is an error to it.
func (s *Server) connectorRoutes(e *echo.Echo) {
	g := e.Group(ConnectorPath, s.connectorAuth)
	g.POST("", s.createConversation)
	g.GET("", s.getConversations)
	g.POST("/:id/activities", s.sendToConversation)
	g.POST("/:id/activities/history", s.sendConversationHistory)
	g.POST("/:id/activities/:activityId", s.replyToActivity)
	g.PUT("/:id/activities/:activityId", s.updateActivity)
	g.DELETE("/:id/activities/:activityId", s.deleteActivity)
	g.GET("/:id/members", s.getConversationMembers)
	g.GET("/:id/members/:memberId", s.getConversationMember)
	g.GET("/:id/pagedmembers", s.getConversationPagedMembers)
	g.GET("/:id/activities/:activityId/members", s.getActivityMembers)
	g.POST("/:id/attachments", s.uploadAttachment)
	a := e.Group("/v3/attachments", s.connectorAuth)
	a.GET("/:attachmentId", s.getAttachmentInfo)
	a.GET("/:attachmentId/views/:viewId", s.getAttachmentView)
}

// fromAllowedNetwork reports whether r, and every client a proxy says it forwarded r for
// (X-Forwarded-For, X-Real-IP, Forwarded's for=), is on an allowed network. Behind a reverse
// proxy on the same host every call arrives from loopback, and only those headers tell a remote
// client from a bot on the host; a value that is not an address ("unknown") is not allowed.
func (s *Server) fromAllowedNetwork(r *http.Request) bool {
	if !s.allow.Allowed(r.RemoteAddr) {
		return false
	}
	var forwarded []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		forwarded = append(forwarded, strings.Split(v, ",")...)
	}
	forwarded = append(forwarded, r.Header.Values("X-Real-Ip")...)
	for _, v := range r.Header.Values("Forwarded") {
		for _, elem := range strings.Split(v, ",") {
			for _, pair := range strings.Split(elem, ";") {
				if k, addr, ok := strings.Cut(strings.TrimSpace(pair), "="); ok && strings.EqualFold(k, "for") {
					forwarded = append(forwarded, strings.Trim(addr, `"`))
				}
			}
		}
	}
	for _, addr := range forwarded {
		addr = strings.TrimSpace(addr)
		if strings.HasPrefix(addr, "[") && strings.HasSuffix(addr, "]") {
			addr = addr[1 : len(addr)-1] // [2001:db8::1] without a port
		}
		if !s.allow.Allowed(addr) {
			return false
		}
	}
	return true
}

// connectorAuth admits a bot's call (DIRECTLINE.md §2.3, §4 point 11): with a validator, a valid
// bearer JWT (ErrUnauthorized when missing, forged or expired); without one, any call from an
// allowed network (ErrForbidden otherwise), as bots without an app id send no token.
func (s *Server) connectorAuth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if s.validator == nil {
			if !s.fromAllowedNetwork(r) {
				return ErrForbidden.Msg("unauthenticated Bot Connector calls are accepted only from %s", s.allow)
			}
			return next(c)
		}
		_, err := s.validator.Validate(r.Context(), r.Header.Get(echo.HeaderAuthorization))
		switch {
		case err == nil:
			return next(c)
		case errors.Is(err, botauth.ErrMissingToken):
			return ErrUnauthorized.Msg("the Bot Connector API needs the bot's bearer token")
		case errors.Is(err, botauth.ErrInvalidToken):
			s.log.Info("bot token rejected", "path", r.URL.Path, "err", err)
			return ErrUnauthorized.Msg("invalid or expired bot token")
		case errors.Is(err, botauth.ErrKeysUnavailable):
			s.log.Error("bot token signing keys unavailable", "err", err)
			return ErrServiceUnavailable.Msg("cannot validate bot tokens right now")
		default:
			return err
		}
	}
}

// pathParam returns the unescaped path parameter name: botbuilder escapes ids in paths, so
// "conv|0000001" arrives as "conv%7C0000001".
func pathParam(c echo.Context, name string) (string, error) {
	v, err := url.PathUnescape(c.Param(name))
	if err != nil || v == "" || len(v) > maxIDLength {
		return "", ErrNotFound.Msg("%s not found", name)
	}
	return v, nil
}

// connectorConversation returns the conversation named by the :id path parameter.
func (s *Server) connectorConversation(c echo.Context) (store.Conversation, error) {
	id, err := conversationParam(c)
	if err != nil {
		return store.Conversation{}, err
	}
	return s.store.Conversation(c.Request().Context(), id)
}

// readJSON reads a JSON request body of at most limit bytes into v.
func readJSON(c echo.Context, limit int64, v any) error {
	body, err := readBody(c.Request(), limit)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return ErrBadArgument.Msg("the body is not the expected JSON object")
	}
	return nil
}

// readBotActivity reads and validates the activity of a connector request.
func (s *Server) readBotActivity(c echo.Context) (*activity.Activity, error) {
	body, err := readBody(c.Request(), s.maxAct)
	if err != nil {
		return nil, err
	}
	a, err := activity.Decode(body)
	if err != nil {
		return nil, err
	}
	return a, a.Validate()
}

// sendToConversation is SendToConversation: POST /v3/conversations/{id}/activities → 200 {id}.
func (s *Server) sendToConversation(c echo.Context) error {
	return s.sendActivity(c, "")
}

// replyToActivity is ReplyToActivity: POST /v3/conversations/{id}/activities/{activityId} →
// 200 {id}. The body's replyToId is kept; when it has none, the path's activity id is used.
func (s *Server) replyToActivity(c echo.Context) error {
	replyTo, err := pathParam(c, "activityId")
	if err != nil {
		return err
	}
	return s.sendActivity(c, replyTo)
}

func (s *Server) sendActivity(c echo.Context, replyTo string) error {
	conv, err := s.connectorConversation(c)
	if err != nil {
		return err
	}
	a, err := s.readBotActivity(c)
	if err != nil {
		return err
	}
	if a.ReplyToID == "" {
		a.ReplyToID = replyTo
	}
	id, err := s.appendBotActivity(c.Request().Context(), conv, a)
	if err != nil {
		return err
	}
	return writeResourceResponse(c, id)
}

// addressBotActivity sets the fields the service owns on an activity from the bot: channelId,
// conversation, from = the bot (role "bot"), recipient = the user unless the bot named one. The id
// is the store's to give. A replyToId that is not an activity id of the conversation (the
// conversationUpdate's, which clients never see) is dropped, so a client never waits for an
// activity it cannot get; knownReplyTo drops the rest.
func (s *Server) addressBotActivity(conv store.Conversation, a *activity.Activity) {
	bot := s.botAccount(conv)
	if s.botID == "" && conv.Properties[propBotID] == "" && a.From != nil && a.From.ID != "" && len(a.From.ID) <= maxIDLength {
		// The bot names itself in its first activity; from then on that is the bot's account.
		bot.ID, bot.Name = a.From.ID, a.From.Name
	}
	if a.From != nil {
		bot.Extra = a.From.Extra
	}
	a.From = bot
	if a.Recipient == nil || a.Recipient.ID == "" {
		a.Recipient = userAccount(conv)
	}
	if a.Recipient.Role == "" {
		a.Recipient.Role = activity.RoleUser
	}
	a.ID = ""
	a.ChannelID = channelID
	a.Conversation = &activity.ConversationAccount{ID: conv.ID}
	dropForeignReplyTo(conv, a)
}

// dropForeignReplyTo drops a replyToId that is not an activity id of conv.
func dropForeignReplyTo(conv store.Conversation, a *activity.Activity) {
	if a.ReplyToID != "" {
		if cid, _, err := activity.ParseID(a.ReplyToID); err != nil || cid != conv.ID {
			a.ReplyToID = ""
		}
	}
}

// knownReplyTo drops a's replyToId when it names no activity the conversation holds: one with a
// sequence number not reached yet would later name another activity, and one deleted is one no
// client can get any more.
func (s *Server) knownReplyTo(ctx context.Context, conv store.Conversation, a *activity.Activity) error {
	if a.ReplyToID == "" {
		return nil
	}
	_, err := s.store.Activity(ctx, conv.ID, a.ReplyToID)
	if errors.Is(err, store.ErrActivityNotFound) {
		a.ReplyToID = ""
		return nil
	}
	return err
}

// appendBotActivity addresses a bot's activity, checks its livestream metadata and stores it in
// the conversation log like any other activity (contiguous seq, sort keys, stream fan-out). It
// returns the stored id. Errors: ErrBadArgument/ErrMissingProperty for a final without a known
// streamId, ErrStreamConcluded for a revision after its stream's final, store errors.
func (s *Server) appendBotActivity(ctx context.Context, conv store.Conversation, a *activity.Activity) (string, error) {
	s.addressBotActivity(conv, a)
	if err := s.knownReplyTo(ctx, conv, a); err != nil {
		return "", err
	}
	seal, err := s.checkLivestream(ctx, conv, a)
	if err != nil {
		return "", err
	}
	s.warnPartGrouping(conv, a)
	name := s.botID == "" && conv.Properties[propBotID] == ""
	var check func(*store.Conversation) error
	if seal != nil || name {
		check = func(cv *store.Conversation) error {
			if seal != nil {
				if err := seal(cv); err != nil {
					return err
				}
			}
			if name && cv.Properties[propBotID] == "" {
				cv.Properties = cloneProps(cv.Properties)
				cv.Properties[propBotID], cv.Properties[propBotName] = a.From.ID, a.From.Name
			}
			return nil
		}
	}
	res, err := s.store.AppendIf(ctx, conv.ID, a, check)
	if err != nil {
		return "", err
	}
	return res.Activity.ID, nil
}

// sendConversationHistory is SendConversationHistory: POST .../activities/history with
// {activities:[...]} → 200 {id} (the last stored id). Each activity is stored as the bot sent it
// apart from the fields the store owns (id, timestamp, sequence id), channelId and conversation;
// from defaults to the bot. As for any bot activity, a replyToId naming no activity of the
// conversation is dropped and the livestream rules apply (checkLivestream): an imported
// revision of a sealed stream is ErrStreamConcluded, with the activities before it stored.
func (s *Server) sendConversationHistory(c echo.Context) error {
	conv, err := s.connectorConversation(c)
	if err != nil {
		return err
	}
	var transcript struct {
		Activities []*activity.Activity `json:"activities"`
	}
	body, err := readBody(c.Request(), s.maxUpload)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, &transcript); err != nil {
		var fe *activity.FieldError
		if errors.As(err, &fe) {
			return err
		}
		return ErrBadArgument.Msg("the body must be a Transcript {activities:[...]}")
	}
	for i, a := range transcript.Activities {
		if a == nil {
			return ErrBadArgument.Msg("activities[%d] is null", i)
		}
		if err := a.Validate(); err != nil {
			return err
		}
	}
	var last string
	ctx := c.Request().Context()
	for _, a := range transcript.Activities {
		if a.From == nil || a.From.ID == "" {
			a.From = s.botAccount(conv)
		}
		a.ID = ""
		a.ChannelID = channelID
		a.Conversation = &activity.ConversationAccount{ID: conv.ID}
		dropForeignReplyTo(conv, a)
		if err := s.knownReplyTo(ctx, conv, a); err != nil {
			return err
		}
		seal, err := s.checkLivestream(ctx, conv, a)
		if err != nil {
			return err
		}
		res, err := s.store.AppendIf(ctx, conv.ID, a, seal)
		if err != nil {
			return err
		}
		last = res.Activity.ID
	}
	return c.JSON(http.StatusOK, resourceResponse{ID: last})
}

// connectorActivity reads the conversation and the decoded activity id of a connector route with
// both in its path (…/conversations/{conversationId}/activities/{activityId}).
func (s *Server) connectorActivity(c echo.Context) (store.Conversation, string, error) {
	conv, err := s.connectorConversation(c)
	if err != nil {
		return store.Conversation{}, "", err
	}
	id, err := pathParam(c, "activityId")
	return conv, id, err
}

// updateActivity is UpdateActivity: PUT .../activities/{activityId} → 200 {id}. The revision
// keeps the activity's id, timestamp and sequence id and takes a new watermark, so live clients
// get it as a new frame and replace the activity in place, and history shows the latest revision
// once at its original place (DESIGN invariant 9, field case R12). A body id other than the path
// id, an activity the bot did not send, or a change to or from typing is ErrBadArgument; an
// unknown or deleted activity is ErrNotFound. A livestream is revised by posting its revisions
// (WEBCHAT-ORDERING §4.5): an update of one of its activities is ErrStreamConcluded once it has
// its final and ErrBadArgument before, as is an update that makes an activity a livestream's, so
// that no update slips past the seal (DESIGN invariant 10, field case R13).
func (s *Server) updateActivity(c echo.Context) error {
	conv, id, err := s.connectorActivity(c)
	if err != nil {
		return err
	}
	a, err := s.readBotActivity(c)
	if err != nil {
		return err
	}
	if a.ID != "" && a.ID != id {
		return ErrBadArgument.Msg("the activity id %q in the body is not the id %q in the path", a.ID, id)
	}
	old, err := s.store.Activity(c.Request().Context(), conv.ID, id)
	if err != nil {
		return err
	}
	// A revision is the bot's (addressBotActivity), so an update of what the user sent would put
	// the user's words on the bot's side of the screen, without their localTimestamp.
	if old.From == nil || old.From.Role != activity.RoleBot {
		return ErrBadArgument.Msg("activity %q was not sent by the bot: a bot updates only its own activities", id)
	}
	// Typing activities are not in history: a message turned into one would vanish from it while
	// live clients keep showing it, and a typing activity turned into a message would appear
	// only in history.
	if (old.Type == activity.TypeTyping) != (a.Type == activity.TypeTyping) {
		return ErrBadArgument.Msg("an update cannot turn a %q activity into a %q one", old.Type, a.Type)
	}
	if ls, ok := old.Livestream(); ok {
		if conv.Properties[propSealedPrefix+ls.SessionID] != "" {
			return ErrStreamConcluded.Msg("activity %q belongs to the livestream %q, which already has its final activity", id, ls.SessionID)
		}
		return ErrBadArgument.Msg("activity %q belongs to the livestream %q: post a revision instead of updating it", id, ls.SessionID)
	}
	if _, ok := mirrorLivestream(a); ok || streamType(a) != "" {
		if sid := streamIDMember(a); sid != "" && conv.Properties[propSealedPrefix+sid] != "" {
			return ErrStreamConcluded.Msg("the livestream %q already has its final activity", sid)
		}
		return ErrBadArgument.Msg("an update cannot make an activity part of a livestream: post it as a revision")
	}
	s.addressBotActivity(conv, a)
	if err := s.knownReplyTo(c.Request().Context(), conv, a); err != nil {
		return err
	}
	s.warnPartGrouping(conv, a)
	if _, err := s.store.Update(c.Request().Context(), conv.ID, id, a); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resourceResponse{ID: id})
}

// deleteActivity is DeleteActivity: DELETE .../activities/{activityId} → 200 (botbuilder treats
// 204 as an error). The activity leaves history (GET activities, stream replays); nothing is
// pushed to live clients, which keep what they were shown: Web Chat has no way to remove an
// activity (field case R12).
func (s *Server) deleteActivity(c echo.Context) error {
	conv, id, err := s.connectorActivity(c)
	if err != nil {
		return err
	}
	if err := s.store.Delete(c.Request().Context(), conv.ID, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusOK)
}

// members returns conv's members as ChannelAccounts (never null).
func members(conv store.Conversation) []store.Member {
	if conv.Members == nil {
		return []store.Member{}
	}
	return conv.Members
}

// getConversationMembers is GetConversationMembers: GET .../members → 200 [ChannelAccount].
func (s *Server) getConversationMembers(c echo.Context) error {
	conv, err := s.connectorConversation(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, members(conv))
}

// getConversationMember is GetConversationMember: GET .../members/{memberId} → 200
// ChannelAccount; ErrNotFound for someone who is not a member.
func (s *Server) getConversationMember(c echo.Context) error {
	conv, err := s.connectorConversation(c)
	if err != nil {
		return err
	}
	id, err := pathParam(c, "memberId")
	if err != nil {
		return err
	}
	for _, m := range conv.Members {
		if m.ID == id {
			return c.JSON(http.StatusOK, m)
		}
	}
	return ErrNotFound.Msg("member not found")
}

// getConversationPagedMembers is GetConversationPagedMembers: GET .../pagedmembers → 200
// {members}. A Direct Line conversation has a handful of members, so one page holds them all and
// there is no continuationToken.
func (s *Server) getConversationPagedMembers(c echo.Context) error {
	conv, err := s.connectorConversation(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"members": members(conv)})
}

// getActivityMembers is GetActivityMembers: GET .../activities/{activityId}/members → 200
// [ChannelAccount], the conversation's members (everyone in a Direct Line conversation sees every
// activity); ErrNotFound for an unknown activity.
func (s *Server) getActivityMembers(c echo.Context) error {
	conv, id, err := s.connectorActivity(c)
	if err != nil {
		return err
	}
	if _, err := s.store.Activity(c.Request().Context(), conv.ID, id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, members(conv))
}

// conversationParameters is the Bot Connector ConversationParameters.
type conversationParameters struct {
	Bot      *activity.ChannelAccount   `json:"bot"`
	Members  []*activity.ChannelAccount `json:"members"`
	Activity *activity.Activity         `json:"activity"`
}

// conversationResourceResponse is the Bot Connector ConversationResourceResponse.
type conversationResourceResponse struct {
	ID         string `json:"id"`
	ActivityID string `json:"activityId,omitempty"`
	ServiceURL string `json:"serviceUrl"`
}

// createConversation is CreateConversation: POST /v3/conversations → 200 {id, activityId,
// serviceUrl}. The new conversation's members are the bot and the given members (the first one
// is its user); its optional activity is stored as the bot's first activity. A client joins it
// with the secret through GET /v3/directline/conversations/{id}.
func (s *Server) createConversation(c echo.Context) error {
	var p conversationParameters
	body, err := readBody(c.Request(), s.maxAct)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, &p); err != nil {
		var fe *activity.FieldError
		if errors.As(err, &fe) {
			return err
		}
		return ErrBadArgument.Msg("the body must be ConversationParameters {bot, members, activity}")
	}
	conv := store.Conversation{ID: newConversationID(), Created: s.tokens.now().UTC(), Started: true}
	bot := s.botAccount(conv)
	if s.botID == "" && p.Bot != nil && p.Bot.ID != "" && len(p.Bot.ID) <= maxIDLength {
		bot = &activity.ChannelAccount{ID: p.Bot.ID, Name: p.Bot.Name, Role: activity.RoleBot}
		conv.Properties = map[string]string{propBotID: bot.ID, propBotName: bot.Name}
	}
	conv.Members = []store.Member{member(bot)}
	for i, m := range p.Members {
		if m == nil || m.ID == "" || len(m.ID) > maxIDLength {
			return ErrBadArgument.Msg("members[%d] needs an id of at most %d characters", i, maxIDLength)
		}
		role := m.Role
		if role == "" {
			role = activity.RoleUser
		}
		conv.Members = append(conv.Members, store.Member{ID: m.ID, Name: m.Name, Role: role})
		if conv.UserID == "" && role == activity.RoleUser {
			conv.UserID = m.ID
		}
	}
	ctx := c.Request().Context()
	conv, _, err = s.store.CreateConversation(ctx, conv)
	if err != nil {
		return err
	}
	resp := conversationResourceResponse{ID: conv.ID, ServiceURL: s.serviceURL}
	if p.Activity != nil {
		if err := p.Activity.Validate(); err != nil {
			return err
		}
		if resp.ActivityID, err = s.appendBotActivity(ctx, conv, p.Activity); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, resp)
}

// conversationsResult is the Bot Connector ConversationsResult.
type conversationsResult struct {
	Conversations     []conversationMembers `json:"conversations"`
	ContinuationToken string                `json:"continuationToken,omitempty"`
}

type conversationMembers struct {
	ID      string         `json:"id"`
	Members []store.Member `json:"members"`
}

// getConversations is GetConversations: GET /v3/conversations?continuationToken=T → 200
// {conversations:[{id, members}], continuationToken}, 100 per page in id order; the token is the
// last id of a full page.
func (s *Server) getConversations(c echo.Context) error {
	after := c.QueryParam("continuationToken")
	convs, err := s.store.Conversations(c.Request().Context(), after, conversationsPageSize)
	if err != nil {
		return err
	}
	res := conversationsResult{Conversations: make([]conversationMembers, 0, len(convs))}
	for _, cv := range convs {
		res.Conversations = append(res.Conversations, conversationMembers{ID: cv.ID, Members: members(cv)})
	}
	if len(convs) == conversationsPageSize {
		res.ContinuationToken = convs[len(convs)-1].ID
	}
	return c.JSON(http.StatusOK, res)
}
