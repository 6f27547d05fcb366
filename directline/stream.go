package directline

import (
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
)

// stream is GET /conversations/{id}/stream?watermark=W&t=T, the WebSocket of a streamUrl. The
// upgrade carries no Authorization header; t is the 60-second stream credential from start or
// reconnect, and the stream ends when the conversation token it was issued with expires. A
// rejected upgrade is an ordinary JSON error response, which a browser only sees as a failed
// WebSocket (DirectLineJS then reconnects through GET /conversations/{id}).
func (s *Server) stream(c echo.Context) error {
	id, err := conversationParam(c)
	if err != nil {
		return err
	}
	cl, err := s.tokens.verify(c.QueryParam("t"), useStream)
	if err != nil {
		return err
	}
	if cl.Conv != id {
		return ErrForbidden.Msg("the stream credential is not valid for this conversation")
	}
	w, ok, err := ParseWatermark(c.QueryParam("watermark"))
	if err != nil {
		return err
	}
	// The handshake's own checks (RFC 6455 §4.2.1), made here so that a refusal is the JSON
	// error body rather than the WebSocket library's plain text.
	if r := c.Request(); !websocket.IsWebSocketUpgrade(r) || r.Header.Get("Sec-WebSocket-Version") != "13" || r.Header.Get("Sec-WebSocket-Key") == "" {
		return ErrBadArgument.Msg("the stream URL takes a WebSocket upgrade request (version 13, with Sec-WebSocket-Key)")
	}
	conv, err := s.current.Conversation(c.Request().Context(), id)
	if err != nil {
		return err
	}
	// A watermark past the end (another data file, a mistyped resume) would hide the entries up
	// to it; from the end, the client gets them, and drops any it has by id.
	w = min(w, conv.LastSeq)
	s.hub.ServeWS(c.Response(), c.Request(), id, w, ok, time.Unix(cl.TokenExpires, 0))
	return nil
}
