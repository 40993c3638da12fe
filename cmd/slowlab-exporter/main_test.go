package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServesMetrics runs the standalone exporter on a free loopback port
// with a group holding this test process: it prints its ready line and
// serves the group's metrics until its context ends, then returns 0.
func TestServesMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--web.listen-address", "127.0.0.1:0", "--group", "self=pid:" + strconv.Itoa(os.Getpid()), "--log.level", "warn"}, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready listen=")
	if err != nil || !ok {
		t.Fatalf("no ready line: %q, %v; stderr %s", line, err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `slowlab_processes{group="self",state="sleeping"}`) ||
		!strings.Contains(string(body), `slowlab_exporter_collector_success{collector="sockets"} 1`) {
		t.Errorf("/metrics: %s\n%s", resp.Status, body)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after its context ended; stderr %s", code, stderr.String())
	}
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--help"}, 0, "Usage: slowlab-exporter [--config FILE]"},
		{[]string{"--group", "bad"}, 2, "slowlab-exporter: --group:"},
		{[]string{"--bogus"}, 2, "flag provided but not defined: -bogus (see --help)"},
		// A repeated flag's value given twice would watch one group twice.
		{[]string{"--group", "self=pid:1", "--group", "self=pid:1"}, 2, `"self=pid:1": given twice`},
		{[]string{"--collector.tempfiles.dir", "/tmp", "--collector.tempfiles.dir", "/tmp"}, 2, `"/tmp": given twice`},
	} {
		var out, errw strings.Builder
		if code := run(context.Background(), tc.args, &out, &errw); code != tc.code || !strings.Contains(out.String()+errw.String(), tc.out) {
			t.Errorf("%v: exit %d, output %q %q; want %d and %q", tc.args, code, out.String(), errw.String(), tc.code, tc.out)
		}
	}
}
