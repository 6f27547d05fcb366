package directline

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/store"
)

// FuzzParseWatermark: every input is either accepted as a value that formats back to the same
// number, or rejected with BadArgument; plain decimals that fit in 64 bits are always accepted.
func FuzzParseWatermark(f *testing.F) {
	for _, s := range []string{"", "-", "0", "1", "007", "18446744073709551615", "18446744073709551616",
		"abc", "-5", "+5", "1e9999", "99999999999999999999", " 1", "1 ", "0x10", "1.5", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, ok, err := ParseWatermark(s)
		if err != nil {
			if !errors.Is(err, ErrBadArgument) || ok || w != 0 {
				t.Fatalf("ParseWatermark(%q) = %d, %v, %v", s, w, ok, err)
			}
			return
		}
		if !ok {
			if s != "" && s != "-" {
				t.Fatalf("ParseWatermark(%q) means none", s)
			}
			return
		}
		back, ok2, err2 := ParseWatermark(formatWatermark(w))
		if err2 != nil || !ok2 || back != w {
			t.Fatalf("round trip of %q: %d", s, back)
		}
		if strings.TrimLeft(s, "0") != strings.TrimLeft(formatWatermark(w), "0") {
			t.Fatalf("ParseWatermark(%q) = %d", s, w)
		}
	})
}

// FuzzVerifyToken: the verifier never panics, and it accepts only tokens whose HS256 signature,
// recomputed independently, matches.
func FuzzVerifyToken(f *testing.F) {
	key := bytes.Repeat([]byte{42}, 32)
	now := time.Unix(1_800_000_000, 0)
	tk := &tokens{key: key, issuer: "http://127.0.0.1/", lifetime: time.Hour, now: func() time.Time { return now }}
	valid, _, err := tk.conversationToken("conv", "u1")
	if err != nil {
		f.Fatal(err)
	}
	streamTok, _ := tk.streamToken("conv", "u1", now.Add(time.Hour))
	parts := strings.Split(valid, ".")
	for _, s := range []string{valid, streamTok, "", "a.b.c", "..", parts[0] + "." + parts[1] + ".",
		parts[0] + "." + parts[1], "eyJhbGciOiJub25lIn0." + parts[1] + ".", strings.ToUpper(valid), valid + "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := tk.verify(raw, useConversation)
		if err != nil {
			if !errors.Is(err, ErrTokenExpired) {
				t.Fatalf("verify error %v is not TokenExpired", err)
			}
			return
		}
		p := strings.Split(raw, ".")
		if len(p) != 3 {
			t.Fatalf("accepted %q", raw)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(p[0] + "." + p[1]))
		sig, err := base64.RawURLEncoding.DecodeString(p[2])
		if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
			t.Fatalf("accepted %q without a valid signature", raw)
		}
		if c.Conv == "" || c.Use != useConversation {
			t.Fatalf("accepted claims %+v", c)
		}
	})
}

// FuzzSanitizeFileName: whatever the client sends, the stored name is one harmless path element.
func FuzzSanitizeFileName(f *testing.F) {
	for _, s := range []string{"a.txt", "../../etc/passwd", `..\x`, "", ".", "..", "a\x00b", "\xff", strings.Repeat("é", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := sanitizeFileName(s)
		if got == "" || got == "." || got == ".." || len(got) > maxFileNameBytes || !utf8.ValidString(got) ||
			strings.ContainsAny(got, "/\\\x00\r\n") {
			t.Fatalf("sanitizeFileName(%q) = %q", s, got)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("sanitizeFileName(%q) = %q keeps a control character", s, got)
			}
		}
	})
}

// FuzzConnectorAttachmentID: every id connectorAttachmentID makes parses back to its parts, and
// no input makes the parser panic.
func FuzzConnectorAttachmentID(f *testing.F) {
	f.Add("conv", "0b6c7f0e-8f6d-4d55-9a35-9f4f3c1a1b2c", "")
	f.Add("a|b.c", "x", "bm9wZQ.x")
	f.Add("", "", "..")
	f.Fuzz(func(t *testing.T, conv, stored, raw string) {
		_, _, _ = parseConnectorAttachmentID(raw)
		if conv == "" || stored == "" || strings.Contains(stored, ".") {
			return
		}
		c, s, err := parseConnectorAttachmentID(connectorAttachmentID(conv, stored))
		if err != nil || c != conv || s != stored {
			t.Fatalf("round trip of %q %q: %q %q %v", conv, stored, c, s, err)
		}
	})
}

// FuzzBotActivity: whatever a bot sends, addressing it and reading its livestream and
// part-grouping metadata neither panics nor leaves the stand-in id on it.
func FuzzBotActivity(f *testing.F) {
	f.Add([]byte(`{"type":"typing","text":"A","entities":[{"type":"streaminfo","streamType":"streaming","streamSequence":1}]}`))
	f.Add([]byte(`{"type":"message","channelData":{"streamType":"final","streamId":"c|0000001"},"replyToId":"c|x"}`))
	f.Add([]byte(`{"type":"message","entities":[{"type":"https://schema.org/Message","@id":"","isPartOf":{"@id":"h-1","@type":"HowTo"},"position":"2"}]}`))
	s := &Server{log: slog.New(slog.DiscardHandler)}
	conv := store.Conversation{ID: "c", UserID: "u1"}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := activity.Decode(data)
		if err != nil {
			return
		}
		s.addressBotActivity(conv, a)
		mirrorLivestream(a)
		_, _ = streamType(a), streamIDMember(a)
		s.warnPartGrouping(conv, a)
		if a.ID != "" || a.From == nil || a.From.Role != activity.RoleBot || a.Conversation.ID != "c" {
			t.Fatalf("addressed activity: id %q from %+v", a.ID, a.From)
		}
	})
}
