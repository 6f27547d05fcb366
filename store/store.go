// Package store is the durable, ordered conversation log behind the service.
//
// Every write to a conversation is one log entry with the next integer sequence number (seq):
// 1, 2, 3, ... with no holes and no reuse, taken in the same write transaction that stores the
// entry, so seq order is commit order (DESIGN invariant 1). The seq is the activity's
// channelData["webchat:sequence-id"], the watermark clients resume from, and the number inside its
// id "<conversationId>|<seq, 7+ digits>". A write returns only after the entry is on disk.
//
// Implementations must pass the contract suite in store/storetest.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/directline-go/directline/activity"
)

// Errors returned by every Store. Callers compare with errors.Is.
var (
	// ErrConversationNotFound: the conversation id was never created.
	ErrConversationNotFound = errors.New("conversation not found")
	// ErrActivityNotFound: no activity with that id in the conversation (or it was deleted).
	ErrActivityNotFound = errors.New("activity not found")
	// ErrAttachmentNotFound: no attachment with that id in the conversation.
	ErrAttachmentNotFound = errors.New("attachment not found")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
)

// EntryKind says what a log entry records.
type EntryKind uint8

const (
	// KindActivity is a new activity: its seq is its sequence id.
	KindActivity EntryKind = 1
	// KindRevision is a new revision of an earlier activity: it keeps that activity's id,
	// sequence id and timestamp (DESIGN invariant 9) but takes a seq (a watermark) of its own.
	KindRevision EntryKind = 2
)

// Entry is one log entry.
type Entry struct {
	// Seq is the entry's position in the conversation log (1-based); a client that has this
	// entry resumes with watermark = Seq.
	Seq uint64
	// Kind is KindActivity or KindRevision.
	Kind EntryKind
	// Activity is the stamped activity (for a revision: the revised activity, with the original
	// id, timestamp and sequence id).
	Activity *activity.Activity
	// Ephemeral entries (typing activities, plain or livestream revisions) are delivered live but
	// never returned by ReadAfter (DESIGN invariant 8).
	Ephemeral bool
	// JSON, when not nil, is Activity as activity.Encode writes it, made by the store while it had
	// the encoding at hand, so that fan-out and bot delivery need not encode the activity again.
	// It is shared between the copies of an entry and must not be modified. Nil means unknown:
	// encode Activity.
	JSON []byte
}

// Member is a member of a conversation (Bot Connector ChannelAccount).
type Member struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	Role string `json:"role,omitempty"`
}

// Conversation is a conversation's metadata.
type Conversation struct {
	ID string `json:"id"`
	// Created is when the conversation was created (UTC).
	Created time.Time `json:"created"`
	// UserID is the user bound at creation (from the token or the start body), or "".
	UserID string `json:"userId,omitempty"`
	// BotEndpoint overrides the service's default bot endpoint for this conversation ("" = default).
	BotEndpoint string `json:"botEndpoint,omitempty"`
	// Members are the conversation's members as the bot sees them.
	Members []Member `json:"members,omitempty"`
	// Started is set once the conversation has been started (conversationUpdate sent to the bot).
	Started bool `json:"started,omitempty"`
	// LastSeq is the seq of the newest entry (0 for an empty log).
	LastSeq uint64 `json:"lastSeq"`
	// Properties keeps other metadata owned by callers (locale, bot flags, ...).
	Properties map[string]string `json:"properties,omitempty"`
}

// AppendResult is the outcome of Append.
type AppendResult struct {
	Entry
	// Duplicate is true when an activity with the same channelData.clientActivityID was already in
	// the conversation: Entry is then that original entry and nothing was stored.
	Duplicate bool
}

// Attachment is an uploaded file kept with its conversation.
type Attachment struct {
	ID          string
	ContentType string
	Name        string
	Data        []byte
	Created     time.Time
}

