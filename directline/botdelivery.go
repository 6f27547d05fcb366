package directline

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/store"
)

// BotEndpointNone as a bot endpoint means no bot: activities are stored and echoed only.
const BotEndpointNone = "none"

// Default bot account, used when neither Options.BotID nor a bot activity named the bot.
const (
	DefaultBotID   = "bot"
	DefaultBotName = "Bot"
)

// Conversation properties the service keeps about the bot (store.Conversation.Properties).
const (
	propBotID   = "botId"
	propBotName = "botName"
	// propSealedPrefix + streamId marks a livestream that has its final activity (DESIGN
	// invariant 10).
	propSealedPrefix = "livestream.sealed:"
	// propUndeliveredPrefix + activity id marks a client's activity whose delivery to the bot
	// failed (the client got 502). A resend with its clientActivityID delivers the stored
	// activity again rather than answer with its id alone, which would tell the client the bot
	// has it.
	propUndeliveredPrefix = "delivery.failed:"
)

// BotClient delivers activities to the bot endpoint of their conversation: the conversation's
// BotEndpoint when set, else Endpoint. It implements Bot over bot.Client.
type BotClient struct {
	// Client sends the requests (ack timeout, background completion, credentials).
	Client *bot.Client
	// Endpoint is the default messaging endpoint (an http(s) URL); "" or "none" means no bot.
	Endpoint string
	// Fixed says deliveries carry a token for the bot (it has an app id): they go to Endpoint
	// only, never to an endpoint a conversation chose (before the app id was set), which would
	// collect the token.
	Fixed bool
}

// ErrConversationEndpoint: the conversation names a bot endpoint of its own, which a bot with an
// app id does not use (BotClient.Fixed). Nothing is sent.
var ErrConversationEndpoint = errors.New("directline: the conversation names its own bot endpoint, and the bot has an app id")

// endpoint is where conv's activities go: "" for none.
func (b *BotClient) endpoint(conv store.Conversation) (string, error) {
	endpoint := conv.BotEndpoint
	if endpoint == "" {
		endpoint = b.Endpoint
	} else if b.Fixed && endpoint != b.Endpoint {
		return "", ErrConversationEndpoint
	}
	if endpoint == BotEndpointNone {
		endpoint = ""
	}
	return endpoint, nil
}

// Deliver POSTs a to the conversation's bot and waits for the bot's answer at most ackTimeout
// (0 = the client's ack timeout). A bot still working when the wait ends is not an error: the
// request goes on in the background (field case R07). Errors are the bot package's (see
// toError for their catalogue entries) or ctx's when the caller left first.
func (b *BotClient) Deliver(ctx context.Context, conv store.Conversation, a *activity.Activity, ackTimeout time.Duration) error {
	endpoint, err := b.endpoint(conv)
	if endpoint == "" || err != nil {
		return err
	}
	_, err = b.Client.DeliverWithin(ctx, endpoint, a, ackTimeout)
	return err
}

// DeliverJSON is Deliver for an activity already encoded: body is a as activity.Encode writes
// it (store.Entry.JSON), sent without encoding a again.
func (b *BotClient) DeliverJSON(ctx context.Context, conv store.Conversation, a *activity.Activity, body []byte, ackTimeout time.Duration) error {
	endpoint, err := b.endpoint(conv)
	if endpoint == "" || err != nil {
		return err
	}
	_, err = b.Client.DeliverJSONWithin(ctx, endpoint, a, body, ackTimeout)
	return err
}

