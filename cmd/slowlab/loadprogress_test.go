package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// A run against the embedded target prints a progress line on stderr every
// progressEvery: its counts and elapsed time never go down from one line
// to the next, and the last agrees with the summary on stdout (no count
// above the summary's, its lag p99 not above the summary's max lag);
// stdout is the summary alone. --quiet prints no line, over a run ten
// intervals long.
func TestLoadgenProgress(t *testing.T) {
	slowlabtest.EndToEnd(t, "it loads the slowlab target process")
	was := progressEvery
	t.Cleanup(func() { progressEvery = was }) // last: after the run below ended
	progressEvery = 100 * time.Millisecond
	tgt, listen := startTarget(t, nil)
	target := "http://" + listen + "/fast"

	ctx, cancel := context.WithCancel(context.Background())
	stderr := &lineWriter{more: make(chan struct{}, 1)}
	var stdout slowlabtest.SyncBuffer
	exit, done := make(chan int, 1), make(chan struct{})
	go func() {
		defer close(done)
		exit <- run(ctx, []string{"loadgen", "--target", target, "--rate", "50", "--duration", "60s"}, &stdout, stderr)
	}()
	t.Cleanup(func() { cancel(); <-done })
	// Two lines that count answered requests, then an interrupt (as
	// SIGINT does), with most of the schedule to go.
	for live := 0; live < 2; {
		select {
		case <-stderr.more:
		case code := <-exit:
			t.Fatalf("loadgen exited %d before two progress lines; stderr:\n%s", code, stderr.String())
		case <-time.After(60 * time.Second):
			t.Fatalf("no two progress lines with requests ok after 60 s; stderr:\n%s", stderr.String())
		}
		live = 0
		for _, l := range stderr.lines() {
			if parseProgress(t, l).ok > 0 {
				live++
			}
		}
	}
	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("interrupted loadgen exited %d, want 0; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("loadgen still running 60 s after the interrupt")
	}

	var last progressLine
	for i, l := range stderr.lines() {
		p := parseProgress(t, l)
		if i > 0 && (p.elapsed < last.elapsed || p.sent < last.sent || p.ok < last.ok || p.errors < last.errors) {
			t.Errorf("progress line %d went down:\n%s\nafter\n%s", i+1, p.text, last.text)
		}
		if p.sent != p.ok+p.errors {
			t.Errorf("%q: sent is not ok + errors", p.text)
		}
		last = p
	}
	out := stdout.String()
	var total, ok, failed, notSent int
	if _, err := fmt.Sscanf(out, "requests %d: ok %d, failed %d, not sent %d\n", &total, &ok, &failed, &notSent); err != nil || total != 3000 || notSent == 0 {
		t.Fatalf("summary (%v): want 3000 requests, some not sent:\n%s", err, out)
	}
	if last.sent > total-notSent || last.ok > ok || last.errors > failed {
		t.Errorf("last progress line %q counts more than the summary: ok %d, failed %d, sent %d", last.text, ok, failed, total-notSent)
	}
	m := regexp.MustCompile(`(?m)^schedule lag ms: p50 \S+  p99 \S+  max (\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no schedule lag line in the summary:\n%s", out)
	}
	if lagMax, err := strconv.ParseFloat(m[1], 64); err != nil || last.lagP99 > lagMax {
		t.Errorf("last progress line %q: lag p99 above the summary's max %s", last.text, m[1])
	}
	t.Logf("%d progress lines, the last %q; summary %q", len(stderr.lines()), last.text, strings.SplitN(out, "\n", 2)[0])
	if strings.Contains(out, "progress") {
		t.Errorf("progress on stdout:\n%s", out)
	}

	code, out, errOut := runCmd(t, "loadgen", "--target", target, "--rate", "50", "--duration", "1s", "--quiet")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "requests 50: ") {
		t.Errorf("--quiet: exit %d, stderr %q, stdout:\n%s\nwant 0, nothing on stderr and the summary of 50 requests", code, errOut, out)
	}
	tgt.stop(t)
}

// progressLine is one progress line's figures.
type progressLine struct {
	text             string
	elapsed          time.Duration
	sent, ok, errors int
	lagP99           float64 // ms; 0 before any request started
}

var progressRE = regexp.MustCompile(`^progress (\S+)/1m0s: sent (\d+), ok (\d+), errors (\d+), schedule lag p99 (-|\d+\.\d{3} ms)$`)

func parseProgress(t *testing.T, line string) progressLine {
	t.Helper()
	m := progressRE.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("stderr line %q: not a progress line of a 60 s run", line)
	}
	p := progressLine{text: line}
	var err error
	if p.elapsed, err = time.ParseDuration(m[1]); err != nil {
		t.Fatalf("%q: elapsed: %v", line, err)
	}
	p.sent, _ = strconv.Atoi(m[2])
	p.ok, _ = strconv.Atoi(m[3])
	p.errors, _ = strconv.Atoi(m[4])
	if v, ok := strings.CutSuffix(m[5], " ms"); ok {
		p.lagP99, _ = strconv.ParseFloat(v, 64)
	}
	return p
}

// TestLoadgenProgressAfterSchedule: once the schedule is done and the run
// waits for requests a server holds, the progress line says so, with how
// many are in flight, instead of an elapsed time above the total
// ("progress 1.2s/1s").
func TestLoadgenProgressAfterSchedule(t *testing.T) {
	was := progressEvery
	t.Cleanup(func() { progressEvery = was }) // last: after the run below ended
	progressEvery = 100 * time.Millisecond
	release := make(chan struct{})
	var releaseOnce sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // first: srv.Close waits for the handlers

	stderr := &lineWriter{more: make(chan struct{}, 1)}
	var stdout slowlabtest.SyncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(context.Background(), []string{"loadgen", "--target", srv.URL + "/fast", "--rate", "5", "--duration", "1s"}, &stdout, stderr)
	}()
	const want = "progress schedule done, waiting for 5 in flight: sent 0, ok 0, errors 0, schedule lag p99 -"
	for !slices.Contains(stderr.lines(), want) {
		select {
		case <-stderr.more:
		case code := <-exit:
			t.Fatalf("loadgen exited %d with its 5 requests held; stderr:\n%s", code, stderr.String())
		case <-time.After(60 * time.Second):
			t.Fatalf("no line %q after 60 s; stderr:\n%s", want, stderr.String())
		}
	}
	releaseOnce.Do(func() { close(release) })
	select {
	case code := <-exit:
		if code != 0 || !strings.HasPrefix(stdout.String(), "requests 5: ok 5,") {
			t.Fatalf("exit %d, stdout:\n%s", code, stdout.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("loadgen still running 60 s after its requests were answered")
	}
	for _, l := range stderr.lines() {
		var elapsed, total string
		if _, err := fmt.Sscanf(l, "progress %s", &elapsed); err != nil {
			t.Errorf("stderr line %q: not a progress line", l)
			continue
		}
		elapsed, total, _ = strings.Cut(strings.TrimSuffix(elapsed, ":"), "/")
		e, errE := time.ParseDuration(elapsed)
		tot, errT := time.ParseDuration(total)
		if errE == nil && errT == nil && e > tot {
			t.Errorf("progress line %q: elapsed above the total", l)
		}
	}
}
