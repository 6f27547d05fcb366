package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progressAfter is how long the command runs before the line appears: short runs print nothing.
var progressAfter = time.Second

// progressEvery throttles redraws within a phase.
const progressEvery = 100 * time.Millisecond

// progress draws one line on stderr, redrawn in place, naming what the command is doing: reading
// the input, replaying it (each with a bar), then the steps that report no count. The clock
// starts with the command, so a long read shows as soon as it passes progressAfter.
type progress struct {
	w       io.Writer
	enabled bool
	start   time.Time
	last    time.Time
	phase   string
	shown   bool
}

func newProgress(w io.Writer, enabled bool) *progress {
	return &progress{w: w, enabled: enabled, start: time.Now()}
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
	if now.Sub(p.start) < progressAfter ||
		(p.shown && phase == p.phase && now.Sub(p.last) < progressEvery && done < total) {
		return
	}
	line := "sortcheck: " + phase
	if total > 0 {
		const width = 30
		filled := done * width / total
		line += fmt.Sprintf(" [%s%s] %d/%d %s (%d%%)",
			strings.Repeat("#", filled), strings.Repeat("-", width-filled), done, total, unit, done*100/total)
	}
	fmt.Fprint(p.w, "\r\033[K"+line)
	p.shown, p.last, p.phase = true, now, phase
}

// done clears the line if it was drawn.
func (p *progress) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
