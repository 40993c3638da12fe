package stack

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The readers of component logs hold one line at a time: a proxy error
// log of 16 MiB of other lines, then a client timeout, gives its one
// timeout having allocated a few MiB, and a worker's log (or an app's
// send log) of 16 MiB with no newline fails naming its line, where reading
// each file whole allocates its 16 MiB and more.
func TestLogReadersHoldALine(t *testing.T) {
	dir := t.TempDir()
	other := bytes.Repeat([]byte("2026/12/03 12:56:31 [info] 7#0: *3 client closed keepalive connection\n"), (16<<20)/71)
	errorLog := filepath.Join(dir, "error.log")
	if err := os.WriteFile(errorLog, append(other, `2026/12/03 12:56:32 [info] 7#0: *4 client timed out (110: Connection timed out) while sending to client, client: 127.0.0.1, server: , request: "GET /large?download=1 HTTP/1.1", host: "127.0.0.1:8080"`+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "r-app.log"), bytes.Repeat([]byte("a"), 16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	other = nil
	for _, tc := range []struct {
		name, err string
		read      func() (int, error)
	}{
		{"client timeouts", "", func() (int, error) { cts, err := ClientTimeouts([]string{errorLog}); return len(cts), err }},
		{"endless line", "r-app.log line 1: over 1048576 bytes", func() (int, error) { return CountWorkerTimeouts(dir, "r") }},
		{"endless send record", "r-app.log line 1: over 1048576 bytes", func() (int, error) {
			recs, err := readSendLog(filepath.Join(dir, "r-app.log"))
			return len(recs), err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			n, err := tc.read()
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d, %v; allocated %.1f MiB", n, err, float64(alloc)/(1<<20))
			if tc.err == "" && (err != nil || n != 1) {
				t.Errorf("%d timeouts, %v; want 1, no error", n, err)
			}
			if tc.err != "" && (err == nil || !strings.HasSuffix(err.Error(), tc.err)) {
				t.Errorf("%d timeouts, %v; want an error ending %q", n, err, tc.err)
			}
			if alloc > 4<<20 {
				t.Errorf("allocated %d bytes, want at most %d", alloc, 4<<20)
			}
		})
	}
}
