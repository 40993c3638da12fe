package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// The summary names what happened: counts, status codes, error reasons
// with an example, "-" where nothing was measured; a run where no request
// succeeded exits 3 with the cause on stderr.
func TestLoadgenSummary(t *testing.T) {
	closed := slowlabtest.RefusedAddr(t)
	short := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("only ten.."))
	}))
	defer short.Close()
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer healthy.Close()

	const lag = `schedule lag ms: p50 -?\d+\.\d{3}  p99 -?\d+\.\d{3}  max -?\d+\.\d{3}`
	const onSchedule = `^on schedule: \d+\.\d{2}% started within 1ms \(late \d+ of 10 started, skipped 0\), \d+\.\d req/s started$`
	refused := "dial tcp " + closed + ": connect: connection refused"
	for _, tc := range []struct {
		name, target string
		code         int
		stdout       []string // exact lines, or patterns where they start with ^
		stderr       string
	}{
		{"refused", "http://" + closed + "/fast", 3, []string{
			"requests 10: ok 0, failed 10, not sent 0",
			"status: no response",
			"errors: refused 10",
			"  refused: " + refused,
			"latency ms:      -",
			"^" + lag + "$",
			onSchedule,
		}, "slowlab loadgen: no request succeeded: refused 10 (" + refused + ")\n"},
		{"short body", short.URL + "/fast", 3, []string{
			"requests 10: ok 0, failed 10, not sent 0",
			"status 200: 10",
			"errors: incomplete 10",
			"  incomplete: response body incomplete: 10 of 100 bytes",
			"latency ms:      -",
			"^" + lag + "$",
			onSchedule,
		}, "slowlab loadgen: no request succeeded: incomplete 10 (response body incomplete: 10 of 100 bytes)\n"},
		{"healthy", healthy.URL + "/fast", 0, []string{
			"requests 10: ok 10, failed 0, not sent 0",
			"status 200: 10",
			"errors: none",
			`^latency ms:      p50 \d+\.\d{2}  p95 \d+\.\d{2}  p99 \d+\.\d{2}  max \d+\.\d{2}$`,
			"^" + lag + "$",
			onSchedule,
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "loadgen", "--target", tc.target, "--rate", "100", "--duration", "100ms")
			if code != tc.code || stderr != tc.stderr {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr %q", code, stderr, tc.code, tc.stderr)
			}
			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if len(lines) != len(tc.stdout) {
				t.Fatalf("stdout:\n%s\nwant %d lines", stdout, len(tc.stdout))
			}
			for i, want := range tc.stdout {
				if strings.HasPrefix(want, "^") && !regexp.MustCompile(want).MatchString(lines[i]) || !strings.HasPrefix(want, "^") && lines[i] != want {
					t.Errorf("stdout line %d:\n%s\nwant\n%s", i+1, lines[i], want)
				}
			}
		})
	}
}

// The exit statuses are part of the usage.
func TestLoadgenHelpExitStatus(t *testing.T) {
	code, stdout, _ := runCmd(t, "loadgen", "--help")
	for _, want := range []string{"Exit status:", "  0  the run completed and at least one request succeeded", "  1  an error", "  2  a bad command line", "  3  the run completed but no request succeeded"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("loadgen --help (exit %d) lacks %q:\n%s", code, want, stdout)
		}
	}
}

