package activity

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
)

func mustDecode(t *testing.T, s string) *Activity {
	t.Helper()
	a, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("Decode(%s): %v", s, err)
	}
	return a
}

// TestLivestream follows the table of WEBCHAT-ORDERING §4.5 (getActivityLivestreamingMetadata).
func TestLivestream(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name    string
		in      string
		ok      bool
		kind    string
		session string
		seq     float64
		entity  bool
	}{
		{"first interim", `{"type":"typing","id":"s1","text":"A","channelData":{"streamType":"streaming","streamSequence":1}}`, true, LivestreamInterim, "s1", 1, false},
		{"later interim", `{"type":"typing","id":"s2","text":"A b","channelData":{"streamId":"s1","streamType":"streaming","streamSequence":2}}`, true, LivestreamInterim, "s1", 2, false},
		{"informative", `{"type":"typing","id":"s2","text":"Searching","channelData":{"streamId":"s1","streamType":"informative","streamSequence":3}}`, true, LivestreamInformative, "s1", 3, false},
		{"contentless interim", `{"type":"typing","id":"s1","channelData":{"streamType":"streaming","streamSequence":1}}`, true, LivestreamContentless, "s1", 1, false},
		{"interim with abstract is not contentless", `{"type":"typing","id":"s1","channelData":{"streamType":"streaming","streamSequence":1},"entities":[{"type":"https://schema.org/Message","@type":"Message","@id":"","abstract":"x"}]}`, true, LivestreamInterim, "s1", 1, false},
		{"interim with attachments", `{"type":"typing","id":"s1","attachments":[{"contentType":"image/png"}],"channelData":{"streamType":"streaming","streamSequence":1}}`, true, LivestreamInterim, "s1", 1, false},
		{"final message", `{"type":"message","id":"f","text":"done","channelData":{"streamId":"s1","streamType":"final"}}`, true, LivestreamFinal, "s1", inf, false},
		{"final message regret (empty text)", `{"type":"message","id":"f","channelData":{"streamId":"s1","streamType":"final","streamSequence":"ignored"}}`, true, LivestreamFinal, "s1", inf, false},
		{"final typing without text", `{"type":"typing","id":"f","channelData":{"streamId":"s1","streamType":"final"}}`, true, LivestreamFinal, "s1", inf, false},
		{"entity form", `{"type":"typing","id":"s2","text":"x","entities":[{"type":"other"},{"type":"streaminfo","streamId":"s1","streamType":"streaming","streamSequence":2}]}`, true, LivestreamInterim, "s1", 2, true},
		{"channelData wins over entity", `{"type":"typing","id":"s3","text":"x","channelData":{"streamId":"cd","streamType":"streaming","streamSequence":5},"entities":[{"type":"streaminfo","streamId":"en","streamType":"streaming","streamSequence":2}]}`, true, LivestreamInterim, "cd", 5, false},
		{"invalid channelData falls back to entity", `{"type":"typing","id":"s3","text":"x","channelData":{"streamType":"streaming","streamSequence":0},"entities":[{"type":"streaminfo","streamId":"en","streamType":"streaming","streamSequence":2}]}`, true, LivestreamInterim, "en", 2, true},
		{"only the first streaminfo entity counts", `{"type":"typing","id":"s3","text":"x","entities":[{"type":"streaminfo","streamType":"bogus"},{"type":"streaminfo","streamId":"en","streamType":"streaming","streamSequence":2}]}`, false, "", "", 0, false},
		{"empty streamId means own id", `{"type":"typing","id":"s9","text":"x","channelData":{"streamId":"","streamType":"streaming","streamSequence":1}}`, true, LivestreamInterim, "s9", 1, false},
		{"sequence 0", `{"type":"typing","id":"s","text":"x","channelData":{"streamType":"streaming","streamSequence":0}}`, false, "", "", 0, false},
		{"sequence 1.5", `{"type":"typing","id":"s","text":"x","channelData":{"streamType":"streaming","streamSequence":1.5}}`, false, "", "", 0, false},
		{"sequence string", `{"type":"typing","id":"s","text":"x","channelData":{"streamType":"streaming","streamSequence":"1"}}`, false, "", "", 0, false},
		{"streaming on a message", `{"type":"message","id":"s","text":"x","channelData":{"streamType":"streaming","streamSequence":1}}`, false, "", "", 0, false},
		{"final without streamId", `{"type":"message","id":"f","text":"x","channelData":{"streamType":"final"}}`, false, "", "", 0, false},
		{"final typing with text", `{"type":"typing","id":"f","text":"x","channelData":{"streamId":"s1","streamType":"final"}}`, false, "", "", 0, false},
		{"missing id", `{"type":"typing","text":"x","channelData":{"streamType":"streaming","streamSequence":1}}`, false, "", "", 0, false},
		{"plain typing", `{"type":"typing","id":"t"}`, false, "", "", 0, false},
		{"null streamId", `{"type":"typing","id":"t","text":"x","channelData":{"streamId":null,"streamType":"streaming","streamSequence":1}}`, false, "", "", 0, false},
		{"null streamId in the entity", `{"type":"typing","id":"t","text":"x","entities":[{"type":"streaminfo","streamId":null,"streamType":"streaming","streamSequence":1}]}`, false, "", "", 0, false},
		{"non-string streamId", `{"type":"typing","id":"t","text":"x","channelData":{"streamId":5,"streamType":"streaming","streamSequence":1}}`, false, "", "", 0, false},
		{"escaped streamType", `{"type":"typing","id":"s1","text":"A","channelData":{"streamType":"stre\u0061ming","streamSequence":1}}`, true, LivestreamInterim, "s1", 1, false},
		{"escaped final", `{"type":"message","id":"f","text":"done","channelData":{"streamId":"s1","streamType":"\u0066inal"}}`, true, LivestreamFinal, "s1", inf, false},
		{"streamType in another case", `{"type":"typing","id":"s1","text":"A","channelData":{"streamType":"Streaming","streamSequence":1}}`, false, "", "", 0, false},
		{"non-string streamType", `{"type":"typing","id":"s1","text":"A","channelData":{"streamType":1,"streamSequence":1}}`, false, "", "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ls, ok := mustDecode(t, tc.in).Livestream()
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, ls)
			}
			if !ok {
				return
			}
			if ls.Kind != tc.kind || ls.SessionID != tc.session || ls.Sequence != tc.seq || ls.FromEntity != tc.entity {
				t.Errorf("got %+v, want kind %q session %q seq %v entity %v", ls, tc.kind, tc.session, tc.seq, tc.entity)
			}
		})
	}
}

