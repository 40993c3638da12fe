package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// bodyUpstream is an upstream that reads each request body whole and
// answers its length; seen gets each request's Content-Length as the
// upstream got it (-1: chunked) once its handler starts, and the temp
// files the proxy holds open in dir at that moment.
type bodyUpstream struct {
	*httptest.Server
	seen chan seenRequest
}

type seenRequest struct {
	contentLength int64
	tempFiles     map[string]int64
	body          []byte
}

func newBodyUpstream(t *testing.T, dir func() string, proceed <-chan struct{}) *bodyUpstream {
	u := &bodyUpstream{seen: make(chan seenRequest, 4)}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seenRequest{contentLength: r.ContentLength, tempFiles: tempFiles(t, dir())}
		if proceed != nil {
			u.seen <- s
			<-proceed
		}
		s.body, _ = io.ReadAll(r.Body)
		if proceed == nil {
			u.seen <- s
		}
		fmt.Fprintf(w, `{"bytes": %d}`, len(s.body))
	}))
	t.Cleanup(u.Close)
	return u
}

// TestRequestBufferingOnSpoolsToTempFile: a chunked body larger than the
// client body buffer reaches the upstream whole, with a Content-Length,
// from an unlinked client-body-temp- file in the body temp dir.
func TestRequestBufferingOnSpoolsToTempFile(t *testing.T) {
	slowlabtest.Timing(t)
	var o Options
	up := newBodyUpstream(t, func() string { return o.bodyTempDir() }, nil)
	o = testOptions(t, up.URL, true)
	p, addr := startProxy(t, o)
	body := testBody(1<<20 + 3)
	// io.MultiReader hides the length: the client sends it chunked.
	resp, err := http.Post("http://"+addr+"/upload", "application/octet-stream", io.MultiReader(bytes.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s := <-up.seen
	if resp.StatusCode != 200 || string(out) != fmt.Sprintf(`{"bytes": %d}`, len(body)) || !bytes.Equal(s.body, body) {
		t.Fatalf("status %d, answer %q: the upstream did not get the body whole", resp.StatusCode, out)
	}
	if s.contentLength != int64(len(body)) {
		t.Errorf("upstream Content-Length %d, want %d (the buffered body's size)", s.contentLength, len(body))
	}
	if len(s.tempFiles) != 1 {
		t.Fatalf("temp files in %s while the upstream read: %v, want one", o.bodyTempDir(), s.tempFiles)
	}
	for link, size := range s.tempFiles {
		base := filepath.Base(strings.TrimSuffix(link, " (deleted)"))
		if !strings.HasSuffix(link, " (deleted)") || !strings.HasPrefix(base, ClientBodyTempPrefix) || size != int64(len(body)) {
			t.Errorf("temp file %q of %d bytes: want %s*, (deleted), %d bytes", link, size, ClientBodyTempPrefix, len(body))
		}
	}
	if got := testutil.ToFloat64(p.m.bodySpooledBytes); got != float64(len(body)) {
		t.Errorf("request body spooled bytes %v, want %d", got, len(body))
	}
	// The handler closes the temp file once it has written the answer, so
	// the client can read the answer before that: wait for the close, then
	// check that it was counted once.
	eventually(t, "the proxy to close the request body temp file", func() bool {
		return testutil.ToFloat64(p.m.tempFilesOpen) <= 0
	})
	if got := testutil.ToFloat64(p.m.tempFilesOpen); got != 0 {
		t.Errorf("temp files open after the request: %v, want 0", got)
	}
}

// TestRequestBufferingOnSmallBodyInMemory: a body within the client body
// buffer makes no temp file.
func TestRequestBufferingOnSmallBodyInMemory(t *testing.T) {
	var o Options
	up := newBodyUpstream(t, func() string { return o.bodyTempDir() }, nil)
	o = testOptions(t, up.URL, true)
	p, addr := startProxy(t, o)
	body := testBody(o.ClientBodyBufferSize)
	resp, err := http.Post("http://"+addr+"/upload", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := <-up.seen
	if resp.StatusCode != 200 || !bytes.Equal(s.body, body) || len(s.tempFiles) != 0 {
		t.Fatalf("status %d, %d of %d bytes, temp files %v: want 200, the body whole, none", resp.StatusCode, len(s.body), len(body), s.tempFiles)
	}
	if got := testutil.ToFloat64(p.m.bodySpooledBytes); got != 0 {
		t.Errorf("request body spooled bytes %v, want 0", got)
	}
}

// TestRequestBufferingOffStreams: with request buffering off the upstream
// gets the request while the client is still sending (the client sends
// its second half only once the upstream's handler started, which would
// never happen if the proxy waited for the whole body), chunked as the
// client sent it.
func TestRequestBufferingOffStreams(t *testing.T) {
	proceed := make(chan struct{})
	var o Options
	up := newBodyUpstream(t, func() string { return o.bodyTempDir() }, proceed)
	o = testOptions(t, up.URL, true)
	o.RequestBuffering = false
	_, addr := startProxy(t, o)
	body := testBody(256 << 10)
	pr, pw := io.Pipe()
	type result struct {
		resp *http.Response
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Post("http://"+addr+"/upload", "application/octet-stream", pr)
		res <- result{resp, err}
	}()
	if _, err := pw.Write(body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	s := <-up.seen // the upstream started with half the body sent
	close(proceed)
	if _, err := pw.Write(body[len(body)/2:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	out, _ := io.ReadAll(r.resp.Body)
	r.resp.Body.Close()
	if s.contentLength != -1 || string(out) != fmt.Sprintf(`{"bytes": %d}`, len(body)) {
		t.Fatalf("upstream Content-Length %d, answer %q: want -1 (streamed chunked) and all %d bytes", s.contentLength, out, len(body))
	}
}