// checkBotEndpoint validates a per-conversation bot endpoint: "none" or an absolute http(s) URL.
func checkBotEndpoint(endpoint string) error {
	if endpoint == BotEndpointNone {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(endpoint) > 2048 {
		return ErrBadArgument.Msg(`botEndpoint must be an absolute http(s) URL or "none"`)
	}
	return nil
}

// botAccount is the bot as clients and the bot itself see it: Options.BotID/BotName, else what
// the bot's first activity in the conversation named, else DefaultBotID/DefaultBotName.
func (s *Server) botAccount(conv store.Conversation) *activity.ChannelAccount {
	acc := &activity.ChannelAccount{ID: s.botID, Name: s.botName, Role: activity.RoleBot}
	if acc.ID == "" {
		acc.ID, acc.Name = conv.Properties[propBotID], conv.Properties[propBotName]
	}
	if acc.ID == "" {
		acc.ID, acc.Name = DefaultBotID, DefaultBotName
	}
	return acc
}

// userAccount is the conversation's user as the recipient of bot activities.
func userAccount(conv store.Conversation) *activity.ChannelAccount {
	id := conv.UserID
	if id == "" {
		for _, m := range conv.Members {
			if m.Role == activity.RoleUser {
				id = m.ID
				break
			}
		}
	}
	return &activity.ChannelAccount{ID: id, Role: activity.RoleUser}
}

func member(a *activity.ChannelAccount) store.Member {
	return store.Member{ID: a.ID, Name: a.Name, Role: a.Role}
}

// addMembers adds to cv the members a conversation has once started, the bot and then user
// (when not ""), each unless present, and returns the ones it added: the membersAdded of the
// conversationUpdate that announces them, so that the bot hears of each member once.
func (s *Server) addMembers(cv *store.Conversation, user store.Member) []store.Member {
	var added []store.Member
	if !hasBot(cv.Members) {
		added = append(added, member(s.botAccount(*cv)))
	}
	if user.ID != "" && !containsMember(cv.Members, user.ID) && !containsMember(added, user.ID) {
		added = append(added, user)
	}
	cv.Members = append(cv.Members, added...)
	return added
}

// conversationUpdate is the activity that tells the bot who joined (DIRECTLINE.md §1.5). It is
// not a log entry: clients never see it and it takes no seq (DESIGN invariant 8), so its id is
// outside the "<conversationId>|<seq>" space. from is the joining user when known, else an
// account named after the conversation (the hosted service's system updates came from the
// conversation id).
func (s *Server) conversationUpdate(conv store.Conversation, added []store.Member, from string) *activity.Activity {
	if from == "" {
		from = conv.ID
	}
	accounts := make([]*activity.ChannelAccount, len(added))
	for i, m := range added {
		accounts[i] = &activity.ChannelAccount{ID: m.ID, Name: m.Name, Role: m.Role}
	}
	raw, _ := json.Marshal(accounts) // ChannelAccounts always encode
	return &activity.Activity{
		Type:         activity.TypeConversationUpdate,
		ID:           conv.ID + "|" + conversationUpdateIDPrefix + uuid.NewString(),
		Timestamp:    activity.FormatTimestamp(s.tokens.now()),
		ChannelID:    channelID,
		ServiceURL:   s.serviceURL,
		From:         &activity.ChannelAccount{ID: from, Role: activity.RoleUser},
		Recipient:    s.botAccount(conv),
		Conversation: &activity.ConversationAccount{ID: conv.ID},
		Extra:        map[string]json.RawMessage{"membersAdded": raw},
	}
}

// conversationUpdateIDPrefix starts the part after "|" of a conversationUpdate's id.
const conversationUpdateIDPrefix = "cu-"

// sendConversationUpdate delivers a conversationUpdate adding members. Its failure is logged, not
// returned: the start or the user's activity it precedes must not fail because of it.
func (s *Server) sendConversationUpdate(ctx context.Context, conv store.Conversation, added []store.Member, from string) {
	if s.bot == nil || len(added) == 0 {
		return
	}
	cu := s.conversationUpdate(conv, added, from)
	err := s.bot.Deliver(ctx, conv, cu, 0)
	if err == nil {
		return
	}
	s.log.Warn("conversationUpdate not delivered", "conversation", conv.ID, "err", err)
	if !nothingSent(err) {
		return
	}
	// The bot never heard of them: they are members again only once it does, so the next
	// activity announces them first (joinUser).
	if _, err := s.store.UpdateConversation(context.WithoutCancel(ctx), conv.ID, func(cv *store.Conversation) error {
		cv.Members = slices.DeleteFunc(cv.Members, func(m store.Member) bool { return containsMember(added, m.ID) })
		return nil
	}); err != nil {
		s.log.Warn("conversationUpdate not delivered and its members kept", "conversation", conv.ID, "err", err)
	}
}

// nothingSent reports a delivery error after which the bot surely has nothing: no connection,
// no token, or an endpoint not used.
func nothingSent(err error) bool {
	return errors.Is(err, bot.ErrUnreachable) || errors.Is(err, bot.ErrCredentials) ||
		errors.Is(err, bot.ErrBadEndpoint) || errors.Is(err, ErrConversationEndpoint)
}

// joinUser adds user to the conversation's members if absent and then sends the bot one
// conversationUpdate with [user], before the user's first activity (field case R17 case B); with
// [bot, user] when the conversation was never started, so the bot is announced too. The
// membership change is one store transaction, so concurrent first activities send one update.
func (s *Server) joinUser(ctx context.Context, conv store.Conversation, user *activity.ChannelAccount) (store.Conversation, error) {
	if containsMember(conv.Members, user.ID) && hasBot(conv.Members) {
		return conv, nil
	}
	m := store.Member{ID: user.ID, Name: user.Name, Role: activity.RoleUser}
	var added []store.Member
	conv, err := s.store.UpdateConversation(ctx, conv.ID, func(cv *store.Conversation) error {
		added = s.addMembers(cv, m)
		return nil
	})
	if err != nil {
		return conv, err
	}
	s.sendConversationUpdate(ctx, conv, added, m.ID)
	return conv, nil
}

// hasBot reports whether the bot is among ms. By role, not id: the bot's id may be learnt after it
// was announced (propBotID), and it is announced once.
func hasBot(ms []store.Member) bool {
	for _, m := range ms {
		if m.Role == activity.RoleBot {
			return true
		}
	}
	return false
}

func containsMember(ms []store.Member, id string) bool {
	for _, m := range ms {
		if m.ID == id {
			return true
		}
	}
	return false
}