// An interrupted run still accounts for every scheduled request: the ones
// never sent are requests.csv rows with status 0 and the not_sent error.
func TestLoadgenInterruptedWritesUnsentRows(t *testing.T) {
	slowlabtest.Timing(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var arrived atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == 3 {
			cancel() // as SIGINT does, while the schedule has a minute to go
		}
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"loadgen", "--target", srv.URL + "/fast", "--rate", "100", "--duration", "60s", "--out", out, "--run-id", "i"}, &stdout, &stderr)
	if code != 0 || stderr.Len() > 0 {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr.String())
	}
	rows, err := recorder.ReadFile[recorder.Request](filepath.Join(out, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6000 {
		t.Fatalf("%d rows, want one per scheduled request (6000)", len(rows))
	}
	seen := make([]bool, len(rows))
	notSent := 0
	for _, r := range rows {
		if r.Seq < 0 || r.Seq >= len(rows) || seen[r.Seq] {
			t.Fatalf("seq %d out of range or seen twice", r.Seq)
		}
		seen[r.Seq] = true
		if r.Error != loadgen.ErrNotSent.Error() {
			continue
		}
		notSent++
		if r.Status != 0 || !math.IsNaN(r.StartS) || !math.IsNaN(r.LatencyMS) || math.Abs(r.ScheduledS-float64(r.Seq)/100) > 1e-3 {
			t.Fatalf("not sent row %+v: want status 0, no start or latency (empty cells), scheduled at seq/100 s", r)
		}
	}
	if notSent == 0 {
		t.Error("no not_sent row, but the schedule was interrupted a minute early")
	}
	first := strings.SplitN(stdout.String(), "\n", 2)[0]
	var total, ok, failed, unsent int
	if _, err := fmt.Sscanf(first, "requests %d: ok %d, failed %d, not sent %d", &total, &ok, &failed, &unsent); err != nil || total != 6000 || ok+failed+unsent != total || unsent != notSent {
		t.Errorf("summary %q (%v): want 6000 requests of which %d not sent", first, err, notSent)
	}
}

// A schedule too long to keep every result in memory is refused before it
// starts. (The context is already cancelled, so a run that did start would
// stop at once.)
func TestLoadgenRefusesHugeSchedules(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"loadgen", "--target", "http://127.0.0.1:1/", "--rate", "1000000", "--duration", "11s"}, &stdout, &stderr)
	want := "slowlab loadgen: --rate 1e+06 for --duration 11s: 11000000 requests, at most 10000000 per run (every result is kept in memory)\n"
	if code != 2 || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), want)
	}
}

// Four `slowlab loadgen --shard I/4` runs started together by --start-at
// send the one schedule of --rate 40 for 1 s: after their requests.csv
// are put together, every scheduled request is there once, numbered and
// timed as one process would, and each shard ran its slow reader.
func TestLoadgenShardsSendTheSchedule(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs load generator processes")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/large" {
			w.Write(make([]byte, 64<<10))
			return
		}
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	start := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	dirs := make([]string, 4)
	codes := make([]int, 4)
	var wg sync.WaitGroup
	for i := range dirs {
		dirs[i] = t.TempDir()
		wg.Go(func() {
			var stdout, stderr bytes.Buffer
			codes[i] = run(context.Background(), []string{"loadgen", "--target", srv.URL + "/fast", "--rate", "40", "--duration", "1s", "--slow", "4",
				"--read-rate", "1m", "--shard", fmt.Sprintf("%d/4", i), "--start-at", start, "--out", dirs[i], "--run-id", "s"}, &stdout, &stderr)
			if codes[i] != 0 {
				t.Errorf("shard %d: exit %d: %s", i, codes[i], stderr.String())
			}
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for i, dir := range dirs {
		rows, err := recorder.ReadFile[recorder.Request](filepath.Join(dir, "requests.csv"))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Seq%4 != i || seen[r.Seq] || math.Abs(r.ScheduledS-float64(r.Seq)/40) > 1e-6 || r.Status != 200 {
				t.Errorf("shard %d: row %+v: want seq %d mod 4, once, scheduled at seq/40 s, status 200", i, r, i)
			}
			seen[r.Seq] = true
		}
		larges, err := recorder.ReadFile[recorder.LargeResponse](filepath.Join(dir, "large-responses.csv"))
		if err != nil || len(larges) != 1 {
			t.Errorf("shard %d: %d slow readers (%v), want its one of 4", i, len(larges), err)
		}
	}
	if len(seen) != 40 {
		t.Errorf("%d scheduled requests across the shards, want 40", len(seen))
	}
	var stdout, stderr bytes.Buffer
	for _, bad := range [][]string{{"--shard", "4/4"}, {"--start-at", "yesterday"}, {"--start-at", "2020-01-01T00:00:00Z"}} {
		stderr.Reset()
		if code := run(context.Background(), append([]string{"loadgen", "--target", srv.URL}, bad...), &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", bad, code, stderr.String())
		}
	}
}

// --http2 sends the open loop as streams on one HTTP/2 connection
// (cleartext, prior knowledge): every request a row with its status, the
// server sees HTTP/2 on one connection; --keepalive beside it is refused.
func TestLoadgenHTTP2(t *testing.T) {
	var conns, h1 atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			h1.Add(1)
		}
		fmt.Fprint(w, "hello")
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"loadgen", "--http2", "--target", srv.URL + "/fast", "--rate", "40", "--duration", "1s", "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	rows, err := recorder.ReadFile[recorder.Request](filepath.Join(out, "requests.csv"))
	if err != nil || len(rows) != 40 {
		t.Fatalf("%d rows (%v), want 40", len(rows), err)
	}
	for _, r := range rows {
		if r.Status != 200 || r.Bytes != 5 || r.Error != "" {
			t.Errorf("%+v", r)
		}
	}
	if conns.Load() != 1 || h1.Load() != 0 {
		t.Errorf("the server saw %d connections and %d HTTP/1 requests, want one HTTP/2 connection", conns.Load(), h1.Load())
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"loadgen", "--http2", "--keepalive", "--target", srv.URL}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--keepalive with --http2") {
		t.Errorf("--http2 --keepalive: exit %d, %q; want 2 naming both", code, stderr.String())
	}
}

