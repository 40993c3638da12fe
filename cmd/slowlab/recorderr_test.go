package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// `slowlab record --scrape` of an endpoint that does not answer says the
// scrape error on stderr once, as it happens, not only in the rows and the
// closing count; the rows keep it. Not one scrape succeeded, so the
// recording measured nothing: it exits 1, its last line on stderr saying
// so, with every row still written.
func TestRecordSaysScrapeErrors(t *testing.T) {
	url := "http://" + freeAddr(t) + "/metrics" // nothing listens there
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "record", "--scrape", url, "--interval", "50ms", "--duration", "500ms", "--out", out)
	rows, err := recorder.ReadFile[recorder.ResourceSample](filepath.Join(out, "resource-samples.csv"))
	if err != nil || len(rows) < 2 || rows[0].Error == "" {
		t.Fatalf("resource-samples.csv: %d rows (%v), want at least 2 with an error; stdout:\n%s", len(rows), err, stdout)
	}
	if n := strings.Count(stderr, "scrape "+url+": "); n != 1 || !strings.Contains(stderr, rows[0].Error) {
		t.Errorf("stderr names the scrape error %d times, want once, as the rows say it (%q):\n%s", n, rows[0].Error, stderr)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	want := fmt.Sprintf("; the %d rows in %s each say why", len(rows), filepath.Join(out, "resource-samples.csv"))
	if code != 1 || !strings.HasPrefix(last, "slowlab record: no scrape succeeded: all ") || !strings.HasSuffix(last, want) {
		t.Errorf("exit %d, last line of stderr %q; want 1 and \"slowlab record: no scrape succeeded: all N failed%s\"", code, last, want)
	}
}

// A recording with some good scrapes measured something: it exits 0 even
// when later scrapes fail (here the endpoint answers its first scrape and
// fails every other), each failed row keeping its error. The recording is
// interrupted, as by SIGINT, when the third scrape arrives: the sampler
// scrapes one tick at a time and writes a tick's rows before the next
// starts, so by then the good and the failed rows are written.
func TestRecordSomeScrapesSucceeded(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch served.Add(1) {
		case 1:
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			fmt.Fprintf(w, "# TYPE slowlab_cgroup_memory_usage_bytes gauge\nslowlab_cgroup_memory_usage_bytes{group=%q} 4096\n", recorder.Components[0])
			return
		case 3:
			interrupt()
		}
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	out := t.TempDir()
	// A generous --timeout: a first scrape that timed out on a loaded
	// machine would leave no good row. --duration only bounds a recording
	// that the third scrape never interrupts.
	var stdoutb, stderrb bytes.Buffer
	code := run(ctx, []string{"record", "--scrape", srv.URL + "/metrics", "--interval", "50ms", "--timeout", "5s", "--duration", "1m", "--out", out}, &stdoutb, &stderrb)
	stdout, stderr := stdoutb.String(), stderrb.String()
	rows, err := recorder.ReadFile[recorder.ResourceSample](filepath.Join(out, "resource-samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	good, failed := 0, 0
	for _, r := range rows {
		switch {
		case r.Error == "" && r.MemoryBytes == recorder.Some(4096):
			good++
		case strings.Contains(r.Error, "503"):
			failed++
		}
	}
	if good != 1 || failed == 0 {
		t.Fatalf("%d rows measured 4096 bytes and %d say 503; want 1 and some; stdout:\n%s\nstderr:\n%s", good, failed, stdout, stderr)
	}
	if code != 0 || strings.Contains(stderr, "no scrape succeeded") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 0 without \"no scrape succeeded\"", code, stderr)
	}
}

// A recording that ends before its first scrape finished (the endpoint
// answers no scrape before --duration is up) measured nothing either: exit
// 1, saying so, with an empty resource-samples.csv written.
func TestRecordNoScrapeFinished(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	out := t.TempDir()
	code, _, stderr := runCmd(t, "record", "--scrape", srv.URL+"/metrics", "--timeout", "1m", "--duration", "200ms", "--out", out)
	file := filepath.Join(out, "resource-samples.csv")
	rows, err := recorder.ReadFile[recorder.ResourceSample](file)
	want := "slowlab record: no scrape succeeded: none finished before the recording ended; " + file + " has 0 rows\n"
	if err != nil || len(rows) != 0 || code != 1 || stderr != want {
		t.Errorf("exit %d, %d rows (%v), stderr %q; want 1, 0 rows and %q", code, len(rows), err, stderr, want)
	}
}
