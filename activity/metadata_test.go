package activity

import (
	"math"
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
	} {
		if got := IsIdentifier(s); got != want {
			t.Errorf("IsIdentifier(%q) = %v, want %v", s, got, want)
		}
	}
}