// --pacer-sleep raw sends the schedule as syscall does; a mode it does not
// know is refused by name before anything is sent.
func TestLoadgenPacerSleep(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer srv.Close()
	code, stdout, stderr := runCmd(t, "loadgen", "--target", srv.URL+"/fast", "--rate", "1000", "--duration", "100ms", "--pacer-sleep", "raw")
	if first := strings.SplitN(stdout, "\n", 2)[0]; code != 0 || first != "requests 100: ok 100, failed 0, not sent 0" {
		t.Errorf("raw: exit %d, first line %q, stderr %q; want 0 and all 100 ok", code, first, stderr)
	}
	code, _, stderr = runCmd(t, "loadgen", "--target", srv.URL+"/fast", "--pacer-sleep", "fast")
	if want := "slowlab loadgen: --pacer-sleep \"fast\": want syscall or raw\n"; code != 2 || stderr != want {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
	// With one processor the pacer's raw sleeps would hold the requests back.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	code, _, stderr = runCmd(t, "loadgen", "--target", srv.URL+"/fast", "--pacer-sleep", "raw")
	if code != 2 || !strings.HasPrefix(stderr, "slowlab loadgen: --pacer-sleep raw: needs GOMAXPROCS 2 or more (it is 1") {
		t.Errorf("GOMAXPROCS 1: exit %d, stderr %q; want 2 and a refusal naming GOMAXPROCS", code, stderr)
	}
}

// --linger only keeps /metrics served after the run (spans are flushed at
// exit without it), so without --metrics-addr it is refused by name rather
// than ignored; with it, the pair is accepted. The context is already
// cancelled, so a run that did start would stop at once.
func TestLoadgenLingerNeedsMetricsAddr(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		args     []string
		code     int
		stderrIs string // the whole of stderr, when code is 2
	}{
		{[]string{"--linger", "30s"}, 2, "slowlab loadgen: --linger 30s without --metrics-addr: it keeps /metrics served after the run; give --metrics-addr ADDR or drop --linger\n"},
		{[]string{"--linger", "-1s", "--metrics-addr", "127.0.0.1:0"}, 2, "slowlab loadgen: --linger -1s: must be 0 or more\n"},
		{[]string{"--linger", "30s", "--metrics-addr", "127.0.0.1:0"}, 0, ""},
		{[]string{"--linger", "0s"}, 0, ""},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"loadgen", "--target", "http://127.0.0.1:1/", "--duration", "1s", "--quiet"}, tc.args...)
		code := run(ctx, args, &stdout, &stderr)
		if code != tc.code || (tc.code == 2 && stderr.String() != tc.stderrIs) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.stderrIs)
		}
	}
}
