package activity

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/directline-go/directline/activity/jsonscan"
)

// Channel-data members this service reads or writes.
const (
	// KeySequenceID is Web Chat's sort key: a JSON integer equal to the activity's log sequence
	// (Web Chat: getLogicalTimestamp; DESIGN invariant 2).
	KeySequenceID = "webchat:sequence-id"
	// KeyClientActivityID is the id Web Chat gives an outgoing activity to match its echo.
	KeyClientActivityID = "clientActivityID"
)

// TimestampLayout is the service's timestamp format: UTC with exactly three fractional digits.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// FormatTimestamp formats t as TimestampLayout in UTC.
func FormatTimestamp(t time.Time) string { return t.UTC().Format(TimestampLayout) }

// ParseTimestamp parses a timestamp in TimestampLayout (or any RFC 3339 form) to a time.
func ParseTimestamp(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// seqDigits is the minimum width of the sequence part of an activity id (Direct Line 3.0 uses 7).
const seqDigits = 7

// FormatID returns the activity id for seq in a conversation: "<conversationId>|<seq, 7+ digits>"
// (DESIGN invariant 4; Direct Line 3.0 ids look like "abc|0000001").
func FormatID(conversationID string, seq uint64) string {
	s := strconv.FormatUint(seq, 10)
	if len(s) < seqDigits {
		s = strings.Repeat("0", seqDigits-len(s)) + s
	}
	return conversationID + "|" + s
}

// ErrBadID is returned by ParseID for ids that are not "<conversationId>|<digits>".
var ErrBadID = errors.New("activity id is not <conversationId>|<sequence>")

// ParseID splits an id made by FormatID into conversation id and seq.
func ParseID(id string) (conversationID string, seq uint64, err error) {
	i := strings.LastIndexByte(id, '|')
	if i <= 0 || i == len(id)-1 {
		return "", 0, ErrBadID
	}
	digits := id[i+1:]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return "", 0, ErrBadID
		}
	}
	seq, err = strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return "", 0, ErrBadID
	}
	return id[:i], seq, nil
}

// Stamp sets the fields the store owns: id, timestamp and channelData["webchat:sequence-id"].
func (a *Activity) Stamp(id string, seq uint64, timestamp string) {
	a.ID = id
	a.Timestamp = timestamp
	a.SetChannelData(KeySequenceID, json.RawMessage(strconv.FormatUint(seq, 10)))
}

// SetChannelData sets one channelData member to raw JSON, creating channelData when absent.
func (a *Activity) SetChannelData(key string, raw json.RawMessage) {
	if a.ChannelData == nil {
		a.ChannelData = map[string]json.RawMessage{}
	} else {
		a.ChannelData = cloneRaw(a.ChannelData)
	}
	a.ChannelData[key] = raw
}

// SequenceID returns channelData["webchat:sequence-id"] when it is a JSON integer >= 0.
func (a *Activity) SequenceID() (uint64, bool) {
	raw, ok := a.ChannelData[KeySequenceID]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	return n, err == nil
}

// ClientActivityID returns channelData.clientActivityID when it is a non-empty string.
func (a *Activity) ClientActivityID() string {
	return a.channelDataString(KeyClientActivityID)
}

func (a *Activity) channelDataString(key string) string {
	raw, ok := a.ChannelData[key]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// LocalTimestamp returns the client's localTimestamp string as sent, or "".
func (a *Activity) LocalTimestamp() string {
	var s string
	if raw, ok := a.Extra["localTimestamp"]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// IsTyping reports whether the activity is a typing activity (plain or livestream revision);
// Direct Line delivers those live only, never in history (DESIGN invariant 8).
func (a *Activity) IsTyping() bool { return a.Type == TypeTyping }

// Validate checks what every activity posted to the service needs: a type, and entities that
// are JSON objects (the Bot Framework schema's Entity; Web Chat reads each entity's members, and a
// null entry throws in its readers). Errors are *FieldError.
func (a *Activity) Validate() error {
	if a.Type == "" {
		return &FieldError{Field: "type", Reason: "is required"}
	}
	if len(a.Type) > 64 {
		return &FieldError{Field: "type", Reason: fmt.Sprintf("is longer than %d characters", 64)}
	}
	for i, e := range a.Entities {
		if t := jsonscan.TrimSpace(e); len(t) == 0 || t[0] != '{' {
			return &FieldError{Field: fmt.Sprintf("entities[%d]", i), Reason: "must be a JSON object"}
		}
	}
	return nil
}
