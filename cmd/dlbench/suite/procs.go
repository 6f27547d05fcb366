package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a server the suite started: it listens on loopback and announces its URL on the first
// line of stdout.
type proc struct {
	name string
	cmd  *exec.Cmd
	url  string
	// tail keeps the end of stderr for the error message when the process fails.
	tail *tailBuffer
	done chan struct{}
}

// startupTimeout bounds how long a server may take to print its URL.
const startupTimeout = 60 * time.Second

// startProc runs argv in dir and waits for a stdout line matching re (its first group is the
// URL). The rest of stdout is drained so that a chatty process (the echo bot logs every turn)
// never blocks on a full pipe.
func startProc(name, dir string, re *regexp.Regexp, argv ...string) (*proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, tail: &tailBuffer{max: 4096}, done: make(chan struct{})}
	cmd.Stderr = p.tail
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			if !sent {
				if m := re.FindStringSubmatch(sc.Text()); m != nil {
					found <- m[1]
					sent = true
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case p.url = <-found:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before listening: %s", name, p.tail.String())
	case <-time.After(startupTimeout):
		p.stop()
		return nil, fmt.Errorf("%s did not announce its URL within %s", name, startupTimeout)
	}
}

// pid is the server's process id (for /proc/<pid>/status).
func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM to the process group and kills it if it has not exited within 10 s.
func (p *proc) stop() {
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// latency is dlbench's latency summary in milliseconds.
type latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// verification is dlbench's verification section.
type verification struct {
	OK         bool             `json:"ok"`
	Problems   int64            `json:"problems"`
	ByCategory map[string]int64 `json:"by_category"`
}

type errorReport struct {
	Total  int64            `json:"total"`
	ByKind map[string]int64 `json:"by_kind"`
}

// loadReport is the part of dlbench's load report (its --json output) the suite reads.
type loadReport struct {
	DurationS float64 `json:"duration_s"`
	Messages  struct {
		Sent      int64   `json:"sent"`
		Measured  int64   `json:"measured"`
		PerSecond float64 `json:"per_second"`
	} `json:"messages"`
	ActivitiesReceived int64              `json:"activities_received"`
	Latency            map[string]latency `json:"latency_ms"`
	Errors             errorReport        `json:"errors"`
	Verification       verification       `json:"verification"`
	// CPU is dlbench's own CPU time over the run (not part of its report).
	CPU time.Duration `json:"-"`
}

// idleReport is dlbench's idle-mode report.
type idleReport struct {
	Idle struct {
		Streams        int         `json:"streams"`
		Opened         int         `json:"opened"`
		HoldS          float64     `json:"hold_s"`
		RSSBeforeBytes int64       `json:"rss_before_bytes"`
		RSSAfterBytes  int64       `json:"rss_after_bytes"`
		BytesPerStream int64       `json:"bytes_per_stream"`
		Delivery       latency     `json:"delivery_ms"`
		Errors         errorReport `json:"errors"`
	} `json:"idle"`
	Verification verification `json:"verification"`
}

// runDlbench runs dlbench with args and --json and decodes its report into out; it returns
// dlbench's own CPU time (user + system). dlbench exits 1 when it saw errors or verification
// problems; the report still says which, so only a missing or unreadable report is an error here.
// After limit, dlbench gets SIGINT (it then stops and reports what it has) and, 20 s later,
// SIGKILL.
func runDlbench(ctx context.Context, bin string, limit time.Duration, out any, args ...string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--json")...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 20 * time.Second
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err := cmd.Run()
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return cpu, fmt.Errorf("dlbench: %v: %s", err, stderr.String())
	}
	if jerr := json.Unmarshal(stdout.Bytes(), out); jerr != nil {
		return cpu, fmt.Errorf("dlbench report: %v (stderr: %s)", jerr, stderr.String())
	}
	return cpu, nil
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const userHZ = 100

// processCPU is the CPU time (user + system, all threads) a process has used so far, from
// /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return statCPU(data)
}

// statCPU reads utime + stime from the text of /proc/<pid>/stat.
func statCPU(data []byte) (time.Duration, error) {
	// The command name in parentheses may hold spaces; the fields after it are numbers, utime and
	// stime being the 12th and 13th (fields 14 and 15 of the line).
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("no command name in the process stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short process stat")
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("process stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// memory is a process's resident memory in bytes, from /proc/<pid>/status: VmRSS is the total,
// RssAnon the heap and stacks, RssFile the file pages mapped in (for the service, mostly the
// bbolt data file's mmap, which grows with the data and is page cache the kernel can reclaim).
type memory struct {
	RSS, Anon, File int64
}

// readMemory reads a process's resident memory from /proc/<pid>/status.
func readMemory(pid int) (memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	fields := map[string]*int64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	for line := range strings.Lines(string(data)) {
		for prefix, dst := range fields {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				var kb int64
				if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
					return memory{}, fmt.Errorf("%s %q: %w", prefix, rest, err)
				}
				*dst = kb << 10
			}
		}
	}
	if m.RSS == 0 {
		return memory{}, errors.New("no VmRSS in the process status")
	}
	return m, nil
}
