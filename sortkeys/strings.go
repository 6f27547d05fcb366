package sortkeys

import (
	"math"
	"unsafe"

	"github.com/directline-go/directline/activity/jsonscan"
)

// A valueCode is a type or role as its index in commonValues, or valueOther: a record keeps
// them in one byte each where a string takes sixteen.
type valueCode uint8

const (
	valueEmpty valueCode = iota
	valueMessage
	valueTyping
	valueEvent
	valueInvoke
	valueConversationUpdate
	valueEndOfConversation
	valueTrace
	valueUser
	valueBot
	valueChannel
	valueOther valueCode = math.MaxUint8
)

// commonValues are the types and roles most activities share.
var commonValues = [...]string{valueEmpty: "", valueMessage: "message", valueTyping: "typing",
	valueEvent: "event", valueInvoke: "invoke", valueConversationUpdate: "conversationUpdate",
	valueEndOfConversation: "endOfConversation", valueTrace: "trace", valueUser: "user", valueBot: "bot",
	valueChannel: "channel"}

// codeOf is s's index in commonValues, or valueOther. A switch compares the constants inline, at
// a fraction of the cost of a search or a map.
func codeOf[T string | []byte](s T) valueCode {
	switch string(s) {
	case "":
		return valueEmpty
	case "message":
		return valueMessage
	case "typing":
		return valueTyping
	case "event":
		return valueEvent
	case "invoke":
		return valueInvoke
	case "conversationUpdate":
		return valueConversationUpdate
	case "endOfConversation":
		return valueEndOfConversation
	case "trace":
		return valueTrace
	case "user":
		return valueUser
	case "bot":
		return valueBot
	case "channel":
		return valueChannel
	}
	return valueOther
}

// internedOf is jsonscan.StringValue for values that are usually one of commonValues: those are
// read without allocating.
func internedOf(v []byte) (string, bool) {
	if len(v) >= 2 && v[0] == '"' {
		if c := codeOf(v[1 : len(v)-1]); c != valueOther {
			return commonValues[c], true
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
