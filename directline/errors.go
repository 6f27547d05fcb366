package directline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/directline/bot"
	"github.com/directline-go/directline/store"
)

// Error is one entry of the error catalogue: an HTTP status, the Direct Line error code and a
// message. It is written as the Direct Line ErrorResponse {"error":{"code","message"}}
// (Direct Line 3.0: "ErrorResponse" on every 4xx/5xx; codes are stable, messages are not).
//
// Domain code returns catalogue entries (or entries with a more precise message, see Msg) or the
// typed errors of the packages below; writeError is the one place that turns any error into a
// response.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// Is reports whether target is the same catalogue entry (same status and code), so
// errors.Is(err, ErrTokenExpired) holds for an entry with a more precise message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status && t.Code == e.Code
}

// Msg returns a copy of the entry with a more precise message.
func (e *Error) Msg(format string, args ...any) *Error {
	return &Error{Status: e.Status, Code: e.Code, Message: fmt.Sprintf(format, args...)}
}

// Direct Line error codes (Direct Line 3.0 API reference and the codes the hosted service and the
// Bot Framework Emulator answer with).
const (
	CodeBadArgument         = "BadArgument"
	CodeMissingProperty     = "MissingProperty"
	CodeUnauthorized        = "Unauthorized"
	CodeTokenExpired        = "TokenExpired"
	CodeForbidden           = "Forbidden"
	CodeNotFound            = "NotFound"
	CodeMessageSizeTooBig   = "MessageSizeTooBig"
	CodeStreamConcluded     = "StreamConcluded"
	CodeBotRejectedActivity = "BotRejectedActivity"
	CodeBotTimeout          = "BotTimeout"
	CodeBotUnreachable      = "BotUnreachable"
	CodeServiceError        = "ServiceError"
	CodeServiceUnavailable  = "ServiceUnavailable"
)

// The catalogue. A 403 means an invalid or expired credential and nothing else, because Web Chat
// ends the session on any 403 (DirectLineJS sets ExpiredToken).
var (
	// ErrBadArgument: malformed JSON, a known member of the wrong type, a bad query parameter.
	ErrBadArgument = &Error{http.StatusBadRequest, CodeBadArgument, "bad argument"}
	// ErrMissingProperty: a required member is absent (for example an activity without type).
	ErrMissingProperty = &Error{http.StatusBadRequest, CodeMissingProperty, "missing property"}
	// ErrUnauthorized: no Authorization header, or not "Bearer <secret-or-token>".
	ErrUnauthorized = &Error{http.StatusUnauthorized, CodeUnauthorized, "missing or malformed Authorization header"}
	// ErrTokenExpired: the token is expired, not yet valid, or not one of ours.
	ErrTokenExpired = &Error{http.StatusForbidden, CodeTokenExpired, "token expired or invalid"}
	// ErrForbidden: a valid credential that does not cover the request (a token for another
	// conversation, or a token where a secret is required).
	ErrForbidden = &Error{http.StatusForbidden, CodeForbidden, "the credential does not allow this request"}
	// ErrNotFound: unknown conversation, activity or route.
	ErrNotFound = &Error{http.StatusNotFound, CodeNotFound, "not found"}
	// ErrFileNotFound: attachment download with an unknown id or an invalid or expired link; the
	// hosted service answers 404 BadArgument "File not found" (BotFramework-Services#255).
	ErrFileNotFound = &Error{http.StatusNotFound, CodeBadArgument, "File not found"}
	// ErrMethodNotAllowed: a known path with a method it does not serve.
	ErrMethodNotAllowed = &Error{http.StatusMethodNotAllowed, CodeBadArgument, "method not allowed"}
	// ErrMessageSizeTooBig: an activity or an uploaded file over the configured limit.
	ErrMessageSizeTooBig = &Error{http.StatusRequestEntityTooLarge, CodeMessageSizeTooBig, "message size too big"}
	// ErrStreamConcluded: a bot's livestream revision after the stream's final activity (DESIGN
	// invariant 10): 409, as the stream's state, not the request, is what conflicts.
	ErrStreamConcluded = &Error{http.StatusConflict, CodeStreamConcluded, "the livestream has already concluded"}
	// ErrBotRejectedActivity: the bot answered the delivery with an error status in time
	// (bot.RejectedError), or closed the connection without an answer (bot.ErrNoResponse).
	ErrBotRejectedActivity = &Error{http.StatusBadGateway, CodeBotRejectedActivity, "Failed to send activity: bot returned an error"}
	// ErrBotTimeout: the bot's request ran out of time before the ack wait ended (bot.ErrTimeout,
	// only when the bot timeout is not longer than the ack timeout). A bot still working when the
	// ack wait ends is not an error: the client gets 200 (field case R07).
	ErrBotTimeout = &Error{http.StatusBadGateway, CodeBotTimeout, "Failed to send activity: bot timed out"}
	// ErrBotUnreachable: the bot's endpoint could not be reached (bot.ErrUnreachable: connection
	// refused, no route, DNS), is not a URL (bot.ErrBadEndpoint), or no token could be obtained for
	// it (bot.ErrCredentials). Nothing reached the bot.
	ErrBotUnreachable = &Error{http.StatusBadGateway, CodeBotUnreachable, "Failed to send activity: bot unreachable"}
	// ErrServiceError: an unexpected failure inside the service (logged, never detailed).
	ErrServiceError = &Error{http.StatusInternalServerError, CodeServiceError, "internal service error"}
	// ErrServiceUnavailable: the service is shutting down.
	ErrServiceUnavailable = &Error{http.StatusServiceUnavailable, CodeServiceUnavailable, "service is shutting down"}
)

