package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progressAfter is how long the command runs before the line appears: short runs print nothing.
var progressAfter = time.Second

// progressEvery throttles redraws within a phase.
const progressEvery = 100 * time.Millisecond

// progress names on stderr what the command is doing: reading the input, replaying it (each with
// a bar), then the steps that report no count. On a terminal it is one line redrawn in place;
// elsewhere (--progress into a file or a CI log) each phase and each tenth of a bar is a line of
// its own, without terminal codes. The clock starts with the command, so a long read shows as
// soon as it passes progressAfter.
type progress struct {
	w                io.Writer
	enabled, inPlace bool
	start            time.Time
	last             time.Time
	phase            string
	// tenth is how many tenths of the phase's bar the last line showed (not in place).
	tenth int
	shown bool
}

func newProgress(w io.Writer, enabled, inPlace bool) *progress {
	return &progress{w: w, enabled: enabled, inPlace: inPlace, start: time.Now()}
}

// counter returns the callback for a phase that counts done out of total units (events, MB).
func (p *progress) counter(phase, unit string) func(done, total int) {
	return func(done, total int) { p.step(phase, unit, done, total) }
}

// step draws phase; with total > 0, a bar of done out of total units. Within one phase it redraws
// at most every progressEvery, except at the end.
func (p *progress) step(phase, unit string, done, total int) {
	if !p.enabled {
		return
	}
	now := time.Now()
	if now.Sub(p.start) < progressAfter {
		return
	}
	samePhase := p.shown && phase == p.phase
	tenth := 0
	if total > 0 {
		tenth = done * 10 / total
	}
	if samePhase && (p.inPlace && now.Sub(p.last) < progressEvery && done < total || !p.inPlace && tenth == p.tenth) {
		return
	}
	line := "sortcheck: " + phase
	if total > 0 {
		const width = 30
		filled := done * width / total
		line += fmt.Sprintf(" [%s%s] %d/%d %s (%d%%)",
			strings.Repeat("#", filled), strings.Repeat("-", width-filled), done, total, unit, done*100/total)
	}
	if p.inPlace {
		fmt.Fprint(p.w, "\r\033[K"+line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.shown, p.last, p.phase, p.tenth = true, now, phase, tenth
}

// done clears the line if it was drawn in place.
func (p *progress) done() {
	if p.shown && p.inPlace {
		fmt.Fprint(p.w, "\r\033[K")
	}
	p.shown = false
}

// isTerminal reports whether v (stdin or stderr) is a terminal. A mode check would take
// /dev/null, also a character device, for one.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