// Store is the conversation log.
//
// Append is the only way to create log entries. It takes the next seq, stamps the activity (id,
// timestamp strictly increasing along seq with exactly 3 fractional digits, and
// channelData["webchat:sequence-id"] = seq) and stores it in one transaction, and returns after
// fsync. Entries are handed to the commit hook (see Options of the implementation) after commit, in
// seq order per conversation.
type Store interface {
	// CreateConversation creates c if no conversation with c.ID exists. It returns the stored
	// conversation and whether it was created now.
	CreateConversation(ctx context.Context, c Conversation) (Conversation, bool, error)
	// Conversation returns a conversation's metadata, or ErrConversationNotFound.
	Conversation(ctx context.Context, id string) (Conversation, error)
	// UpdateConversation applies fn to the stored metadata in one transaction. fn may run more
	// than once and must not have side effects. ID and LastSeq changes are ignored.
	UpdateConversation(ctx context.Context, id string, fn func(*Conversation) error) (Conversation, error)
	// Conversations lists conversations with id > after in id order, at most limit.
	Conversations(ctx context.Context, after string, limit int) ([]Conversation, error)

	// Append stores a new activity (see the type's doc). a is not modified; the stamped copy is
	// in the result. A resend with a clientActivityID already in the conversation returns the
	// original entry with Duplicate set and stores nothing (DESIGN invariant 6).
	Append(ctx context.Context, conversationID string, a *activity.Activity) (AppendResult, error)
	// AppendIf is Append with a precondition checked in the same write transaction, so that a
	// rule spanning several activities (a sealed livestream, DESIGN invariant 10) holds under
	// concurrent writers and survives a crash together with the entry. check runs after the
	// clientActivityID dedupe (a duplicate returns the original without calling it) and before
	// the seq is taken, on a copy of the conversation's metadata: an error from check aborts the
	// append and is returned as is, nothing stored; changes check makes to Properties are stored
	// with the entry (other fields are ignored). check runs inside the store's writer: it must be
	// quick, must not call the store, and may run only once.
	AppendIf(ctx context.Context, conversationID string, a *activity.Activity, check func(*Conversation) error) (AppendResult, error)
	// Update appends a KindRevision entry replacing the activity with id activityID by revised,
	// which keeps the original id, timestamp and sequence id. ErrActivityNotFound if there is no
	// such (undeleted) activity.
	Update(ctx context.Context, conversationID, activityID string, revised *activity.Activity) (Entry, error)
	// Delete removes the activity from history (ReadAfter no longer returns it). It takes no seq.
	Delete(ctx context.Context, conversationID, activityID string) error
	// Activity returns the latest revision of one activity, or ErrActivityNotFound.
	Activity(ctx context.Context, conversationID, activityID string) (*activity.Activity, error)

	// ReadAfter returns history after watermark, at most limit entries, in seq order: the latest
	// revision of each non-ephemeral, undeleted activity (at its original place when that is after
	// watermark, else as the newest revision entry). The returned watermark is the seq of the last
	// entry looked at, which covers skipped ephemeral entries; with nothing after watermark it is
	// the conversation's LastSeq, even for a watermark past it, so that a client never skips
	// entries it has not seen (it drops the ones it has by id). Cost is a cursor seek plus the entries
	// read, independent of the length of the history before watermark.
	ReadAfter(ctx context.Context, conversationID string, watermark uint64, limit int) ([]Entry, uint64, error)
	// ReadLog returns every entry after watermark (ephemeral and superseded revisions included,
	// each as it was written), at most limit, in seq order: the raw log for export and replay.
	ReadLog(ctx context.Context, conversationID string, watermark uint64, limit int) ([]Entry, error)

	// PutAttachment stores an attachment under att.ID in the conversation.
	PutAttachment(ctx context.Context, conversationID string, att Attachment) error
	// Attachment returns a stored attachment, or ErrAttachmentNotFound.
	Attachment(ctx context.Context, conversationID, attachmentID string) (Attachment, error)

	// Close waits for in-flight writes and closes the store; later calls return ErrClosed.
	Close() error
}

// CommitHook receives the entries of each durable commit, in seq order per conversation, from one
// goroutine at a time. It must not block: fan-out queues and returns.
type CommitHook func(conversationID string, entries []Entry)
