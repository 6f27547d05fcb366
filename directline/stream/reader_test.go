package stream

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// clientFrame builds a frame as a client sends it (RFC 6455 §5.2): masked unless unmasked is
// set, with the given first byte (FIN, reserved bits and opcode).
func clientFrame(b0 byte, payload []byte, unmasked bool) []byte {
	out := []byte{b0}
	maskBit := byte(0x80)
	if unmasked {
		maskBit = 0
	}
	switch n := len(payload); {
	case n < 126:
		out = append(out, maskBit|byte(n))
	case n <= 0xFFFF:
		out = append(out, maskBit|126)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
	default:
		out = append(out, maskBit|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	if unmasked {
		return append(out, payload...)
	}
	mask := [4]byte{0x12, 0x34, 0x56, 0x78}
	out = append(out, mask[:]...)
	for i, c := range payload {
		out = append(out, c^mask[i&3])
	}
	return out
}

const fin = 0x80

// The server reads client frames itself: it discards data (whole or fragmented), answers pings
// and a close, and closes with 1002 on a protocol error and 1009 on a message over 4 KiB.
func TestClientFramesRFC6455(t *testing.T) {
	big := bytes.Repeat([]byte("x"), maxClientFrame+1)
	half := bytes.Repeat([]byte("y"), maxClientFrame/2+1)
	for _, tc := range []struct {
		name   string
		frames [][]byte
		// wantClose is the server's close code, 0 when the stream stays open.
		wantClose  int
		wantReason string
		wantPong   string
	}{
		{name: "empty keep-alive", frames: [][]byte{clientFrame(fin|opText, nil, false)}},
		{name: "binary with 16-bit length", frames: [][]byte{clientFrame(fin|opBinary, bytes.Repeat([]byte{7}, 300), false)}},
		{name: "fragmented message", frames: [][]byte{
			clientFrame(opText, []byte("ab"), false),
			clientFrame(fin|opPing, []byte("between"), false),
			clientFrame(opContinuation, []byte("cd"), false),
			clientFrame(fin|opContinuation, []byte("ef"), false),
		}, wantPong: "between"},
		{name: "ping answered", frames: [][]byte{clientFrame(fin|opPing, []byte("p1"), false)}, wantPong: "p1"},
		{name: "pong", frames: [][]byte{clientFrame(fin|opPong, []byte("unasked"), false)}},
		{name: "close echoed", frames: [][]byte{clientFrame(fin|opClose, websocket.FormatCloseMessage(websocket.CloseGoingAway, "bye"), false)},
			wantClose: websocket.CloseGoingAway, wantReason: "client"},
		{name: "close without status", frames: [][]byte{clientFrame(fin|opClose, nil, false)},
			wantClose: websocket.CloseNoStatusReceived, wantReason: "client"},
		{name: "unmasked", frames: [][]byte{clientFrame(fin|opText, []byte("hi"), true)},
			wantClose: websocket.CloseProtocolError, wantReason: "network"},
		{name: "reserved bit", frames: [][]byte{clientFrame(fin|0x40|opText, []byte("hi"), false)},
			wantClose: websocket.CloseProtocolError, wantReason: "network"},
		{name: "unknown opcode", frames: [][]byte{clientFrame(fin|0x3, nil, false)},
			wantClose: websocket.CloseProtocolError, wantReason: "network"},
		{name: "fragmented ping", frames: [][]byte{clientFrame(opPing, nil, false)},
			wantClose: websocket.CloseProtocolError, wantReason: "network"},
		{name: "long ping", frames: [][]byte{clientFrame(fin|opPing, bytes.Repeat([]byte("p"), 126), false)},
			wantClose: websocket.CloseProtocolError, wantReason: "network"},
		{name: "continuation first", frames: [][]byte{clientFrame(fin|opContinuation, []byte("x"), false)},
			wantClose: websocket.CloseProtocolError, wantReason: "network"},
		{name: "new message inside a fragmented one", frames: [][]byte{clientFrame(opText, []byte("a"), false), clientFrame(fin|opText, []byte("b"), false)},
			wantClose: websocket.CloseProtocolError, wantReason: "network"},
		{name: "close with reserved code 1005", frames: [][]byte{clientFrame(fin|opClose, []byte{0x03, 0xED}, false)},
			wantClose: websocket.CloseProtocolError, wantReason: "network"},
		{name: "close with one byte", frames: [][]byte{clientFrame(fin|opClose, []byte{0x03}, false)},
			wantClose: websocket.CloseProtocolError, wantReason: "network"},
		{name: "close with invalid UTF-8", frames: [][]byte{clientFrame(fin|opClose, []byte{0x03, 0xE8, 0xFF}, false)},
			wantClose: websocket.CloseProtocolError, wantReason: "network"},
		{name: "message too big", frames: [][]byte{clientFrame(fin|opText, big, false)},
			wantClose: websocket.CloseMessageTooBig, wantReason: "network"},
		{name: "fragments too big together", frames: [][]byte{clientFrame(opBinary, half, false), clientFrame(fin|opContinuation, half, false)},
			wantClose: websocket.CloseMessageTooBig, wantReason: "network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{}, false)
			ws := e.dial(q("c"), 1)
			var mu sync.Mutex
			var pongs []string
			ws.SetPongHandler(func(data string) error {
				mu.Lock()
				pongs = append(pongs, data)
				mu.Unlock()
				return nil
			})
			ws.NetConn().SetWriteDeadline(time.Now().Add(10 * time.Second))
			for _, f := range tc.frames {
				if _, err := ws.NetConn().Write(f); err != nil {
					t.Fatal(err)
				}
			}
			if tc.wantClose != 0 {
				if code := closeCode(t, ws); code != tc.wantClose {
					t.Fatalf("close code %d, want %d", code, tc.wantClose)
				}
				e.waitConnections(0)
				if r := e.obs.reasons(); !slices.Equal(r, []string{tc.wantReason}) {
					t.Fatalf("disconnect reasons %v, want %s", r, tc.wantReason)
				}
				return
			}
			// Reading runs the pong handler; the server answers a ping whenever it reads it.
			frames := make(chan wireFrame, 1)
			go func() {
				f, err := readFrame(t, ws)
				if err != nil {
					t.Errorf("read frame: %v", err)
				}
				frames <- f
			}()
			gotPongs := func() string {
				mu.Lock()
				defer mu.Unlock()
				return strings.Join(pongs, ",")
			}
			waitFor(t, func() bool { return gotPongs() == tc.wantPong }, "pongs "+tc.wantPong)
			e.log.append("c", message("still here"), false)
			if f := <-frames; len(f.Activities) != 1 || f.Activities[0]["text"] != "still here" {
				t.Fatalf("got %+v", f)
			}
			if got := gotPongs(); got != tc.wantPong {
				t.Fatalf("pongs %q, want %q", got, tc.wantPong)
			}
			if n := e.hub.Connections(); n != 1 {
				t.Fatalf("connections %d, want 1", n)
			}
		})
	}
}

// A client that hangs up without a close frame, between frames or inside one, is counted as
// having left ("client"), not as a network failure.
func TestClientHangUpCountsAsClientLeaving(t *testing.T) {
	for _, tc := range []struct {
		name    string
		partial []byte
	}{
		{"between frames", nil},
		{"inside a frame", clientFrame(fin|opText, []byte("cut short"), false)[:5]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{}, false)
			ws := e.dial(q("c"), 1)
			if _, err := ws.NetConn().Write(tc.partial); err != nil {
				t.Fatal(err)
			}
			ws.NetConn().Close()
			e.waitConnections(0)
			if r := e.obs.reasons(); !slices.Equal(r, []string{"client"}) {
				t.Fatalf("disconnect reasons %v, want client", r)
			}
		})
	}
}

