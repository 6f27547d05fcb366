package main

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// Terminal cells: a CJK character or an emoji takes two, a combining mark none, and a sequence
// joined by U+200D one glyph. go-runewidth measures by grapheme cluster, as terminals draw.

// safe is s with what a terminal must not receive raw escaped as \uXXXX: C0 and C1 controls, DEL,
// and the bidi controls, which would reorder the rest of the line (and the columns after it).
// Bytes that are not UTF-8 become \xNN.
func safe(s string) string {
	i := strings.IndexFunc(s, unsafeRune)
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f, // C0, DEL, C1
		r == 0x061c, r == 0x200e, r == 0x200f, // ALM, LRM, RLM
		r >= 0x202a && r <= 0x202e, // LRE, RLE, PDF, LRO, RLO
		r >= 0x2066 && r <= 0x2069, // LRI, RLI, FSI, PDI
		r == 0x2028, r == 0x2029:   // line and paragraph separators
		return true
	}
	return false
}

// fit cuts s to at most w cells, ending in "…" when cut, between grapheme clusters.
func fit(s string, w int) string { return runewidth.Truncate(s, w, "…") }

// middle cuts s to at most w cells by leaving out its middle, so that long ids that differ only
// at the end (urn:uuid:…, conversation|0000012) stay apart.
func middle(s string, w int) string {
	if runewidth.StringWidth(s) <= w {
		return s
	}
	head := (w - 1) / 2
	return runewidth.Truncate(s, head, "") + "…" + runewidth.TruncatePrefix(s, w-1-head, "")
}

// cutRunes cuts s to at most n code points, the last of them "…" when cut. The cut moves back
// rather than split what joins into one glyph: a U+200D sequence, a mark, a variation selector,
// a skin tone, an emoji tag or a flag's pair of regional indicators.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	c := n - 1
	for c > 0 && joins(r[:c], r[c]) {
		c--
	}
	return string(r[:c]) + "…"
}

// joins reports whether next attaches to the runes before it.
func joins(before []rune, next rune) bool {
	prev := before[len(before)-1]
	switch {
	case prev == 0x200d, next == 0x200d,
		unicode.In(next, unicode.Mn, unicode.Me, unicode.Mc),
		next >= 0xfe00 && next <= 0xfe0f, next >= 0xe0100 && next <= 0xe01ef, // variation selectors
		next >= 0x1f3fb && next <= 0x1f3ff, // skin tones
		next >= 0xe0020 && next <= 0xe007f: // tags
		return true
	case regional(prev) && regional(next):
		// Indicators pair from the start of their run: next joins prev when prev opens a pair.
		run := 0
		for i := len(before) - 1; i >= 0 && regional(before[i]); i-- {
			run++
		}
		return run%2 == 1
	}
	return false
}

func regional(r rune) bool { return r >= 0x1f1e6 && r <= 0x1f1ff }

// table writes rows of cells in columns two spaces apart, padded by terminal cells (tabwriter
// counts code points, which misaligns wide characters). The last cell of a row is not padded.
// A column is as wide as its widest cell up to padCells; a wider cell is written whole and
// pushes the rest of its row right. Cells are not cut (ids must stay exact), and one very long
// id does not pad every other row to its width, which made a report grow as rows times that id.
type table [][]string

// padCells is the widest a column is padded to: ids of Azure Direct Line, UUIDs and the
// service's own fit with room to spare.
const padCells = 64

func (t table) write(w io.Writer) error {
	var widths []int
	for _, row := range t {
		for i, c := range row[:len(row)-1] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], min(runewidth.StringWidth(c), padCells))
		}
	}
	var b strings.Builder
	for _, row := range t {
		b.Reset()
		for i, c := range row[:len(row)-1] {
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", max(widths[i]-runewidth.StringWidth(c), 0)+2))
		}
		b.WriteString(row[len(row)-1])
		b.WriteByte('\n')
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}
