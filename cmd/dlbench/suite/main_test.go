package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRewrite(t *testing.T) {
	section := markStart + "\nnew figures\n" + markEnd + "\n"
	tests := []struct {
		name, doc, want string
	}{
		{
			name: "replaces between the markers, keeps the rest",
			doc:  "# Benchmarks\n\nintro\n\n" + markStart + "\nold figures\n" + markEnd + "\n\n## Later\n",
			want: "# Benchmarks\n\nintro\n\n" + section + "\n## Later\n",
		},
		{
			name: "appends a Targets section when the markers are absent",
			doc:  "# Benchmarks\n\nintro\n",
			want: "# Benchmarks\n\nintro\n\n## Targets\n\n" + section,
		},
		{
			name: "a missing document is created",
			doc:  "",
			want: "## Targets\n\n" + section,
		},
		{
			name: "an end marker before the start marker is not a section",
			doc:  markEnd + "\n" + markStart + "\n",
			want: markEnd + "\n" + markStart + "\n\n## Targets\n\n" + section,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
			if tt.doc != "" {
				if err := os.WriteFile(path, []byte(tt.doc), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := rewrite(path, section); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestReadMemory(t *testing.T) {
	m, err := readMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.Anon <= 0 || m.Anon+m.File > m.RSS {
		t.Errorf("memory %+v: want RSS > 0, RssAnon > 0 and RssAnon+RssFile <= VmRSS", m)
	}
	if _, err := readMemory(-1); err == nil {
		t.Error("readMemory(-1): no error")
	}
}

func TestTableEscapesPipes(t *testing.T) {
	got := table([]string{"a", "b"}, [][]string{{"x|y", "z"}})
	want := "| a | b |\n| --- | --- |\n| x\\|y | z |\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}}
	for _, tt := range tests {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
		check   func(config) bool
	}{
		{nil, "", func(c config) bool { return c.soak.Minutes() == 10 && c.runs == 3 && len(c.targets) == 6 }},
		{[]string{"--quick"}, "", func(c config) bool { return c.soak.Seconds() == 20 && c.runs == 1 }},
		{[]string{"--quick", "--soak", "5s", "--targets", "2, 6"}, "", func(c config) bool { return c.soak.Seconds() == 5 && c.targets[2] && c.targets[6] && !c.targets[1] }},
		{[]string{"--targets", "7"}, "not a target", nil},
		{[]string{"--runs", "-1"}, "must be positive", nil},
		{[]string{"extra"}, "unexpected arguments", nil},
	}
	for _, tt := range tests {
		c, err := parseFlags(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want one containing %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !tt.check(c) {
			t.Errorf("%v: %+v, %v", tt.args, c, err)
		}
	}
}

func TestStatCPU(t *testing.T) {
	tests := []struct {
		name, stat string
		want       time.Duration
		wantErr    bool
	}{
		{"plain", "123 (node) S 1 2 3 4 5 6 7 8 9 10 250 75 0 0 20 0 11", 3250 * time.Millisecond, false},
		{"command name with spaces and parentheses", "7 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 1 2 0 0", 30 * time.Millisecond, false},
		{"short", "7 (x) R 1 2 3", 0, true},
		{"no command name", "7 x R 1 2 3 4 5 6 7 8 9 10 1 2", 0, true},
		{"not a number", "7 (x) R 1 2 3 4 5 6 7 8 9 10 a 2", 0, true},
	}
	for _, tt := range tests {
		got, err := statCPU([]byte(tt.stat))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("%s: statCPU = %v, %v; want %v, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
	if _, err := processCPU(os.Getpid()); err != nil {
		t.Errorf("processCPU(self): %v", err)
	}
	if _, err := processCPU(-1); err == nil {
		t.Error("processCPU(-1): no error")
	}
}

func TestSideRunCPUText(t *testing.T) {
	r := loadReport{CPU: 40 * time.Millisecond}
	r.Messages.Sent = 200
	tests := []struct {
		sr   sideRun
		want string
	}{
		{sideRun{r: r, server: 100 * time.Millisecond, bot: 900 * time.Millisecond, hasBot: true}, "500 · 4500 · 200"},
		{sideRun{r: r, server: 100 * time.Millisecond}, "500 · – · 200"},
		{sideRun{}, ""},
	}
	for _, tt := range tests {
		if got := tt.sr.cpuText(); got != tt.want {
			t.Errorf("cpuText = %q, want %q", got, tt.want)
		}
	}
}

func TestWarmMessages(t *testing.T) {
	tests := []struct{ conversations, messages, want int }{
		{10, 40, 40},   // 400 turns: the whole measured load
		{50, 40, 40},   // exactly warmTurns
		{200, 40, 10},  // 2,000 of the measured 8,000
		{3000, 40, 1},  // at least one message each
		{200, 5, 5},    // never more than the measured run
		{7, 1000, 286}, // rounded up
	}
	for _, tt := range tests {
		if got := warmMessages(tt.conversations, tt.messages); got != tt.want {
			t.Errorf("warmMessages(%d, %d) = %d, want %d", tt.conversations, tt.messages, got, tt.want)
		}
	}
}