// The frame reader never panics, never reads a message past maxClientFrame and hands out
// control payloads of at most 125 bytes, whatever the bytes.
func FuzzFrameReader(f *testing.F) {
	f.Add(clientFrame(fin|opText, []byte("hello"), false))
	f.Add(append(clientFrame(opText, []byte("ab"), false), clientFrame(fin|opContinuation, []byte("c"), false)...))
	f.Add(clientFrame(fin|opPing, []byte("p"), false))
	f.Add(clientFrame(fin|opClose, websocket.FormatCloseMessage(1000, "x"), false))
	f.Add(clientFrame(fin|opBinary, bytes.Repeat([]byte{1}, 70000), false))
	f.Add([]byte{0x81, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &frameReader{conn: bytes.NewReader(data)}
		for {
			fr, err := r.next()
			if err != nil {
				return
			}
			if fr.length < 0 {
				t.Fatalf("negative length %d", fr.length)
			}
			if fr.op >= opClose {
				p, err := r.control(fr)
				if err != nil {
					return
				}
				if len(p) > maxControlPayload {
					t.Fatalf("control payload of %d bytes", len(p))
				}
				if fr.op == opClose {
					_, _ = closeReply(p)
				}
				continue
			}
			if err := r.discard(fr); err != nil {
				return
			}
			if r.size > maxClientFrame {
				t.Fatalf("message of %d bytes accepted", r.size)
			}
		}
	})
}
