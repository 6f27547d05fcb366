package sortkeys

import (
	"unsafe"

	"github.com/directline-go/directline/activity/jsonscan"
)

// internedOf is jsonscan.StringValue for values that are usually one of the strings most
// activities share (types and roles): those are read without allocating, through a switch rather
// than a map.
func internedOf(v []byte) (string, bool) {
	if len(v) >= 2 && v[0] == '"' {
		switch string(v[1 : len(v)-1]) {
		case "message":
			return "message", true
		case "typing":
			return "typing", true
		case "event":
			return "event", true
		case "invoke":
			return "invoke", true
		case "conversationUpdate":
			return "conversationUpdate", true
		case "endOfConversation":
			return "endOfConversation", true
		case "trace":
			return "trace", true
		case "user":
			return "user", true
		case "bot":
			return "bot", true
		case "channel":
			return "channel", true
		}
	}
	return jsonscan.StringValue(v)
}

// viewOf is jsonscan.StringValue without a copy for a plain string: the string shares the bytes
// of v, which must not change afterwards (a replay keeps every activity it was given as it was
// given).
func viewOf(v []byte) (string, bool) {
	if inner, ok := jsonscan.PlainString(v); ok {
		return unsafe.String(unsafe.SliceData(inner), len(inner)), true
	}
	return jsonscan.StringValue(v)
}
