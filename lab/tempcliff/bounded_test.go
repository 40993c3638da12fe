package tempcliff

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab/instrument"
)

// scrapeGauge reads the exporter's exposition up to a bound: a body of
// the proxy's gauge gives its value, and the same gauge after 17 MiB of
// comments is an error naming the URL and the bound, where parsing the
// body whole accepted it.
func TestScrapeGaugeBounded(t *testing.T) {
	gauge := "# TYPE " + tempFSAvailMetric + " gauge\n" + tempFSAvailMetric + `{group="` + instrument.ProxyGroup + `"} 1048576` + "\n"
	padded := append(bytes.Repeat([]byte("# a comment the exporter never writes\n"), (17<<20)/38), gauge...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		if r.URL.Path == "/padded" {
			_, _ = w.Write(padded)
			return
		}
		_, _ = w.Write([]byte(gauge))
	}))
	defer srv.Close()
	v, ok, err := scrapeGauge(context.Background(), srv.Client(), srv.URL+"/metrics", tempFSAvailMetric)
	if v != 1<<20 || !ok || err != nil {
		t.Errorf("scrapeGauge = %v, %t, %v; want 1048576, true, no error", v, ok, err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v, ok, err = scrapeGauge(context.Background(), srv.Client(), srv.URL+"/padded", tempFSAvailMetric)
	runtime.ReadMemStats(&after)
	t.Logf("%v, %t, %v; allocated %.1f MiB", v, ok, err, float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
	if ok || err == nil || !strings.HasPrefix(err.Error(), srv.URL+"/padded: ") || !strings.HasSuffix(err.Error(), "response body over 16777216 bytes") {
		t.Errorf("scrapeGauge of 17 MiB = %v, %t, %v; want an error naming the URL and the bound", v, ok, err)
	}
}

// countProxyErrors reads the proxy's error log a line at a time: 16 MiB of
// other lines, then a failed temp write, count 1 having allocated a few
// MiB, and a log of 16 MiB with no newline fails naming its line, where
// reading the file whole allocated its 16 MiB.
func TestCountProxyErrorsHoldsALine(t *testing.T) {
	dir := t.TempDir()
	other := bytes.Repeat([]byte("2026/12/03 12:56:31 [info] 7#0: *3 client closed keepalive connection\n"), (16<<20)/71)
	errorLog, endless := filepath.Join(dir, "error.log"), filepath.Join(dir, "endless.log")
	crit := "2026/12/03 12:56:32 [crit] 7#0: *4 pwrite() \"/tmp/proxy_temp/1/00/0000000001\" failed (28: No space left on device)\n"
	if err := os.WriteFile(errorLog, append(other, crit...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(endless, bytes.Repeat([]byte("a"), 16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	other = nil
	for _, tc := range []struct {
		log, err string
	}{{errorLog, ""}, {endless, endless + " line 1: over 1048576 bytes"}} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		n, err := countProxyErrors([]string{tc.log})
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d, %v; allocated %.1f MiB", filepath.Base(tc.log), n, err, float64(alloc)/(1<<20))
		if tc.err == "" && (n != 1 || err != nil) {
			t.Errorf("%s: %d, %v; want 1 error line", tc.log, n, err)
		}
		if tc.err != "" && (err == nil || err.Error() != tc.err) {
			t.Errorf("%s: %d, %v; want the error %q", tc.log, n, err, tc.err)
		}
		if alloc > 4<<20 {
			t.Errorf("%s: allocated %d bytes, want at most %d", tc.log, alloc, 4<<20)
		}
	}
}
