package main

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/directline-go/directline/activity"
)

// Verification categories (JSON: verification.by_category).
const (
	// catMissing: an echo, or with a bot the reply, never arrived.
	catMissing = "missing"
	// catDuplicate: an activity arrived more than once.
	catDuplicate = "duplicate"
	// catOrder: an activity arrived after one with a higher sequence id.
	catOrder = "out_of_order"
	// catGap: the stream skipped an activity that GET activities then returned.
	catGap = "gap"
	// catLost: positions that neither arrived nor are passed by GET's watermark.
	catLost = "lost"
	// catSortKey: webchat:sequence-id or timestamp missing or malformed, or the sequence id
	// disagrees with the id's sequence part.
	catSortKey = "sort_key"
)

// maxExamples bounds the problem descriptions kept for the report.
const maxExamples = 20

// verifier collects verification problems from every conversation.
type verifier struct {
	mu         sync.Mutex
	byCategory map[string]int64
	examples   []string
	skipped    atomic.Int64
	reconnects atomic.Int64
}

func newVerifier() *verifier { return &verifier{byCategory: map[string]int64{}} }

func (v *verifier) problem(category, format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.byCategory[category]++
	if len(v.examples) < maxExamples {
		v.examples = append(v.examples, category+": "+fmt.Sprintf(format, args...))
	}
}

// sortKeys checks the keys Web Chat sorts by: channelData["webchat:sequence-id"] a non-negative
// JSON integer (equal to the id's sequence part when the id is "<conversationId>|<digits>"), and
// a timestamp that parses as RFC 3339.
func (v *verifier) sortKeys(conversationID string, a *activity.Activity) {
	raw, ok := a.ChannelData[activity.KeySequenceID]
	switch seq, valid := a.SequenceID(); {
	case !ok:
		v.problem(catSortKey, "%s: %s has no webchat:sequence-id", conversationID, a.ID)
	case !valid:
		v.problem(catSortKey, "%s: %s has webchat:sequence-id %s, not a non-negative integer", conversationID, a.ID, raw)
	default:
		if conv, idSeq, err := activity.ParseID(a.ID); err == nil && conv == conversationID && idSeq != seq {
			v.problem(catSortKey, "%s: %s has webchat:sequence-id %d", conversationID, a.ID, seq)
		}
	}
	if a.Timestamp == "" {
		v.problem(catSortKey, "%s: %s has no timestamp", conversationID, a.ID)
	} else if _, err := activity.ParseTimestamp(a.Timestamp); err != nil {
		v.problem(catSortKey, "%s: %s has timestamp %s", conversationID, a.ID, strconv.Quote(a.Timestamp))
	}
}

// Verification is the verification section of the report (JSON: verification).
type Verification struct {
	OK         bool             `json:"ok"`
	Problems   int64            `json:"problems"`
	ByCategory map[string]int64 `json:"by_category"`
	Examples   []string         `json:"examples"`
	// SkippedPositions counts positions GET's watermark passed without an activity (typing):
	// not problems.
	SkippedPositions int64 `json:"skipped_positions"`
	Reconnects       int64 `json:"reconnects"`
}

func (v *verifier) result() Verification {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := Verification{ByCategory: map[string]int64{}, Examples: append([]string{}, v.examples...)}
	for k, n := range v.byCategory {
		r.ByCategory[k] = n
		r.Problems += n
	}
	r.OK = r.Problems == 0
	r.SkippedPositions = v.skipped.Load()
	r.Reconnects = v.reconnects.Load()
	return r
}
