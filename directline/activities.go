package directline

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/store"
)

// historyPageSize is the most activities one GET activities answer carries; clients page by
// advancing the watermark until no activities come back (Direct Line 3.0: GET activities).
const historyPageSize = 100

// channelID is the channelId of every activity clients post (the hosted service rewrites
// Web Chat's "webchat" to it).
const channelID = "directline"

// activitySet is the Direct Line 3.0 ActivitySet. The watermark is always present, even with no
// activities, so a client never loses its place.
type activitySet struct {
	Activities []*activity.Activity `json:"activities"`
	Watermark  string               `json:"watermark"`
}

// getActivities is GET /conversations/{id}/activities?watermark=W: up to 100 history activities
// after W (typing never included) and the watermark to continue from. An empty or missing W means
// from the start.
func (s *Server) getActivities(c echo.Context) error {
	_, id, err := s.conversationRequest(c)
	if err != nil {
		return err
	}
	w, _, err := ParseWatermark(c.QueryParam("watermark"))
	if err != nil {
		return err
	}
	entries, next, err := s.store.ReadAfter(c.Request().Context(), id, w, historyPageSize)
	if err != nil {
		return err
	}
	set := activitySet{Activities: make([]*activity.Activity, 0, len(entries)), Watermark: formatWatermark(next)}
	for _, e := range entries {
		set.Activities = append(set.Activities, e.Activity)
	}
	return c.JSON(http.StatusOK, set)
}

// resourceResponse is the Direct Line 3.0 ResourceResponse.
type resourceResponse struct {
	ID string `json:"id"`
}

