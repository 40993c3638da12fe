package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/slowlab/slowlab/internal/slowlabtest"
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

// chromiumPath returns the Chromium binary, or "" when there is none.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

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
	bin := chromiumPath()
	slowlabtest.Require(t, bin != "", "chromium is not installed (make test installs it)")
	dir := t.TempDir()
	writeResults(t, dir)
	rep, err := Write(dir, []Section{standIn})
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
	profile := filepath.Join(t.TempDir(), "chromium-profile")
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
		"--user-data-dir="+profile, "--proxy-server=http://"+trapURL.Host,
		"--remote-debugging-port=0", "--remote-allow-origins=http://127.0.0.1", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Chromium's helpers share its process group: end them all, and only
	// them, when the test is done or times out.
	killGroup := func() error {
		if cmd.Process == nil {
			return nil
		}
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		return nil
	}
	cmd.Cancel = killGroup
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr // written by exec's own goroutine, read only after Wait
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	stop := sync.OnceValue(func() error {
		kerr := killGroup()
		<-waited
		return kerr
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("kill chromium's process group: %v", err)
		}
	})
	fail := func(format string, args ...any) {
		t.Helper()
		stop() // stderr is complete once Wait has returned
		t.Fatalf(format+"\nchromium stderr:\n%s", append(args, lastLines(stderr.String(), 15))...)
	}

	wsURL, err := devToolsURL(ctx, profile)
	if err != nil {
		fail("%v", err)
	}
	c, err := dialCDP(ctx, wsURL)
	if err != nil {
		fail("%v", err)
	}
	defer c.ws.CloseNow()

	var target struct{ TargetID string }
	if err := c.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		fail("%v", err)
	}
	var attached struct{ SessionID string }
	if err := c.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		fail("%v", err)
	}
	s := attached.SessionID
	var pageRequests []string
	loaded := false
	c.onEvent = func(m cdpMessage) {
		if m.SessionID != s {
			return
		}
		switch m.Method {
		case "Network.requestWillBeSent":
			var p struct{ Request struct{ URL string } }
			if json.Unmarshal(m.Params, &p) == nil {
				pageRequests = append(pageRequests, p.Request.URL)
			}
		case "Page.loadEventFired":
			loaded = true
		}
	}
	for _, method := range []string{"Network.enable", "Page.enable"} {
		if err := c.call(s, method, map[string]any{}, nil); err != nil {
			fail("%v", err)
		}
	}
	var nav struct{ ErrorText string }
	if err := c.call(s, "Page.navigate", map[string]any{"url": srv.URL + "/" + HTMLFile}, &nav); err != nil || nav.ErrorText != "" {
		fail("navigate: %v %s", err, nav.ErrorText)
	}
	for !loaded {
		if err := c.next(); err != nil {
			fail("waiting for the load event: %v", err)
		}
	}
	var eval struct {
		Result           struct{ Value string }
		ExceptionDetails json.RawMessage
	}
	if err := c.call(s, "Runtime.evaluate", map[string]any{"expression": probeExpression, "awaitPromise": true,
		"returnByValue": true}, &eval); err != nil || eval.ExceptionDetails != nil {
		fail("probe: %v %s", err, eval.ExceptionDetails)
	}
	c.call("", "Browser.close", map[string]any{}, nil) // the cleanup kills it anyway

	var images []struct {
		Src           string
		Width, Height int
	}
	if err := json.Unmarshal([]byte(eval.Result.Value), &images); err != nil {
		t.Fatalf("probe result %q: %v", eval.Result.Value, err)
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

// devToolsURL waits for Chromium to write DevToolsActivePort into its
// profile (it does with --remote-debugging-port=0) and returns the
// browser's DevTools websocket URL.
func devToolsURL(ctx context.Context, profile string) (string, error) {
	for {
		b, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort"))
		if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); err == nil && len(lines) == 2 {
			return "ws://127.0.0.1:" + lines[0] + lines[1], nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("chromium wrote no DevToolsActivePort: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// cdpMessage is a DevTools protocol response or event.
type cdpMessage struct {
	ID        int             `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	SessionID string          `json:"sessionId"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// cdp is a minimal synchronous DevTools protocol client: one call at a
// time, events handed to onEvent while waiting.
type cdp struct {
	ctx     context.Context // bounds the whole session
	ws      *websocket.Conn
	lastID  int
	onEvent func(cdpMessage)
}

// dialCDP connects to the DevTools websocket at wsURL. The Origin header
// is the one --remote-allow-origins lets in.
func dialCDP(ctx context.Context, wsURL string) (*cdp, error) {
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {"http://127.0.0.1"}},
	})
	if err != nil {
		return nil, fmt.Errorf("connect to DevTools at %s: %w", wsURL, err)
	}
	// DevTools messages (a probe's result, a request's headers) can
	// exceed the library's default limit of 32 KiB.
	ws.SetReadLimit(64 << 20)
	return &cdp{ctx: ctx, ws: ws, onEvent: func(cdpMessage) {}}, nil
}

// next reads one message and hands it to onEvent if it is an event.
func (c *cdp) next() error {
	_, err := c.read()
	return err
}

func (c *cdp) read() (cdpMessage, error) {
	var m cdpMessage
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if err := wsjson.Read(ctx, c.ws, &m); err != nil {
		return m, fmt.Errorf("read DevTools message: %w", err)
	}
	if m.Method != "" {
		c.onEvent(m)
	}
	return m, nil
}

// call sends method with params (to session, or the browser when
// session is "") and decodes the result into result, if not nil.
func (c *cdp) call(session, method string, params any, result any) error {
	c.lastID++
	req := map[string]any{"id": c.lastID, "method": method, "params": params}
	if session != "" {
		req["sessionId"] = session
	}
	if err := wsjson.Write(c.ctx, c.ws, req); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	for {
		m, err := c.read()
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if m.ID != c.lastID {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %d %s", method, m.Error.Code, m.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
