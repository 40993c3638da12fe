package stack

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The lines the real components wrote (testdata/logs, from a run with
// both timeouts) parse to the worker or request they name and the time.
func TestParseEvidenceLines(t *testing.T) {
	b, err := os.ReadFile("testdata/logs/worker-timeouts.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(b, []byte("\n"))
	gunicorn, ok := ParseWorkerTimeout(lines[0])
	if !ok || gunicorn.PID != 20436 || gunicorn.PeerPort != 0 || !gunicorn.At.Equal(time.Date(2026, 12, 3, 13, 17, 55, 0, time.UTC)) {
		t.Errorf("Gunicorn's line: %+v, %t", gunicorn, ok)
	}
	embedded, ok := ParseWorkerTimeout(lines[1])
	if !ok || embedded.PID != 0 || embedded.PeerPort != 59644 || !embedded.At.Equal(time.Date(2026, 12, 3, 13, 17, 44, 501e6, time.UTC)) {
		t.Errorf("the embedded app's line: %+v, %t", embedded, ok)
	}
	if wt, ok := ParseWorkerTimeout(lines[2]); ok {
		t.Errorf("a booting worker parsed as a timeout: %+v", wt)
	}
	b, err = os.ReadFile("testdata/logs/client-timeouts.log")
	if err != nil {
		t.Fatal(err)
	}
	lines = bytes.Split(b, []byte("\n"))
	for i, want := range []time.Time{time.Date(2026, 12, 3, 13, 17, 52, 0, time.Local), time.Date(2026, 12, 3, 13, 17, 41, 0, time.Local)} {
		ct, ok := ParseClientTimeout(lines[i])
		if !ok || ct.Target != "/large?download=0" || !ct.At.Equal(want) {
			t.Errorf("line %d: %+v, %t; want /large?download=0 at %v", i+1, ct, ok, want)
		}
	}
	if ct, ok := ParseClientTimeout(lines[2]); ok {
		t.Errorf("an upstream error parsed as a client timeout: %+v", ct)
	}
	for _, bad := range []string{
		`2026/12/03 13:17:52 [info] client timed out (110: Connection timed out) while sending to client, client: 127.0.0.1`,
		`2026/12/03 13:17:52 [info] client timed out (110: Connection timed out) while sending to client, request: "GET`,
		`2026/12/03 13:17:52 [info] client timed out (110: Connection timed out) while sending to client, request: "GET"`,
		`2026/12/03 13:17:52 [info] client timed out (110: Connection timed out) while reading client request headers, request: "GET / HTTP/1.1"`,
	} {
		if ct, ok := ParseClientTimeout([]byte(bad)); ok {
			t.Errorf("%s: parsed as %+v", bad, ct)
		}
	}
}

// The run's logs only: WORKER TIMEOUT from any but the exporter's, client
// timeouts from the proxy's.
func TestRunEvidence(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"r1-gunicorn.log": "[2026-12-03 13:17:55 +0000] [1] [CRITICAL] WORKER TIMEOUT (pid:12)\n",
		"r1-nginx.log":    `2026/12/03 13:17:52 [info] 7#7: *4 client timed out (110: Connection timed out) while sending to client, client: 127.0.0.1, server: , request: "GET /large?download=1 HTTP/1.1"` + "\n",
		"r1-exporter.log": "read a log saying WORKER TIMEOUT (pid:99) and client timed out (110: Connection timed out) while sending to client, request: \"GET /x HTTP/1.1\"\n",
		"r2-nginx.log":    `2026/12/03 13:17:52 [info] 7#7: *4 client timed out (110: Connection timed out) while sending to client, client: 127.0.0.1, server: , request: "GET /large?download=2 HTTP/1.1"` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wts, err := WorkerTimeouts(dir, "r1")
	if err != nil || len(wts) != 1 || wts[0].PID != 12 {
		t.Errorf("worker timeouts %+v, %v; want pid 12 only", wts, err)
	}
	cts, err := ClientTimeouts([]string{filepath.Join(dir, "r1-nginx.log")})
	if err != nil || len(cts) != 1 || cts[0].Target != "/large?download=1" {
		t.Errorf("client timeouts %+v, %v; want download=1 only", cts, err)
	}
	if cts, err := ClientTimeouts(nil); err != nil || len(cts) != 0 {
		t.Errorf("no proxy: %+v, %v; want none", cts, err)
	}
	missing := filepath.Join(dir, "r3-nginx.log")
	if _, err := ClientTimeouts([]string{missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("r3 (no log): %v; want an error naming the log", err)
	}
}

func FuzzParseEvidenceLines(f *testing.F) {
	for _, name := range []string{"worker-timeouts.log", "client-timeouts.log"} {
		b, _ := os.ReadFile(filepath.Join("testdata/logs", name))
		for line := range bytes.Lines(b) {
			f.Add(line)
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if wt, ok := ParseWorkerTimeout(line); ok {
			if !bytes.Contains(line, []byte("WORKER TIMEOUT")) || wt.PID < 0 || wt.PeerPort < 0 || wt.PeerPort > 65535 {
				t.Fatalf("%q: %+v", line, wt)
			}
		}
		if ct, ok := ParseClientTimeout(line); ok {
			if ct.Target == "" || strings.ContainsAny(ct.Target, " \"") || !bytes.Contains(line, []byte(ct.Target)) {
				t.Fatalf("%q: %+v", line, ct)
			}
		}
	})
}
