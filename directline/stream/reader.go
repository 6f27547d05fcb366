package stream

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// The server reads client frames itself (RFC 6455 §5.2) straight from the socket instead of
// through gorilla's reader: a stream's client sends only keep-alives, pongs and a close, and a
// reader that waits on the socket with a shallow call stack and a 125-byte buffer keeps an idle
// stream's goroutine at the smallest stack size. Writes still go through gorilla.

// Opcodes (RFC 6455 §5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// maxControlPayload is the largest payload of a control frame (RFC 6455 §5.5).
const maxControlPayload = 125

// errProtocol is a frame that breaks RFC 6455; the server closes with 1002.
var errProtocol = errors.New("websocket protocol error")

// errTooBig is a client message over maxClientFrame; the server closes with 1009.
var errTooBig = errors.New("client message too big")

// frameReader reads the frames of one client.
type frameReader struct {
	conn io.Reader
	// buf holds a part of a frame header, a control frame's payload or data being discarded.
	buf [maxControlPayload]byte
	// inMessage is set between the first and the final frame of a fragmented message.
	inMessage bool
	// size is how many payload bytes the current message has had.
	size int64
}

// frame is one frame header.
type frame struct {
	fin    bool
	op     byte
	length int64
	mask   [4]byte
}

// next reads the next frame header and checks it against RFC 6455 as it applies to frames from
// a client: masked, no reserved bits (no extension is negotiated), known opcodes, control
// frames unfragmented and short, continuation frames only inside a message.
func (r *frameReader) next() (frame, error) {
	var f frame
	b := r.buf[:2]
	if _, err := io.ReadFull(r.conn, b); err != nil {
		return f, err
	}
	f.fin = b[0]&0x80 != 0
	f.op = b[0] & 0x0F
	masked := b[1]&0x80 != 0
	f.length = int64(b[1] & 0x7F)
	if b[0]&0x70 != 0 || !masked {
		return f, errProtocol
	}
	switch f.length {
	case 126:
		if _, err := io.ReadFull(r.conn, r.buf[:2]); err != nil {
			return f, err
		}
		f.length = int64(binary.BigEndian.Uint16(r.buf[:2]))
	case 127:
		if _, err := io.ReadFull(r.conn, r.buf[:8]); err != nil {
			return f, err
		}
		n := binary.BigEndian.Uint64(r.buf[:8])
		if n>>63 != 0 {
			return f, errProtocol
		}
		f.length = int64(n)
	}
	if _, err := io.ReadFull(r.conn, r.buf[:4]); err != nil {
		return f, err
	}
	copy(f.mask[:], r.buf[:4])
	switch f.op {
	case opClose, opPing, opPong:
		if !f.fin || f.length > maxControlPayload {
			return f, errProtocol
		}
	case opText, opBinary:
		if r.inMessage {
			return f, errProtocol
		}
		r.size = 0
	case opContinuation:
		if !r.inMessage {
			return f, errProtocol
		}
	default:
		return f, errProtocol
	}
	return f, nil
}

// control reads a control frame's payload, unmasked.
func (r *frameReader) control(f frame) ([]byte, error) {
	p := r.buf[:f.length]
	if _, err := io.ReadFull(r.conn, p); err != nil {
		return nil, err
	}
	for i := range p {
		p[i] ^= f.mask[i&3]
	}
	return p, nil
}

// discard skips a data frame's payload; a message over maxClientFrame is errTooBig.
func (r *frameReader) discard(f frame) error {
	r.size += f.length
	if r.size > maxClientFrame {
		return errTooBig
	}
	// Through buf rather than io.Copy, whose deeper calls would grow the goroutine's stack.
	for n := f.length; n > 0; {
		k, err := io.ReadFull(r.conn, r.buf[:min(n, int64(len(r.buf)))])
		if err != nil {
			return err
		}
		n -= int64(k)
	}
	r.inMessage = !f.fin
	return nil
}

// closeReply is the close frame answering a client's close payload p (RFC 6455 §5.5.1: echo the
// status code), or errProtocol when p is not a valid close payload.
func closeReply(p []byte) ([]byte, error) {
	if len(p) == 0 {
		return []byte{}, nil
	}
	if len(p) == 1 || !utf8.Valid(p[2:]) {
		return nil, errProtocol
	}
	code := int(binary.BigEndian.Uint16(p))
	if !validCloseCode(code) {
		return nil, errProtocol
	}
	return websocket.FormatCloseMessage(code, ""), nil
}

// validCloseCode reports a status code a peer may send (RFC 6455 §7.4; IANA registry).
func validCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014, code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// read reads and discards client frames until the connection ends, answering pings and a close,
// and says why it ended: "client" (the client closed or hung up), "dead_peer" (the reply to the
// server's close did not come in time) or "network" (the connection failed or broke the
// protocol). Frames are handled in another function and nothing on the way sets a deadline or
// takes a lock, so the goroutine, which spends its life waiting here, stays at the smallest stack
// size. Silent clients are dropped by the hub's clock (clock.go).
func (c *wsConn) read() string {
	r := &frameReader{conn: c.ws.NetConn()}
	for {
		f, err := r.next()
		if err == nil {
			err = c.handle(r, f)
		}
		if err != nil {
			return c.readFailed(err)
		}
	}
}

// errClientClosed ends the reader after the client's close frame was answered.
var errClientClosed = errors.New("client closed the stream")

// handle reads the rest of frame f: it discards data, answers a ping with a pong and a close
// with a close (then returning errClientClosed), and records that the client was heard from.
func (c *wsConn) handle(r *frameReader, f frame) error {
	if f.op < opClose {
		if err := r.discard(f); err != nil {
			return err
		}
		c.heardFrom()
		return nil
	}
	p, err := r.control(f)
	if err != nil {
		return err
	}
	c.heardFrom()
	switch f.op {
	case opPing:
		c.reply(websocket.PongMessage, p)
	case opClose:
		reply, err := closeReply(p)
		if err != nil {
			return err
		}
		c.reply(websocket.CloseMessage, reply)
		return errClientClosed
	}
	return nil
}

// reply writes a control frame; a failure shows on the connection, so it is not reported here.
func (c *wsConn) reply(op int, payload []byte) {
	_ = c.ws.WriteControl(op, payload, time.Now().Add(c.hub.opts.WriteTimeout))
}

// readFailed closes the connection as err requires and names why it ended.
func (c *wsConn) readFailed(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, errClientClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// A client that hangs up without a close frame left all the same.
		return "client"
	case errors.Is(err, errProtocol):
		c.reply(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseProtocolError, ""))
	case errors.Is(err, errTooBig):
		c.reply(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseMessageTooBig, ""))
	case errors.As(err, &ne) && ne.Timeout():
		return "dead_peer"
	}
	return "network"
}
