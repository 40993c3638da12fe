package tempcliff

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/instrument"
)

// exposition is an exporter's answer with name's series for the proxy.
func exposition(name, typ, value string) string {
	return "# TYPE " + name + " " + typ + "\n" + name + `{group="` + instrument.ProxyGroup + `"} ` + value + "\n"
}

// A run whose exporter refuses or answers 500 says so in its progress
// (the temp-write-errors scrape, naming the metric and why), where an
// empty column was all it left; one that answers has its value and no
// line.
func TestTempWriteErrorsScrapeFailureIsTold(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "collector failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(exposition(tempWriteErrorsMetric, "counter", "3")))
	}))
	defer srv.Close()
	refused := refusedURL(t)
	for _, tc := range []struct {
		url, line string
	}{
		{srv.URL + "/fail", "run r1: " + tempWriteErrorsMetric + " not read: " + srv.URL + "/fail: HTTP 500 Internal Server Error\n"},
		{refused, "run r1: " + tempWriteErrorsMetric + " not read: Get \"" + refused + "\": dial tcp "},
		{srv.URL + "/metrics", ""},
	} {
		var progress bytes.Buffer
		got := exporterTempWriteErrors(context.Background(), &lab.Env{Progress: &progress}, "r1", tc.url)
		t.Logf("%s: %v, %q", tc.url, got, progress.String())
		if tc.line == "" {
			if !got.Valid || got.Value != 3 || progress.Len() != 0 {
				t.Errorf("%s: %v and progress %q; want 3 and no line", tc.url, got, progress.String())
			}
			continue
		}
		if got.Valid || !strings.HasPrefix(progress.String(), tc.line) || strings.Count(progress.String(), "\n") != 1 {
			t.Errorf("%s: %v and progress %q; want no value and one line starting %q", tc.url, got, progress.String(), tc.line)
		}
	}
}

// The temp-fs poll counts its failed scrapes and the run tells how many
// in one line: an exporter that answers 500 to every scrape, and one
// that answers 500 to the first only (its value still the least).
func TestTempFSPollFailuresAreCounted(t *testing.T) {
	seen := make(chan string, 100)
	var flaked atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { seen <- r.URL.Path }()
		if r.URL.Path == "/fail" || r.URL.Path == "/flaky" && !flaked.Swap(true) {
			http.Error(w, "collector failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(exposition(tempFSAvailMetric, "gauge", "1048576")))
	}))
	defer srv.Close()
	for _, path := range []string{"/fail", "/flaky"} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan tempFSPoll, 1)
		go func() { done <- pollTempFSAvail(ctx, srv.URL+path) }()
		for n := 0; n < 3; {
			if <-seen == path { // not a late one of the path before
				n++
			}
		}
		cancel()
		p := <-done
		var progress bytes.Buffer
		p.note(&lab.Env{Progress: &progress}, "r1")
		t.Logf("%s: %+v, %q", path, p, progress.String())
		switch path {
		case "/fail":
			if p.least.Valid || p.scrapes < 2 || p.failed != p.scrapes {
				t.Errorf("%s: %+v; want every scrape of at least 2 failed and no value", path, p)
			}
		case "/flaky":
			if !p.least.Valid || p.least.Value != 1 || p.failed != 1 || p.scrapes < 2 {
				t.Errorf("%s: %+v; want 1 scrape failed of at least 2 and 1 MiB", path, p)
			}
		}
		want := fmt.Sprintf("run r1: %d of %d scrapes of %s failed, the last: %s: HTTP 500 Internal Server Error\n", p.failed, p.scrapes, tempFSAvailMetric, srv.URL+path)
		if progress.String() != want {
			t.Errorf("%s: progress %q; want %q", path, progress.String(), want)
		}
	}
}

// refusedURL is the URL of a loopback port nothing listens on.
func refusedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/metrics"
	l.Close()
	return url
}