// writeResourceResponse answers 200 with {"id":id}, the bytes c.JSON writes, without an encoder
// per answer when id needs no escaping (ids the service makes never do) and the URL has no query
// (echo indents for ?pretty).
func writeResourceResponse(c echo.Context, id string) error {
	if c.Request().URL.RawQuery != "" {
		return c.JSON(http.StatusOK, resourceResponse{ID: id})
	}
	for i := 0; i < len(id); i++ {
		if b := id[i]; b < 0x20 || b > 0x7e || b == '"' || b == '\\' {
			return c.JSON(http.StatusOK, resourceResponse{ID: id})
		}
	}
	body := make([]byte, 0, len(id)+10)
	body = append(append(append(body, `{"id":"`...), id...), "\"}\n"...)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

// postActivity is POST /conversations/{id}/activities: one activity, at most MaxActivityBytes,
// answered with {id} once stored (and acknowledged by the bot when one is configured).
func (s *Server) postActivity(c echo.Context) error {
	cred, id, err := s.conversationRequest(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	conv, err := s.store.Conversation(ctx, id)
	if err != nil {
		return err
	}
	body, err := readBody(c.Request(), s.maxAct)
	if err != nil {
		return err
	}
	a, err := activity.Decode(body)
	if err != nil {
		return err
	}
	activityID, err := s.post(ctx, cred, conv, a, "", 0)
	if err != nil {
		return err
	}
	return writeResourceResponse(c, activityID)
}

// declaredTooLarge is the *http.MaxBytesError of a body whose Content-Length is over limit,
// answered before any of it is read: a client that sent "Expect: 100-continue" (curl does for
// large bodies) then gets the 413 instead of a "100 Continue" and a reset connection.
func declaredTooLarge(r *http.Request, limit int64) error {
	if r.ContentLength > limit {
		return &http.MaxBytesError{Limit: limit}
	}
	return nil
}

// isType reports whether t is the activity type want as Bot Framework SDKs read types: ignoring
// case and surrounding spaces, with an optional "/subtype" (botbuilder-dotnet's
// Activity.IsActivity).
func isType(t, want string) bool {
	t = strings.TrimSpace(t)
	if len(t) > len(want) && t[len(want)] == '/' {
		t = t[:len(want)]
	}
	return strings.EqualFold(t, want)
}

// typeContactRelationUpdate is an activity type Direct Line does not support (DIRECTLINE.md §1.6).
const typeContactRelationUpdate = "contactRelationUpdate"

// readBody reads a JSON request body of at most limit bytes: errors are those of io.ReadAll on
// http.MaxBytesReader (*http.MaxBytesError past the limit), and ErrBadArgument for a body that
// is not UTF-8 (see checkUTF8). A body with a Content-Length within the limit is read into one
// buffer of that length instead of a growing one.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if err := declaredTooLarge(r, limit); err != nil {
		return nil, err
	}
	body := http.MaxBytesReader(nil, r.Body, limit)
	if r.ContentLength <= 0 || r.ContentLength > limit {
		buf, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		return buf, checkUTF8(buf)
	}
	buf := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(body, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, checkUTF8(buf)
}

// checkUTF8 refuses JSON that is not UTF-8 (RFC 8259 §8.1), with ErrBadArgument naming the first
// bad byte. Kept, such bytes would reach every stream of the conversation, where browsers and
// other strict WebSocket clients drop the connection on the first frame that holds them; and
// decoded, distinct values would read alike (two clientActivityIDs both U+FFFD).
func checkUTF8(body []byte) error {
	if utf8.Valid(body) {
		return nil
	}
	i := 0
	for i < len(body) {
		r, n := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		i += n
	}
	return ErrBadArgument.Msg("the body is not valid UTF-8 (byte %d)", i)
}

// conversationRequest authenticates a request on /conversations/{id}/... and checks that the
// credential covers the conversation.
func (s *Server) conversationRequest(c echo.Context) (credential, string, error) {
	cred, err := s.authenticate(c.Request())
	if err != nil {
		return credential{}, "", err
	}
	id, err := conversationParam(c)
	if err != nil {
		return credential{}, "", err
	}
	if err := cred.allows(id); err != nil {
		return credential{}, "", err
	}
	return cred, id, nil
}

// post completes a client's activity with the fields the service owns, stores it and hands it to
// the bot. The service sets channelId, conversation, recipient (the bot) and serviceUrl, forces
// from.id to the user the token binds (Direct Line enhanced authentication), else keeps the
// client's from.id, else uses fallbackUser or the conversation's user; from.role defaults to
// "user". Everything else the client sent (localTimestamp, localTimezone, channelData, entities,
// unknown members) is kept as sent (DESIGN invariant 3). A resend with a known clientActivityID
// returns the original id and neither stores nor delivers anything (DESIGN invariant 6).
//
// Delivery (DIRECTLINE.md §2.1, field cases R07, R17): the stored activity, with the id, timestamp
// and sequence id clients see, is POSTed to the bot once. Before a user's first activity the bot
// gets one conversationUpdate adding that user (and the bot, when the conversation was never
// started), unless they were announced already. conversationUpdate and contactRelationUpdate are
// ErrBadArgument: only the service tells the bot who joined, and clients never see either type
// (DIRECTLINE.md §1.6). The wait for the bot is ackTimeout (0 = the bot's default);
// a bot still working then is not an error.
//
// Errors: ErrMissingProperty (no type, no from.id), ErrBadArgument, store errors, bot errors (the
// activity stays stored).
func (s *Server) post(ctx context.Context, cred credential, conv store.Conversation, a *activity.Activity, fallbackUser string, ackTimeout time.Duration) (string, error) {
	if err := a.Validate(); err != nil {
		return "", err
	}
	if isType(a.Type, activity.TypeConversationUpdate) || isType(a.Type, typeContactRelationUpdate) {
		return "", ErrBadArgument.Msg("%s activities come from the service, not from clients; send an event activity instead", a.Type)
	}
	if a.From == nil {
		a.From = &activity.ChannelAccount{}
	}
	switch {
	case cred.user() != "":
		a.From.ID = cred.user()
	case a.From.ID != "":
	case fallbackUser != "":
		a.From.ID = fallbackUser
	default:
		a.From.ID = conv.UserID
	}
	if a.From.ID == "" {
		return "", ErrMissingProperty.Msg("from.id is required when the token binds no user")
	}
	if len(a.From.ID) > maxIDLength {
		return "", ErrBadArgument.Msg("from.id is longer than %d characters", maxIDLength)
	}
	// The client API speaks for the user: a role of "bot" would put the activity on the bot's
	// side of the screen (bots post through the Bot Connector API).
	a.From.Role = activity.RoleUser
	if len(a.ClientActivityID()) > maxClientActivityIDLength {
		return "", ErrBadArgument.Msg("channelData.clientActivityID is longer than %d bytes", maxClientActivityIDLength)
	}
	a.ChannelID = channelID
	a.Conversation = &activity.ConversationAccount{ID: conv.ID}
	a.Recipient = s.botAccount(conv)
	a.ServiceURL = s.serviceURL
	res, err := s.store.Append(ctx, conv.ID, a)
	if err != nil {
		return "", err
	}
	if s.bot == nil {
		return res.Activity.ID, nil
	}
	undelivered := propUndeliveredPrefix + res.Activity.ID
	if res.Duplicate {
		// Read again: the failure may have been marked after this request read the conversation.
		if conv, err = s.store.Conversation(ctx, conv.ID); err != nil {
			return "", err
		}
		if conv.Properties[undelivered] == "" {
			return res.Activity.ID, nil
		}
	}
	if conv, err = s.joinUser(ctx, conv, res.Activity.From); err != nil {
		return "", err
	}
	if err := s.deliver(ctx, conv, res.Entry, ackTimeout); err != nil {
		// A bot too slow to answer, or a client that hung up, may still get or have the
		// activity: a resend of it is then answered as one the bot has (R07). Without a
		// connection or a token nothing was sent, whatever the client did.
		if nothingSent(err) || (!errors.Is(err, bot.ErrTimeout) && ctx.Err() == nil) {
			s.markUndelivered(ctx, conv.ID, undelivered, true)
		}
		return "", err
	}
	if res.Duplicate {
		s.markUndelivered(ctx, conv.ID, undelivered, false)
	}
	return res.Activity.ID, nil
}

// markUndelivered sets or clears the conversation property key (propUndeliveredPrefix + activity
// id). Failing to store it is logged, not returned: the client's answer is the delivery's.
func (s *Server) markUndelivered(ctx context.Context, convID, key string, failed bool) {
	_, err := s.store.UpdateConversation(ctx, convID, func(cv *store.Conversation) error {
		if (cv.Properties[key] != "") == failed {
			return nil
		}
		cv.Properties = cloneProps(cv.Properties)
		if failed {
			cv.Properties[key] = "1"
		} else {
			delete(cv.Properties, key)
		}
		return nil
	})
	if err != nil {
		s.log.Warn("cannot record the outcome of a delivery to the bot", "conversation", convID, "key", key, "err", err)
	}
}

// deliver hands a stored entry's activity to the bot, with the store's encoding when it has one.
func (s *Server) deliver(ctx context.Context, conv store.Conversation, e store.Entry, ackTimeout time.Duration) error {
	if jb, ok := s.bot.(jsonBot); ok && e.JSON != nil {
		return jb.DeliverJSON(ctx, conv, e.Activity, e.JSON, ackTimeout)
	}
	return s.bot.Deliver(ctx, conv, e.Activity, ackTimeout)
}

// logPageSize is how many entries the log export reads per store call.
const logPageSize = 500

// logLine is one line of the log export.
type logLine struct {
	Seq       uint64             `json:"seq"`
	Kind      string             `json:"kind"`
	Ephemeral bool               `json:"ephemeral,omitempty"`
	Activity  *activity.Activity `json:"activity"`
}

// exportLog is GET /conversations/{id}/log (secret only): every log entry in seq order as JSON
// Lines (application/x-ndjson), typing and superseded revisions included.
func (s *Server) exportLog(c echo.Context) error {
	if err := s.requireSecret(c.Request()); err != nil {
		return err
	}
	id, err := conversationParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.store.Conversation(ctx, id); err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentType, "application/x-ndjson")
	c.Response().WriteHeader(http.StatusOK)
	enc := json.NewEncoder(c.Response())
	var after uint64
	for {
		entries, err := s.store.ReadLog(ctx, id, after, logPageSize)
		if err != nil {
			return err
		}
		for _, e := range entries {
			kind := "activity"
			if e.Kind == store.KindRevision {
				kind = "revision"
			}
			if err := enc.Encode(logLine{Seq: e.Seq, Kind: kind, Ephemeral: e.Ephemeral, Activity: e.Activity}); err != nil {
				return err
			}
			after = e.Seq
		}
		if len(entries) < logPageSize {
			return nil
		}
	}
}
