package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progressAfter is how long a replay runs before the bar appears: short logs print nothing.
var progressAfter = time.Second

// progressEvery throttles redraws.
const progressEvery = 100 * time.Millisecond

// progress draws a one-line bar on stderr, redrawn in place with a carriage return.
type progress struct {
	w       io.Writer
	enabled bool
	start   time.Time
	last    time.Time
	shown   bool
}

func newProgress(w io.Writer, enabled bool) *progress {
	return &progress{w: w, enabled: enabled, start: time.Now()}
}

func (p *progress) update(done, total int) {
	if !p.enabled || total == 0 {
		return
	}
	now := time.Now()
	if now.Sub(p.start) < progressAfter || (p.shown && now.Sub(p.last) < progressEvery && done < total) {
		return
	}
	const width = 30
	filled := done * width / total
	fmt.Fprintf(p.w, "\rsortcheck: replaying [%s%s] %d/%d events (%d%%)",
		strings.Repeat("#", filled), strings.Repeat("-", width-filled), done, total, done*100/total)
	p.shown, p.last = true, now
}

// done clears the bar if it was drawn.
func (p *progress) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
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
