package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// IdleReport is the idle-mode report (JSON: idle).
type IdleReport struct {
	Streams        int         `json:"streams"`
	Opened         int         `json:"opened"`
	HoldS          float64     `json:"hold_s"`
	RSSBeforeBytes int64       `json:"rss_before_bytes"`
	RSSAfterBytes  int64       `json:"rss_after_bytes"`
	BytesPerStream int64       `json:"bytes_per_stream"`
	Delivery       Summary     `json:"delivery_ms"`
	Errors         ErrorReport `json:"errors"`
}

// runIdle opens cfg.Idle streams, holds them, optionally posts one message in each, and reports
// the server's memory per stream.
func runIdle(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	b := newBench(cfg)
	b.cfg.Transport = "ws"
	b.userConns = false
	rep := IdleReport{Streams: cfg.Idle}
	measureRSS := cfg.ServerPID > 0 || cfg.MetricsURL != ""
	if measureRSS {
		rss, err := serverRSS(ctx, b.http, cfg)
		if err != nil {
			fmt.Fprintln(stderr, "dlbench:", err)
			return exitUsage
		}
		rep.RSSBeforeBytes = rss
	}

	streams := make([]*conversation, 0, cfg.Idle)
	var mu sync.Mutex
	each(ctx, cfg.Idle, cfg.Concurrency, func(n int) {
		cv, ok := b.open(ctx, n, true)
		if ok {
			mu.Lock()
			streams = append(streams, cv)
			mu.Unlock()
		}
	})
	rep.Opened = len(streams)
	start := time.Now()
	if rep.Opened > 0 {
		fmt.Fprintf(stderr, "dlbench: %d streams open, holding for %s\n", rep.Opened, cfg.Hold)
		select {
		case <-time.After(cfg.Hold):
		case <-ctx.Done():
		}
	}
	rep.HoldS = round(time.Since(start).Seconds())
	if measureRSS {
		rss, err := serverRSS(ctx, b.http, cfg)
		if err != nil {
			b.errs.add(errorKey("server memory", err))
		}
		rep.RSSAfterBytes = rss
		if rep.Opened > 0 && rss > 0 {
			rep.BytesPerStream = (rep.RSSAfterBytes - rep.RSSBeforeBytes) / int64(rep.Opened)
		}
	}
	if cfg.IdlePost {
		each(ctx, len(streams), cfg.Concurrency, func(i int) { streams[i-1].send(ctx, 0, true) })
	}
	for _, cv := range streams {
		cv.finish()
	}
	rep.Delivery = b.echo.summary()
	rep.Errors.ByKind, rep.Errors.Total = b.errs.snapshot()
	v := b.verify.result()
	if rep.Opened == 0 {
		v.OK = false
		v.Examples = append(v.Examples, "no stream opened, so nothing was verified")
	}

	if cfg.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"idle": rep, "verification": v})
	} else {
		fmt.Fprintf(stdout, "idle streams  %d requested, %d open, held %.1f s\n", rep.Streams, rep.Opened, rep.HoldS)
		if measureRSS {
			fmt.Fprintf(stdout, "server RSS    %d bytes before, %d after: %d bytes per stream\n", rep.RSSBeforeBytes, rep.RSSAfterBytes, rep.BytesPerStream)
			if rep.Opened > 0 && rep.BytesPerStream <= 0 {
				fmt.Fprintln(stdout, "              (not a measurement: the server's RSS did not grow, e.g. a collection during the hold freed more than the streams took; hold more streams)")
			}
		}
		if cfg.IdlePost {
			d := rep.Delivery
			fmt.Fprintf(stdout, "delivery (ms) count %d p50 %.2f p95 %.2f p99 %.2f max %.2f\n", d.Count, d.P50, d.P95, d.P99, d.Max)
		}
		fmt.Fprintf(stdout, "errors        %d\n", rep.Errors.Total)
		printCounts(stdout, rep.Errors.ByKind)
		for _, h := range errorHints(cfg.Base, rep.Errors.ByKind) {
			fmt.Fprintf(stdout, "  hint: %s\n", h)
		}
		status := "OK"
		switch {
		case rep.Opened == 0:
			status = "NOT DONE"
		case !v.OK:
			status = "FAILED"
		}
		fmt.Fprintf(stdout, "verification  %s: %d problems\n", status, v.Problems)
		printCounts(stdout, v.ByCategory)
		for _, e := range v.Examples {
			fmt.Fprintf(stdout, "  - %s\n", e)
		}
	}
	if rep.Errors.Total > 0 || !v.OK || rep.Opened < rep.Streams {
		return exitProblem
	}
	return exitOK
}

// each runs f(1..n), at most limit at a time.
func each(ctx context.Context, n, limit int, f func(int)) {
	sem := make(chan struct{}, max(1, limit))
	var wg sync.WaitGroup
	for i := 1; i <= n && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}

// serverRSS reads the server's resident memory in bytes: VmRSS from /proc/<pid>/status, or
// process_resident_memory_bytes from a Prometheus text endpoint.
func serverRSS(ctx context.Context, hc *http.Client, cfg config) (int64, error) {
	if cfg.ServerPID > 0 {
		f, err := os.Open(fmt.Sprintf("/proc/%d/status", cfg.ServerPID))
		if err != nil {
			return 0, err
		}
		defer f.Close()
		return parseVmRSS(f)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.MetricsURL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: HTTP %d", cfg.MetricsURL, resp.StatusCode)
	}
	return parseMetricsRSS(resp.Body)
}

// parseVmRSS reads "VmRSS:  1234 kB" from a /proc/<pid>/status file.
func parseVmRSS(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			break
		}
		kb, err := strconv.ParseUint(f[0], 10, 53)
		if err != nil {
			break
		}
		return int64(kb) << 10, nil
	}
	return 0, errors.New("no VmRSS line in the process status")
}

// parseMetricsRSS reads process_resident_memory_bytes from Prometheus text exposition.
func parseMetricsRSS(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "process_resident_memory_bytes" {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return 0, fmt.Errorf("process_resident_memory_bytes %q: %w", f[1], err)
			}
			return int64(v), nil
		}
	}
	return 0, errors.New("no process_resident_memory_bytes in the metrics")
}