// toError maps any error to its catalogue entry. The bool is false for errors that are not the
// client's fault and should be logged.
func toError(err error) (*Error, bool) {
	var (
		e        *Error
		fieldErr *activity.FieldError
		sizeErr  *http.MaxBytesError
		httpErr  *echo.HTTPError
		rejected *bot.RejectedError
	)
	switch {
	case errors.As(err, &e):
		return e, e.Status < 500
	case errors.As(err, &fieldErr):
		if fieldErr.Reason == "is required" {
			return ErrMissingProperty.Msg("%s %s", fieldErr.Field, fieldErr.Reason), true
		}
		return ErrBadArgument.Msg("%s %s", fieldErr.Field, fieldErr.Reason), true
	case errors.As(err, &rejected):
		return ErrBotRejectedActivity.Msg("Failed to send activity: bot returned %d", rejected.Status), true
	case errors.Is(err, bot.ErrNoResponse):
		return ErrBotRejectedActivity.Msg("Failed to send activity: bot closed the connection without an answer"), true
	case errors.Is(err, bot.ErrUnreachable), errors.Is(err, bot.ErrBadEndpoint):
		return ErrBotUnreachable, true
	case errors.Is(err, ErrConversationEndpoint):
		return ErrBotUnreachable.Msg("Failed to send activity: this conversation was started with a bot endpoint of its own, which a bot with an app id does not use"), true
	case errors.Is(err, bot.ErrCredentials):
		return ErrBotUnreachable.Msg("Failed to send activity: the service could not get a token to call the bot with"), false
	case errors.Is(err, bot.ErrTimeout):
		return ErrBotTimeout, true
	case errors.Is(err, bot.ErrClosed):
		return ErrServiceUnavailable, true
	case errors.As(err, &sizeErr):
		return ErrMessageSizeTooBig.Msg("request body is larger than %d bytes", sizeErr.Limit), true
	case errors.Is(err, store.ErrConversationNotFound):
		return ErrNotFound.Msg("conversation not found"), true
	case errors.Is(err, store.ErrActivityNotFound):
		return ErrNotFound.Msg("activity not found"), true
	case errors.Is(err, store.ErrAttachmentNotFound):
		return ErrFileNotFound, true
	case errors.Is(err, store.ErrClosed):
		return ErrServiceUnavailable, true
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads the answer.
		return ErrServiceUnavailable.Msg("request canceled"), true
	case errors.Is(err, io.ErrUnexpectedEOF):
		// The body ended before its Content-Length: the client hung up or sent too little.
		return ErrBadArgument.Msg("the request body ended early"), true
	case errors.As(err, &httpErr):
		switch httpErr.Code {
		case http.StatusNotFound:
			return ErrNotFound, true
		case http.StatusMethodNotAllowed:
			return ErrMethodNotAllowed, true
		case http.StatusRequestEntityTooLarge:
			return ErrMessageSizeTooBig, true
		}
		if httpErr.Code >= 400 && httpErr.Code < 500 {
			return &Error{httpErr.Code, CodeBadArgument, http.StatusText(httpErr.Code)}, true
		}
	}
	return ErrServiceError, false
}

// errorBody is the Direct Line ErrorResponse.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// errorAnswered marks, in the echo context, a request whose error handleError has answered.
const errorAnswered = "directline.errorAnswered"

// handleError is the echo HTTPErrorHandler: the one place that writes errors. It writes nothing
// once the response is committed, which includes a WebSocket upgrade (the connection is hijacked
// and any later write would corrupt it).
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		// The request logger hands every error here, and echo hands it again at the end: only an
		// error no call here answered is worth a line.
		if c.Get(errorAnswered) == nil && !errors.Is(err, context.Canceled) {
			s.log.Debug("error after response was committed", "path", c.Request().URL.Path, "err", err)
		}
		return
	}
	c.Set(errorAnswered, true)
	e, clientFault := toError(err)
	if !clientFault {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if e.Status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", "Bearer")
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(e.Status)
		return
	}
	var body errorBody
	body.Error.Code, body.Error.Message = e.Code, e.Message
	_ = c.JSON(e.Status, body)
}
