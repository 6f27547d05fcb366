package directline

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestLoadOrCreateKey: the key file is created once (mode 0600) and read back unchanged; a
// damaged file is an error, never a silently new key.
func TestLoadOrCreateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "directline.db.key")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || len(k1) != 32 {
		t.Fatalf("mode %v, %d key bytes", st.Mode().Perm(), len(k1))
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("reload: %v, same key %v", err, bytes.Equal(k1, k2))
	}
	if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(path); err == nil {
		t.Fatal("a damaged key file was accepted")
	}
}

// TestTokenSurvivesRestart: a token issued before a restart still authenticates after it, so a
// browser can reconnect (GET /conversations/{id}) and resume its stream.
func TestTokenSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	conv := e.startConversation("u1")
	id := e.post(conv.Token, conv.ConversationID, map[string]any{"type": "message", "text": "before"})
	e.reopen()
	r := e.do(request{method: http.MethodGet, path: "/conversations/" + conv.ConversationID + "?watermark=0", auth: conv.Token})
	mustStatus(t, r, http.StatusOK)
	var re conversationResponse
	r.decode(t, &re)
	got, _ := readActivities(t, e.dial(re.StreamURL), 1)
	if got[0]["id"] != id {
		t.Fatalf("after restart the stream replays %v, want %s", got[0]["id"], id)
	}
	mustStatus(t, e.do(request{method: http.MethodPost, path: "/tokens/refresh", auth: conv.Token}), http.StatusOK)
}