func TestMirrorStreamInfo(t *testing.T) {
	a := mustDecode(t, `{"type":"typing","id":"s2","text":"x","channelData":{"streamType":"mine"},"entities":[{"type":"streaminfo","streamId":"s1","streamType":"streaming","streamSequence":2}]}`)
	if !a.MirrorStreamInfo() {
		t.Fatal("nothing mirrored")
	}
	if got := string(a.ChannelData["streamId"]); got != `"s1"` {
		t.Errorf("streamId = %s", got)
	}
	if got := string(a.ChannelData["streamSequence"]); got != `2` {
		t.Errorf("streamSequence = %s", got)
	}
	if got := string(a.ChannelData["streamType"]); got != `"mine"` {
		t.Errorf("a member the sender set was overwritten: streamType = %s", got)
	}
	plain := mustDecode(t, `{"type":"typing","id":"s1","text":"x","channelData":{"streamType":"streaming","streamSequence":1}}`)
	if plain.MirrorStreamInfo() {
		t.Error("channelData livestream mirrored")
	}
}

func partEntity(extra string) string {
	return `{"type":"message","id":"p","entities":[{"type":"https://schema.org/Message","@context":"https://schema.org","@type":"Message","@id":""` + extra + `}]}`
}

// TestPartGrouping follows WEBCHAT-ORDERING §4.6.
func TestPartGrouping(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		ok    bool
		group string
		pos   float64 // NaN = no position
		valid bool
	}{
		{"blank node with position", partEntity(`,"isPartOf":{"@id":"_:g1","@type":"HowTo"},"position":2`), true, "_:g1", 2, true},
		{"url id without position", partEntity(`,"isPartOf":{"@id":"https://example.com/g","@type":"HowTo"}`), true, "https://example.com/g", math.NaN(), true},
		{"urn id", partEntity(`,"isPartOf":{"@id":"urn:x:1","@type":"HowTo"},"position":1.5`), true, "urn:x:1", 1.5, true},
		{"arrays reduce to first element", partEntity(`,"isPartOf":[{"@id":"_:a","@type":"HowTo"},{"@id":"_:b","@type":"HowTo"}],"position":[3,4]`), true, "_:a", 3, true},
		{"plain word is no identifier", partEntity(`,"isPartOf":{"@id":"h-00001","@type":"HowTo"}`), false, "", 0, false},
		{"string position disables grouping", partEntity(`,"isPartOf":{"@id":"_:g","@type":"HowTo"},"position":"2"`), false, "", 0, false},
		{"not HowTo is not kept together", partEntity(`,"isPartOf":{"@id":"_:g","@type":"Collection"}`), false, "", 0, true},
		{"isPartOf @type missing", partEntity(`,"isPartOf":{"@id":"_:g"}`), false, "", 0, false},
		{"entity @type not Message", `{"type":"message","entities":[{"type":"https://schema.org/Message","@type":"Thing","@id":"","isPartOf":{"@id":"_:g","@type":"HowTo"}}]}`, false, "", 0, false},
		{"entity @id not empty is skipped", `{"type":"message","entities":[{"type":"https://schema.org/Message","@type":"Message","@id":"x","isPartOf":{"@id":"_:g","@type":"HowTo"}}]}`, false, "", 0, true},
		{"https url without host", partEntity(`,"isPartOf":{"@id":"https://","@type":"HowTo"}`), false, "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mustDecode(t, tc.in)
			group, pos, ok := a.PartGrouping()
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if me, err := a.MessageEntity(); err == nil && me != nil && me.Valid != tc.valid {
				t.Errorf("Valid = %v (%s), want %v", me.Valid, me.Problem, tc.valid)
			}
			if !ok {
				return
			}
			if group != tc.group {
				t.Errorf("group = %q, want %q", group, tc.group)
			}
			switch {
			case math.IsNaN(tc.pos) && pos != nil:
				t.Errorf("position = %v, want none", *pos)
			case !math.IsNaN(tc.pos) && (pos == nil || *pos != tc.pos):
				t.Errorf("position = %v, want %v", pos, tc.pos)
			}
		})
	}
}

