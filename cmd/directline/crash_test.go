package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// crashRounds is how many times the crash test kills and restarts the server (acceptance: ≥ 20).
const crashRounds = 20

var listenRE = regexp.MustCompile(`https?://(127\.0\.0\.1:\d+)`)

type childServer struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
}

// startChild runs the built binary on a loopback port with the given data file and waits for it to
// print its address.
func startChild(t *testing.T, bin, data, secret string) *childServer {
	t.Helper()
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--data", data, "--secret", secret, "--bot-endpoint", "none", "--log-level", "error")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &childServer{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { cmd.Wait(); close(c.done) }()
	select {
	case a := <-addr:
		c.base = "http://" + a
	case <-c.done:
		t.Fatal("server exited before printing its address")
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("server did not print its address")
	}
	return c
}

func (c *childServer) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

func post(client *http.Client, url, secret string, body any) (*http.Response, []byte, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, data, err
}

type historyActivity struct {
	ID          string          `json:"id"`
	Timestamp   string          `json:"timestamp"`
	ChannelData json.RawMessage `json:"channelData"`
}

// history pages through GET activities and returns every activity of the conversation.
func history(t *testing.T, base, secret, conv string) []historyActivity {
	t.Helper()
	var all []historyActivity
	watermark := ""
	for {
		req, _ := http.NewRequest(http.MethodGet, base+"/v3/directline/conversations/"+conv+"/activities?watermark="+watermark, nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var set struct {
			Activities []historyActivity `json:"activities"`
			Watermark  string            `json:"watermark"`
		}
		err = json.NewDecoder(resp.Body).Decode(&set)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET activities: status %d, %v", resp.StatusCode, err)
		}
		if len(set.Activities) == 0 {
			return all
		}
		all = append(all, set.Activities...)
		watermark = set.Watermark
	}
}

// TestCrashLosesNothingAcknowledged guards DESIGN invariants 1, 5 and 6: a server killed with
// SIGKILL at a random moment under concurrent POSTs keeps every activity whose POST got a 2xx,
// with contiguous sequence ids and no duplicates, and a resend after restart is not stored twice.
func TestCrashLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server process; not in -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "directline")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	data := filepath.Join(dir, "data", "dl.db")
	const secret = "crash-test-secret"
	const conversations, writers = 3, 16

	srv := startChild(t, bin, data, secret)
	var convIDs []string
	for range conversations {
		resp, body, err := post(http.DefaultClient, srv.base+"/v3/directline/conversations", secret, map[string]any{"user": map[string]string{"id": "u1"}})
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("start conversation: %v %s", err, body)
		}
		var c struct{ ConversationID string }
		json.Unmarshal(body, &c)
		convIDs = append(convIDs, c.ConversationID)
	}

	acked := map[string]string{} // clientActivityID -> id the POST answered
	var unacked []struct{ conv, cid string }
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range crashRounds {
		var mu sync.Mutex
		var wg sync.WaitGroup
		stop := make(chan struct{})
		client := &http.Client{Timeout: 5 * time.Second}
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					conv := convIDs[(w+n)%conversations]
					cid := fmt.Sprintf("r%d-w%d-n%d", round, w, n)
					act := map[string]any{"type": "message", "text": cid, "from": map[string]string{"id": "u1"},
						"channelData": map[string]string{"clientActivityID": cid}}
					resp, body, err := post(client, srv.base+"/v3/directline/conversations/"+conv+"/activities", secret, act)
					mu.Lock()
					if err == nil && resp.StatusCode/100 == 2 {
						var r struct{ ID string }
						json.Unmarshal(body, &r)
						acked[cid] = r.ID
					} else {
						unacked = append(unacked, struct{ conv, cid string }{conv, cid})
					}
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(20+rng.IntN(250)) * time.Millisecond)
		srv.kill()
		close(stop)
		wg.Wait()

		srv = startChild(t, bin, data, secret)
		// A client that never got an answer resends with the same clientActivityID.
		for _, u := range unacked {
			act := map[string]any{"type": "message", "text": u.cid, "from": map[string]string{"id": "u1"},
				"channelData": map[string]string{"clientActivityID": u.cid}}
			resp, body, err := post(http.DefaultClient, srv.base+"/v3/directline/conversations/"+u.conv+"/activities", secret, act)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("round %d: resend %s: %v %s", round, u.cid, err, body)
			}
			var r struct{ ID string }
			json.Unmarshal(body, &r)
			acked[u.cid] = r.ID
		}
		unacked = nil

		seen := map[string]bool{}
		for _, conv := range convIDs {
			for i, a := range history(t, srv.base, secret, conv) {
				var cd struct {
					Seq json.Number `json:"webchat:sequence-id"`
					CID string      `json:"clientActivityID"`
				}
				json.Unmarshal(a.ChannelData, &cd)
				if want := strconv.Itoa(i + 1); cd.Seq.String() != want {
					t.Fatalf("round %d: conversation %s entry %d has sequence id %s, want %s (hole or reorder)", round, conv, i, cd.Seq, want)
				}
				if seen[cd.CID] {
					t.Fatalf("round %d: %s stored twice", round, cd.CID)
				}
				seen[cd.CID] = true
				if id, ok := acked[cd.CID]; ok && id != a.ID {
					t.Fatalf("round %d: %s acknowledged as %s but stored as %s", round, cd.CID, id, a.ID)
				}
			}
		}
		for cid := range acked {
			if !seen[cid] {
				t.Fatalf("round %d: acknowledged activity %s lost after SIGKILL", round, cid)
			}
		}
	}
	srv.kill()
	t.Logf("%d rounds, %d activities acknowledged and verified", crashRounds, len(acked))
	if len(acked) < crashRounds {
		t.Fatalf("only %d activities acknowledged over %d rounds: the load did not run", len(acked), crashRounds)
	}
}
