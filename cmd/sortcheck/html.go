package main

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"os"

	"github.com/directline-go/directline/sortkeys/findings"
)

// htmlMaxRows caps each column of the picture; a browser cannot usefully draw more.
const htmlMaxRows = 5000

const (
	rowHeight = 22
	topMargin = 40
	leftX     = 10
	lineFromX = 430
	lineToX   = 590
	rightX    = 600
	svgWidth  = 1020
)

type htmlRow struct {
	Y int
	// Label is what fits in the column; Full, the whole id and excerpt, shows on hover.
	Label, Full string
	Class       string
}

type htmlLine struct {
	Y1, Y2 int
	Class  string
}

type htmlPage struct {
	Title, Right, LeftHeaderText string
	Width, Height, HeaderY       int
	Left, RightRows              []htmlRow
	Lines                        []htmlLine
	Summary                      findings.Summary
	Must, Should, Drop           int
	Truncated                    bool
	LeftCount, RightCount        int
	LeftTotal, RightTotal        int
	LineFromX, LineToX           int
	LeftTextX, RightTextX        int
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1em; color: #222; }
svg text { font-family: ui-monospace, monospace; font-size: 12px; }
svg .head { font-weight: bold; font-size: 14px; }
svg .moved { fill: #c62828; font-weight: bold; }
svg .alone { fill: #999; }
svg .unplaced { fill: #6d4c41; font-style: italic; }
.legend { max-width: 60em; }
.key-moved { color: #c62828; font-weight: bold; }
.key-alone { color: #999; }
.key-unplaced { color: #6d4c41; font-style: italic; }
svg line { stroke: #90a4ae; stroke-width: 1; }
svg line.moved { stroke: #c62828; stroke-width: 2; }
table { border-collapse: collapse; margin-top: 1em; }
td { padding: 2px 8px; border-bottom: 1px solid #ddd; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<table>
<tr><td>Profile</td><td>{{.Summary.Profile}}</td></tr>
<tr><td>Service order</td><td>{{.Summary.ServiceOrder}}</td></tr>
<tr><td>Pairs shown in the opposite order to the server</td><td>{{.Summary.InvertedPairs}}</td></tr>
<tr><td>Bubbles moved</td><td>{{.Summary.Moved}}</td></tr>
<tr><td>Findings</td><td>{{.Must}} MUST, {{.Should}} SHOULD, {{.Drop}} DROP-or-MISPLACE</td></tr>
</table>
<p class="legend">Each line joins an activity of the service's order (left) to the bubble that shows
it on Web Chat's screen (right). A bubble shows the latest of its revisions and spans every delivery
of them (updates, a livestream's revisions, a post's echo), so lines of one bubble may cross others
without counting. <span class="key-moved">Red</span>: a bubble shown out of the service's order (DL070)
and its activities. <span class="key-alone">Grey</span>, on the left without a line: an activity not on
the screen, its type and why in brackets. <span class="key-unplaced">Brown italics</span>, on the right: a
bubble with no place in the service's order (an activity without an id, or a post still
pending).</p>
{{if .Truncated}}<p>Only {{.LeftCount}} of the {{.LeftTotal}} activities of the service's order (those on the screen first) and {{.RightCount}} of the {{.RightTotal}} bubbles of the screen are drawn.</p>{{end}}
<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
<text class="head" x="{{.LeftTextX}}" y="{{.HeaderY}}">{{.LeftHeaderText}}</text>
<text class="head" x="{{.RightTextX}}" y="{{.HeaderY}}">{{.Right}}</text>
{{range .Lines}}<line class="{{.Class}}" x1="{{$.LineFromX}}" y1="{{.Y1}}" x2="{{$.LineToX}}" y2="{{.Y2}}"/>
{{end}}{{range .Left}}<text class="{{.Class}}" x="{{$.LeftTextX}}" y="{{.Y}}"><title>{{.Full}}</title>{{.Label}}</text>
{{end}}{{range .RightRows}}<text class="{{.Class}}" x="{{$.RightTextX}}" y="{{.Y}}"><title>{{.Full}}</title>{{.Label}}</text>
{{end}}</svg>
</body>
</html>
`))

// writeHTML draws the service's order on the left and Web Chat's screen on the right (rows, one
// per bubble of rep.Screen), one line from each delivered activity to the bubble it is a revision
// of; the bubbles Check counts as moved, and their activities, are drawn as moved.
func writeHTML(w io.Writer, rep findings.Report, log *Log, rows []row) error {
	page := htmlPage{
		Title: "sortcheck: service order vs Web Chat", Right: "Web Chat screen", Summary: rep.Summary,
		Must: rep.Count(findings.Must), Should: rep.Count(findings.Should), Drop: rep.Count(findings.DropOrMisplace),
		Width: svgWidth, LineFromX: lineFromX, LineToX: lineToX, LeftTextX: leftX, RightTextX: rightX,
		HeaderY: topMargin - 10, LeftHeaderText: "Service order (" + rep.Summary.ServiceOrder + ")",
	}
	y := func(i int) int { return topMargin + (i+1)*rowHeight }
	// class is how an activity of the service's order is drawn, on both sides; a bubble without
	// one (k < 0) is drawn as unplaced.
	class := func(k int) string {
		switch {
		case k < 0:
			return "unplaced"
		case rep.Service[k].Display < 0:
			return "alone"
		case rep.Service[k].Moved:
			return "moved"
		}
		return ""
	}
	// Over htmlMaxRows activities, those on the screen are drawn first: a long run of hidden
	// typing activities must not leave the bubbles without their lines.
	hidden := htmlMaxRows
	var inStore map[string]bool
	for _, p := range rep.Service {
		if p.Display >= 0 {
			hidden--
		}
	}
	for k, p := range rep.Service {
		if len(page.Left) == htmlMaxRows || (p.Display < 0 && hidden <= 0) {
			page.Truncated = true
			continue
		}
		if p.Display < 0 {
			hidden--
		}
		raw := log.Events[p.Index].Activity
		d := row{Name: p.Name}
		if d.Name == "" {
			d.Name = shownID(raw)
		}
		describe(&d, raw)
		if p.Display < 0 {
			if inStore == nil {
				inStore = make(map[string]bool, len(rep.Order))
				for _, it := range rep.Order {
					inStore[it.Name] = true
				}
			}
			d.Text = "[" + d.Type + ", " + notShown(inStore, p.Name) + "] " + d.Text
		}
		at := y(len(page.Left))
		page.Left = append(page.Left, labelled(htmlRow{Y: at, Class: class(k)}, k+1, d.Name, d.Text))
		if i := p.Display; i >= 0 && i < htmlMaxRows {
			page.Lines = append(page.Lines, htmlLine{Y1: at - 4, Y2: y(i) - 4, Class: class(k)})
		}
	}
	for i, r := range rows {
		if i == htmlMaxRows {
			page.Truncated = true
			break
		}
		page.RightRows = append(page.RightRows, labelled(htmlRow{Y: y(i), Class: class(rep.ScreenService[i])}, r.Position, r.Name, r.Text))
	}
	page.LeftTotal, page.RightTotal = len(rep.Service), len(rows)
	page.LeftCount, page.RightCount = len(page.Left), len(page.RightRows)
	page.Height = y(max(len(page.Left), len(page.RightRows))) + rowHeight
	return pageTemplate.Execute(w, page)
}

// notShown says why an activity of the service's order has no bubble: its revision is hidden
// (its type is not rendered, or it has no content), or the store no longer holds it (dropped by
// a sealed livestream, deleted, or replaced). inStore holds the names of the order's items.
func notShown(inStore map[string]bool, name string) string {
	if inStore[name] {
		return "not shown"
	}
	return "not in the store"
}

// htmlFile is the --html output, opened before the input is read so that a path that cannot be
// written fails at once rather than after the replay. An existing file keeps its content until
// the picture replaces it; a file created for a run that fails is removed.
type htmlFile struct {
	f       *os.File
	created bool
}

func openHTML(path string) (*htmlFile, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &htmlFile{f: f, created: errors.Is(statErr, fs.ErrNotExist)}, nil
}

// write replaces the file's content with the picture and closes it; after an error, abandon
// cleans up.
func (h *htmlFile) write(rep findings.Report, log *Log, rows []row) error {
	var buf bytes.Buffer
	err := writeHTML(&buf, rep, log, rows)
	if err == nil {
		err = h.f.Truncate(0)
	}
	if err == nil {
		_, err = h.f.WriteAt(buf.Bytes(), 0)
	}
	if err == nil {
		if err = h.f.Close(); err == nil {
			h.f = nil
		}
	}
	return err
}

// abandon closes a file that write did not complete, and removes it if this run created it.
func (h *htmlFile) abandon() {
	if h == nil || h.f == nil {
		return
	}
	h.f.Close()
	if h.created {
		os.Remove(h.f.Name())
	}
	h.f = nil
}

// labelCells keeps a label inside its column (about 7 px per monospace cell), of which an id
// takes at most idCells.
const (
	labelCells = 56
	idCells    = 25
)

// labelled gives h the label "place. id text": a long id loses its middle, so that ids that share
// a start stay apart, and the text takes the cells left.
func labelled(h htmlRow, place int, id, text string) htmlRow {
	id, text = safe(id), safe(text)
	h.Full = fmt.Sprintf("%d. %s %s", place, id, text)
	h.Label = fit(fmt.Sprintf("%d. %s %s", place, middle(id, idCells), text), labelCells)
	return h
}