func TestMessageEntityWithoutType(t *testing.T) {
	a := mustDecode(t, `{"type":"message","entities":[{"type":"https://schema.org/Message","@id":""}]}`)
	if _, err := a.MessageEntity(); err != ErrMessageEntityWithoutType {
		t.Errorf("err = %v, want ErrMessageEntityWithoutType", err)
	}
}

func TestIsIdentifier(t *testing.T) {
	for s, want := range map[string]bool{
		"_:a": true, "_:": true, "https://x.y/z": true, "http://localhost:3000": true, "urn:uuid:1": true,
		"mailto:a@b": true, "a:b": true, "h-00001": false, "": false, "://x": false, "1a:b": false,
		"https://": false, "http:": false, "https:x.y": true, "http:/x": true, "https://a b": false,
		// Answers of the URL constructor (Node's new URL) where a host or port is malformed, or
		// where the parser strips characters before it reads the scheme.
		"http://example.com:99999": false, "http://example.com:abc": false, "a://b c": false,
		"\u00a0urn:x": false, "http://1.2.3.256": false, "http://[zz]": false,
		"http://a%41.com": true, "ur\tn:x": true, "\x01urn:x": true, " https://x.y ": true,
	} {
		if got := IsIdentifier(s); got != want {
			t.Errorf("IsIdentifier(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestIsIdentifierMatchesNode compares IsIdentifier with the URL constructor in Node on thousands
// of seeded strings built from the pieces of URLs, valid or not. It needs node on PATH (skipped
// without it, failed under DIRECTLINE_NODE_TESTS=1, as `make test` sets it).
func TestIsIdentifierMatchesNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("DIRECTLINE_NODE_TESTS") == "1" {
			t.Fatal("node is not on PATH")
		}
		t.Skip("node is not on PATH")
	}
	inputs := urlCorpus(rand.New(rand.NewPCG(2025, 11)), 10000)
	body, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	const script = `let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write(` +
		`JSON.stringify(JSON.parse(s).map(x=>{try{new URL(x);return true}catch{return false}}))))`
	cmd := exec.Command("node", "-e", script)
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var accepted []bool
	if err := json.Unmarshal(out, &accepted); err != nil || len(accepted) != len(inputs) {
		t.Fatalf("node answered %d results for %d inputs: %v", len(accepted), len(inputs), err)
	}
	yes, bad := 0, 0
	for i, in := range inputs {
		if accepted[i] {
			yes++
		}
		if got := IsIdentifier(in); got != accepted[i] {
			if bad++; bad <= 20 {
				t.Errorf("IsIdentifier(%q) = %v, new URL accepts it: %v", in, got, accepted[i])
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d strings differ from Node", bad, len(inputs))
	}
	// The corpus must exercise both answers, or the comparison says little.
	if yes < len(inputs)/5 || yes > len(inputs)*4/5 {
		t.Fatalf("node accepted %d of %d strings: the corpus is lopsided", yes, len(inputs))
	}
}

// urlCorpus builds n strings from a scheme, an authority (user info, host, port) and a path,
// each piece drawn from valid and malformed forms, with now and then a character inserted
// anywhere.
func urlCorpus(r *rand.Rand, n int) []string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	out := make([]string, 0, n)
	for range n {
		scheme := pick("http:", "https:", "HTTPS:", "ws:", "wss:", "ftp:", "file:", "urn:", "a:", "sc:",
			"mailto:", "x+y.z-1:", "1a:", "", "h-00001", "_x:", "http")
		slashes := pick("//", "//", "//", "/", "", "\\\\", "///")
		user := pick("", "", "", "u@", "u:p@", "@", "a b@", "%zz@")
		host := pick("example.com", "localhost", "a.b.c", "EXAMPLE.com", "xn--nxasmq6b.com", "ex ample.com",
			"1.2.3.4", "1.2.3.256", "0x7f.1", "999999999999", "1.2.3.4.5", "[::1]", "[zz]", "[1:2::3:4]",
			"a%41.com", "a%zz.com", "%00", "", "a<b", "a^b", "a|b", "éxample.com", "­", "a‍b",
			"Ａ.com", "b c", "a#b", "a?b", ".", "..", "a..b", "xn--", "0")
		port := pick("", "", "", ":80", ":65535", ":65536", ":99999", ":abc", ":", ":-1", ":0080")
		path := pick("", "/", "/x", "/a b", "/%zz", "?q=1", "#f", "/\\x", "/\u2028")
		s := scheme + slashes + user + host + port + path
		if r.IntN(8) == 0 {
			rs := []rune(s)
			i := r.IntN(len(rs) + 1)
			s = string(rs[:i]) + pick("\t", "\n", "\r", " ", "\x00", "\x01", "\x7f", "\u00a0", "\u3000", "%", "\\") + string(rs[i:])
		}
		out = append(out, s)
	}
	return out
}
