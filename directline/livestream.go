package directline

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// probeID stands in for the id the store will give, because livestream metadata is only read from
// activities that have an id (WEBCHAT-ORDERING §4.5).
const probeID = "pending"

// mirrorLivestream copies streaminfo-only livestream metadata into channelData and returns the
// metadata, using a stand-in id while a has none yet.
func mirrorLivestream(a *activity.Activity) (activity.Livestream, bool) {
	if a.ID == "" {
		a.ID = probeID
		defer func() { a.ID = "" }()
	}
	a.MirrorStreamInfo()
	return a.Livestream()
}

// checkLivestream applies the livestream rules to a bot's activity (WEBCHAT-ORDERING §4.5, §8;
// DESIGN invariant 10; field cases R13, R15):
//
//   - metadata only in a streaminfo entity is mirrored into channelData, never overwriting what
//     the bot set there, because Web Chat 4.18 reads channelData only;
//   - a final (streamType "final") must name, in streamId, an activity of this conversation:
//     ErrMissingProperty without streamId, ErrBadArgument for an unknown one or a shape Web Chat
//     does not recognise as a final;
//   - a revision naming a stream that already has its final is ErrStreamConcluded.
//
// The returned check, when not nil, goes to store.AppendIf: it refuses a revision of a sealed
// stream and seals the stream with its final in the same transaction, so two concurrent finals
// cannot both be stored and a seal survives a crash with the final.
func (s *Server) checkLivestream(ctx context.Context, conv store.Conversation, a *activity.Activity) (func(*store.Conversation) error, error) {
	ls, ok := mirrorLivestream(a)
	if streamType(a) == activity.StreamTypeFinal && !ok {
		if streamIDMember(a) == "" {
			return nil, ErrMissingProperty.Msg("a final livestream activity needs streamId, the id of the stream's first activity")
		}
		return nil, ErrBadArgument.Msg("not a final livestream activity Web Chat recognises: a message, or a typing activity without text")
	}
	if !ok || ls.StreamID == "" {
		return nil, nil
	}
	final := ls.StreamType == activity.StreamTypeFinal
	first, err := s.store.Activity(ctx, conv.ID, ls.StreamID)
	switch {
	case errors.Is(err, store.ErrActivityNotFound):
		if final {
			return nil, ErrBadArgument.Msg("streamId %q is not an activity of this conversation", ls.StreamID)
		}
	case err != nil:
		return nil, err
	case !startsStream(first):
		// The seal is kept under the stream's first id: a revision naming another one would
		// open a second way past it.
		return nil, ErrBadArgument.Msg("streamId %q is not the first activity of a livestream", ls.StreamID)
	}
	key := propSealedPrefix + ls.StreamID
	if conv.Properties[key] != "" {
		return nil, ErrStreamConcluded.Msg("the livestream %q already has its final activity", ls.StreamID)
	}
	return func(cv *store.Conversation) error {
		if cv.Properties[key] != "" {
			return ErrStreamConcluded.Msg("the livestream %q already has its final activity", ls.StreamID)
		}
		if final {
			cv.Properties = cloneProps(cv.Properties)
			cv.Properties[key] = "final"
		}
		return nil
	}, nil
}

// startsStream reports whether a is a livestream's first activity: it declares a streamType other
// than final and no streamId (Web Chat keys a session by it even when the rest of the metadata is
// not valid, WEBCHAT-ORDERING §5.1).
func startsStream(a *activity.Activity) bool {
	t := streamType(a)
	return t != "" && t != activity.StreamTypeFinal && streamIDMember(a) == ""
}

// streamType is the streamType the activity declares in channelData, else in its streaminfo
// entity, whether or not the rest of the metadata is valid.
func streamType(a *activity.Activity) string {
	if t := rawString(a.ChannelData["streamType"]); t != "" {
		return t
	}
	return rawString(a.StreamInfo()["streamType"])
}

// streamIDMember is the declared streamId, from channelData or the streaminfo entity.
func streamIDMember(a *activity.Activity) string {
	if id := rawString(a.ChannelData["streamId"]); id != "" {
		return id
	}
	return rawString(a.StreamInfo()["streamId"])
}

func rawString(raw []byte) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// warnPartGrouping logs when a part of a grouping carries a schema.org Message entity that Web
// Chat rejects (isPartOf @id not a blank node or URL, position not a number, ...): the activity is
// stored as sent, but Web Chat will not group it (WEBCHAT-ORDERING §4.6).
func (s *Server) warnPartGrouping(conv store.Conversation, a *activity.Activity) {
	me, err := a.MessageEntity()
	switch {
	case err != nil:
		s.log.Warn("Web Chat will not group this activity", "conversation", conv.ID, "problem", err.Error())
	case me != nil && !me.Valid:
		s.log.Warn("Web Chat will not group this activity", "conversation", conv.ID, "problem", me.Problem)
	}
}
