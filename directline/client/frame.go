package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
)

// decode reads an ActivitySet (a stream frame or a GET answer) after one validity check and one
// split, without encoding/json's reflection: what a client does for every frame it receives.
// With sparse, each activity is read by decodeSparse instead of activity.Decode. The set keeps
// no reference to data.
func (s *ActivitySet) decode(data []byte, sparse bool) error {
	if !json.Valid(data) {
		// encoding/json names the syntax error and where it is.
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
		return errors.New("invalid JSON")
	}
	s.Activities, s.digests, s.Watermark = nil, nil, ""
	t := jsonscan.TrimSpace(data)
	if string(t) == "null" {
		return nil
	}
	var activities, watermark []byte
	repeated := false
	if jsonscan.Members(t, func(key, val []byte) {
		// encoding/json matches member names to struct fields ignoring case (bytes.EqualFold);
		// a later duplicate wins.
		switch {
		case bytes.EqualFold(key, []byte("activities")):
			repeated = repeated || activities != nil
			activities = val
		case bytes.EqualFold(key, []byte("watermark")):
			watermark = val
		}
	}) != nil {
		return errors.New("json: an ActivitySet must be a JSON object")
	}
	if repeated {
		// encoding/json decodes every duplicate in turn, and one that is not an array fails the
		// set even when a later one is.
		var check struct {
			Activities []json.RawMessage `json:"activities"`
		}
		if err := json.Unmarshal(data, &check); err != nil {
			return err
		}
	}
	if activities != nil && string(activities) != "null" {
		if activities[0] != '[' {
			return errors.New("json: ActivitySet.activities must be an array")
		}
		// A stream frame usually holds one activity.
		s.Activities = make([]*activity.Activity, 0, 1)
		s.digests = make([]uint64, 0, 1)
		var err error
		jsonscan.Elements(activities, func(r []byte) {
			if err != nil {
				return
			}
			var a *activity.Activity
			var d uint64
			if string(r) != "null" {
				if sparse {
					a, err = decodeSparse(r)
				} else {
					a, err = activity.Decode(r)
				}
				d = digest(r)
			}
			s.Activities = append(s.Activities, a)
			s.digests = append(s.digests, d)
		})
		if err != nil {
			return err
		}
	}
	w, err := decodeWatermark(watermark)
	s.Watermark = w
	return err
}

// decodeWatermark takes a watermark sent as a JSON string, a JSON number (offline-directline
// does) or null.
func decodeWatermark(w []byte) (string, error) {
	switch {
	case len(w) == 0 || string(w) == "null":
		return "", nil
	case w[0] == '"':
		s, ok := jsonscan.StringValue(w)
		if !ok {
			return "", fmt.Errorf("watermark %s is not a JSON string", w)
		}
		return s, nil
	default:
		var n json.Number
		if err := json.Unmarshal(w, &n); err != nil {
			return "", fmt.Errorf("watermark %s is neither a string nor a number", w)
		}
		return n.String(), nil
	}
}

// decodeSparse reads only the members of an activity that ordering, deduplication and matching
// need (see SubscribeOptions.Sparse); the others are skipped unread. As in activity.Decode, a
// later duplicate member wins, null is absent, and a member it reads that has the wrong type is a
// *activity.FieldError.
func decodeSparse(raw []byte) (*activity.Activity, error) {
	var typ, id, timestamp, replyTo, from, channelData []byte
	if jsonscan.Members(raw, func(key, val []byte) {
		switch string(key) {
		case "type":
			typ = val
		case "id":
			id = val
		case "timestamp":
			timestamp = val
		case "replyToId":
			replyTo = val
		case "from":
			from = val
		case "channelData":
			channelData = val
		}
	}) != nil {
		return nil, &activity.FieldError{Field: "activity", Reason: "must be a JSON object"}
	}
	a := new(activity.Activity)
	for _, f := range [...]struct {
		name string
		val  []byte
		dst  *string
	}{{"type", typ, &a.Type}, {"id", id, &a.ID}, {"timestamp", timestamp, &a.Timestamp}, {"replyToId", replyTo, &a.ReplyToID}} {
		if err := sparseString(f.name, f.val, f.dst); err != nil {
			return nil, err
		}
	}
	if from != nil && string(from) != "null" {
		var id, name, role []byte
		if jsonscan.Members(from, func(key, val []byte) {
			switch string(key) {
			case "id":
				id = val
			case "name":
				name = val
			case "role":
				role = val
			}
		}) != nil {
			return nil, &activity.FieldError{Field: "from", Reason: "must be a JSON object"}
		}
		a.From = new(activity.ChannelAccount)
		if err := sparseString("from.id", id, &a.From.ID); err != nil {
			return nil, err
		}
		if err := sparseString("from.name", name, &a.From.Name); err != nil {
			return nil, err
		}
		if err := sparseString("from.role", role, &a.From.Role); err != nil {
			return nil, err
		}
	}
	if channelData != nil && string(channelData) != "null" {
		cd := make(map[string]json.RawMessage, 2)
		if jsonscan.Members(channelData, func(key, val []byte) {
			// Copied: the frame's buffer is read into again.
			if k := string(key); k == activity.KeySequenceID || k == activity.KeyClientActivityID {
				cd[k] = bytes.Clone(val)
			}
		}) != nil {
			return nil, &activity.FieldError{Field: "channelData", Reason: "has the wrong type: expected an object"}
		}
		a.ChannelData = cd
	}
	return a, nil
}

// sparseString decodes a string member (nil when absent; null leaves dst empty).
func sparseString(field string, val []byte, dst *string) error {
	if val == nil || string(val) == "null" {
		return nil
	}
	s, ok := jsonscan.StringValue(val)
	if !ok {
		return &activity.FieldError{Field: field, Reason: "has the wrong type: expected a string"}
	}
	*dst = s
	return nil
}
