package report_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/chromium"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/report"
)

// probeExpression runs in the loaded report: it reports every <img>'s
// natural size and loads every linked SVG as an image to report its size
// too. A size of 0 means the image did not load or decode.
const probeExpression = `(async () => {
  const imgs = Array.from(document.images).map(i => ({src: i.getAttribute("src"), width: i.naturalWidth, height: i.naturalHeight}));
  const svgs = await Promise.all(Array.from(document.querySelectorAll('a[href$=".svg"]')).map(a => new Promise(done => {
    const im = new Image();
    im.onload = () => done({src: a.getAttribute("href"), width: im.naturalWidth, height: im.naturalHeight});
    im.onerror = () => done({src: a.getAttribute("href"), width: 0, height: 0});
    im.src = a.getAttribute("href");
  })));
  return JSON.stringify(imgs.concat(svgs));
})()`

// requestLog records the requests an HTTP server saw.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, s)
}

func (l *requestLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

// TestReportInChromium opens report.html in headless Chromium, served by a
// loopback server that logs every request, and watches the page's own
// requests over the DevTools protocol. Every figure, PNG and SVG, must
// load and decode (naturalWidth > 0), and the page must request nothing
// but files from the results directory. Chromium's own background traffic
// (update checks, network time) is not the page's: it goes to a trap proxy
// that refuses it, and is only logged.
func TestReportInChromium(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs Chromium")
	bin := chromium.Binary()
	slowlabtest.Require(t, bin != "", "chromium is not installed (make test installs it)")
	dir := t.TempDir()
	writeResults(t, dir)
	rep, err := report.Write(dir, []report.Section{standIn})
	if err != nil {
		t.Fatal(err)
	}

	var served, trapped requestLog
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.add(r.Method + " " + r.URL.Path)
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	// Everything that is not loopback goes to this proxy, which refuses
	// it: a report that needed the network would show broken images.
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trapped.add(r.Method + " " + r.Host)
		http.Error(w, "slowlab report test: no network", http.StatusForbidden)
	}))
	defer trap.Close()
	trapURL, _ := url.Parse(trap.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	br, err := chromium.Start(ctx, bin, chromium.Options{Args: []string{"--proxy-server=http://" + trapURL.Host}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := br.Close(); err != nil {
			t.Errorf("end chromium: %v", err)
		}
	})
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\nchromium stderr:\n%s", append(args, br.Stderr(15))...)
	}

	c, err := br.Connect(ctx)
	if err != nil {
		fail("%v", err)
	}
	defer c.Close()
	page, err := c.NewPage()
	if err != nil {
		fail("%v", err)
	}
	s := page.Session
	var pageRequests []string
	c.OnEvent = func(m chromium.Message) {
		if m.SessionID != s || m.Method != "Network.requestWillBeSent" {
			return
		}
		var p struct{ Request struct{ URL string } }
		if json.Unmarshal(m.Params, &p) == nil {
			pageRequests = append(pageRequests, p.Request.URL)
		}
	}
	if err := c.Call(s, "Network.enable", map[string]any{}, nil); err != nil {
		fail("%v", err)
	}
	if err := c.Navigate(s, srv.URL+"/"+report.HTMLFile); err != nil {
		fail("%v", err)
	}
	var value string
	if err := c.Evaluate(s, probeExpression, &value); err != nil {
		fail("probe: %v", err)
	}
	c.Call("", "Browser.close", map[string]any{}, nil) // the cleanup kills it anyway

	var images []struct {
		Src           string
		Width, Height int
	}
	if err := json.Unmarshal([]byte(value), &images); err != nil {
		t.Fatalf("probe result %q: %v", value, err)
	}
	seen := map[string]bool{}
	for _, im := range images {
		if im.Width <= 0 || im.Height <= 0 {
			t.Errorf("%s did not load in chromium: %dx%d", im.Src, im.Width, im.Height)
		}
		seen[im.Src] = true
	}
	for _, f := range rep.Figures {
		for _, file := range f.Files {
			if !seen[file] {
				t.Errorf("%s was not loaded by the page", file)
			}
		}
	}
	if len(pageRequests) < 1+len(rep.Figures) {
		t.Errorf("saw %d page requests, want the page and its figures: %q", len(pageRequests), pageRequests)
	}
	for _, u := range pageRequests {
		if !strings.HasPrefix(u, srv.URL+"/") {
			t.Errorf("the report requested %s: not a file beside it", u)
		}
	}
	for _, r := range served.list() {
		p := strings.TrimPrefix(r, "GET /")
		if p == "favicon.ico" { // the browser asks for it, not the report
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil || st.IsDir() {
			t.Errorf("the loopback server was asked for %q, which is not a file of the results directory", r)
		}
	}
	t.Logf("%d images loaded; the page made %d requests; "+
		"chromium's own background requests refused by the trap: %q", len(images), len(pageRequests), trapped.list())
}
