package activity

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// scanSeeds are values and entities whose decoding has edges: escapes, invalid UTF-8, control
// characters, duplicate members, number forms and malformed JSON that a member scan alone would
// accept.
var scanSeeds = []string{
	`"plain"`, `"esc\"aped"`, `"\u0068i"`, `"\ud800"`, "\"bad\xffutf8\"", "\"ctl\x01\"", `"unterminated`,
	`"a"b"`, ` "spaced" `, `""`, `1`, `-0`, `0.5`, `1e400`, `-1e400`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
	`123456789012345`, `1234567890123456789`, `-Inf`, `NaN`, `0x10`, `1_0`, `true`, `null`, `[1,2]`,
	`{"type":"streaminfo","streamId":"s","streamSequence":1}`,
	`{"type":"streaminfo","streamId":"s","streamSequence":tru}`,
	`{"type":"stream\u0069nfo","streamType":"streaming"}`,
	`{"\u0074ype":"streaminfo"}`,
	`{"type":"https://schema.org/Message","@type":"Message","@id":"","position":2,"isPartOf":{"@id":"_:g","@type":"HowTo"}}`,
	`{"type":"https://schema.org/Message","@type":"Message","@id":"","position":2,"isPartOf":{"@id":"_:g","@type":"HowTo"},"x":nul}`,
	`{"type":"https://schema.org/Message","@type":"Message","@id":"","isPartOf":null}`,
	`{"type":"https://schema.org/Message","@type":"Message","@id":"","isPartOf":[null]}`,
	`{"type":"https://schema.org/Message","@type":"Message","@id":"","isPartOf":[]}`,
	`{"type":"https://schema.org/Message","@type":"Message","@id":"","isPartOf":"_:g"}`,
	`{"type":"https://schema.org/Message","@type":"Message","@id":"","isPartOf":{"@id":"_:g","@id":"h","@type":"HowTo"}}`,
	`{"type":"https://schema.org/Message","@type":["Message"],"@id":"","abstract":["a","b"],"position":[1e400]}`,
	`{"type":"https://schema.org/Message","@type":"Message","@id":"","position":"2"}`,
	`{"type":"https://schema.org/Message","@id":""}`,
	`{"type":"https://schema.org/Message","@type":null,"@id":""}`,
	`{"type":"https://schema.org/Message","@type":"Message","@id":"","type":"other"}`,
	`{"type":"https://schema.org/Message","@type":"Message","@\u0069d":""}`,
	`{"type":"https://schema.org/Message","@type":"Message","@id":"","abstract":"s\u00fcmmary"}`,
	`{"type":"https://schema.org/Message","@type":"Message","@id":""`,
	`{"type":"https://schema.org/Message","@type":"Message","@id":""}}`,
	`{"type":"https://schema.org/Message" "@type":"Message","@id":""}`,
	`null`, `[]`, `{}`, `{"type":1}`,
	// Whitespace outside JSON's four: vertical tab, form feed, NEL and no-break space.
	"\v\"s\"", "\"s\"\f", "\u0085 1", "1\u00a0", "\t\r\n2\n", "\vnull",
	"\v{\"type\":\"streaminfo\",\"streamId\":\"s\",\"streamSequence\":1}",
}

func sameNumber(a, b float64) bool {
	return a == b && math.Signbit(a) == math.Signbit(b) || math.IsNaN(a) && math.IsNaN(b)
}

func checkScanReaders(t *testing.T, in []byte) {
	t.Helper()
	gn, gok := numberValue(in)
	wn, wok := refNumberValue(in)
	if !sameNumber(gn, wn) || gok != wok {
		t.Errorf("numberValue(%q) = %v, %v; encoding/json gives %v, %v", in, gn, gok, wn, wok)
	}
	a := &Activity{Type: TypeTyping, ID: "a1", Entities: []json.RawMessage{in, in}}
	gme, gerr := a.MessageEntity()
	wme, werr := refMessageEntity(a)
	if !reflect.DeepEqual(gme, wme) || gerr != werr {
		t.Errorf("MessageEntity(%q) = %+v, %v; encoding/json gives %+v, %v", in, gme, gerr, wme, werr)
	}
	if g, w := a.streamInfoEntity(), refStreamInfoEntity(a); !reflect.DeepEqual(g, w) {
		t.Errorf("streamInfoEntity(%q) = %v; encoding/json gives %v", in, g, w)
	}
}

// TestScanReadersMatchEncodingJSON checks that the readers built on the member scan and the
// hand-written number reader decode exactly as encoding/json does.
func TestScanReadersMatchEncodingJSON(t *testing.T) {
	for _, s := range scanSeeds {
		checkScanReaders(t, []byte(s))
	}
}

func FuzzScanReaders(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkScanReaders(t, in) })
}
