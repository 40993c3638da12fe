// Package chromium owns starting headless Chromium for tests and driving
// it over the DevTools protocol: finding the binary, starting it with a
// profile of its own (removed when it ends) in its own process group,
// ending it by its PID, and a minimal synchronous DevTools client.
package chromium

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// Binary returns the Chromium binary on PATH, or "" when there is none.
func Binary() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// baseArgs keep headless Chromium to what a test asks of it: no GPU, no
// QUIC, no first-run, sync, update or extension traffic.
var baseArgs = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
	"--remote-debugging-port=0", "--remote-allow-origins=http://127.0.0.1"}

// Options configures Start.
type Options struct {
	// Args are flags beyond the base ones (a proxy, host resolver rules).
	Args []string
	// StartCmd starts the prepared command; nil calls its Start. A
	// caller that needs Chromium in another network namespace starts it
	// on a thread inside that namespace.
	StartCmd func(*exec.Cmd) error
	// Dial reaches Chromium's DevTools port on 127.0.0.1 (in Chromium's
	// network namespace); nil dials from this one.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// Browser is a running Chromium.
type Browser struct {
	cmd     *exec.Cmd
	profile string
	dial    func(ctx context.Context, network, address string) (net.Conn, error)
	stderr  bytes.Buffer // written by exec's goroutine; read only after Wait
	waited  chan error
	stop    func() error
}

// Start starts headless Chromium (bin) on about:blank with a new
// profile. ctx bounds its life: when it ends, Chromium's process group is
// killed. Close it on every path.
func Start(ctx context.Context, bin string, o Options) (*Browser, error) {
	if bin == "" {
		return nil, errors.New("chromium: no binary given")
	}
	profile, err := os.MkdirTemp("", "slowlab-chromium-")
	if err != nil {
		return nil, fmt.Errorf("chromium profile: %w", err)
	}
	args := append(append(append([]string{}, baseArgs...), "--user-data-dir="+profile), o.Args...)
	b := &Browser{profile: profile, dial: o.Dial, waited: make(chan error, 1)}
	b.cmd = exec.CommandContext(ctx, bin, append(args, "about:blank")...)
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	b.cmd.Cancel = b.killGroup // Chromium's helpers share its process group: end them all, and only them
	b.cmd.WaitDelay = 5 * time.Second
	b.cmd.Stderr = &b.stderr
	start := o.StartCmd
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if err := start(b.cmd); err != nil {
		os.RemoveAll(profile)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { b.waited <- b.cmd.Wait() }()
	b.stop = sync.OnceValue(func() error {
		kerr := b.killGroup()
		<-b.waited
		return errors.Join(kerr, b.waitGroupGone(), os.RemoveAll(b.profile))
	})
	return b, nil
}

// PID is Chromium's process id (its process group's too).
func (b *Browser) PID() int { return b.cmd.Process.Pid }

// killGroup kills Chromium's process group, by its PID.
func (b *Browser) killGroup() error {
	if b.cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill chromium's process group %d: %w", b.cmd.Process.Pid, err)
	}
	return nil
}

// waitGroupGone waits until no process of Chromium's group is left
// (its helpers die after it, and their parent reaps them), or 10 s.
func (b *Browser) waitGroupGone() error {
	pid := b.cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err := syscall.Kill(-pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chromium's process group %d still has processes 10 s after SIGKILL", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Close kills Chromium's process group, waits until it is gone and removes
// its profile. It may be called again.
func (b *Browser) Close() error { return b.stop() }

// Stderr is the last n lines Chromium wrote to stderr; it closes b first
// (the output is complete only once Chromium has ended).
func (b *Browser) Stderr(n int) string {
	b.Close()
	return LastLines(b.stderr.String(), n)
}

// Connect waits for Chromium to write DevToolsActivePort into its
// profile (it does with --remote-debugging-port=0) and connects to the
// browser's DevTools websocket.
func (b *Browser) Connect(ctx context.Context) (*CDP, error) {
	var wsURL string
	for wsURL == "" {
		data, err := os.ReadFile(filepath.Join(b.profile, "DevToolsActivePort"))
		if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); err == nil && len(lines) == 2 {
			wsURL = "ws://127.0.0.1:" + lines[0] + lines[1]
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("chromium wrote no DevToolsActivePort: %w", ctx.Err())
		case err := <-b.waited:
			b.waited <- err
			return nil, fmt.Errorf("chromium ended before it wrote DevToolsActivePort: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	opts := &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://127.0.0.1"}}} // what --remote-allow-origins lets in
	if b.dial != nil {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: b.dial}}
	}
	ws, _, err := websocket.Dial(ctx, wsURL, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to DevTools at %s: %w", wsURL, err)
	}
	// DevTools messages (a probe's result, a request's headers) can
	// exceed the library's default limit of 32 KiB.
	ws.SetReadLimit(64 << 20)
	return &CDP{ctx: ctx, ws: ws, OnEvent: func(Message) {}}, nil
}

// Message is a DevTools protocol response or event.
type Message struct {
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

// CDP is a minimal synchronous DevTools protocol client: one call at a
// time, events handed to OnEvent while waiting.
type CDP struct {
	ctx     context.Context // bounds the whole session
	ws      *websocket.Conn
	lastID  int
	OnEvent func(Message)
}

// Close closes the websocket.
func (c *CDP) Close() error { return c.ws.CloseNow() }

// Next reads one message and hands it to OnEvent if it is an event.
func (c *CDP) Next() error {
	_, err := c.read()
	return err
}

func (c *CDP) read() (Message, error) {
	var m Message
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if err := wsjson.Read(ctx, c.ws, &m); err != nil {
		return m, fmt.Errorf("read DevTools message: %w", err)
	}
	if m.Method != "" {
		c.OnEvent(m)
	}
	return m, nil
}

// Call sends method with params (to session, or the browser when
// session is "") and decodes the result into result, if not nil.
func (c *CDP) Call(session, method string, params any, result any) error {
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

// Evaluate evaluates expression in session's page, awaiting a promise,
// and decodes its value (returned by value) into result.
func (c *CDP) Evaluate(session, expression string, result any) error {
	var eval struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails json.RawMessage
	}
	if err := c.Call(session, "Runtime.evaluate", map[string]any{"expression": expression, "awaitPromise": true,
		"returnByValue": true}, &eval); err != nil {
		return err
	}
	if eval.ExceptionDetails != nil {
		return fmt.Errorf("Runtime.evaluate: exception %s", eval.ExceptionDetails)
	}
	if err := json.Unmarshal(eval.Result.Value, result); err != nil {
		return fmt.Errorf("Runtime.evaluate: value %s: %w", eval.Result.Value, err)
	}
	return nil
}

// LastLines is the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Page is a page target in a browser context of its own.
type Page struct {
	Session string // the session to send the page's methods to
	Context string // its browser context
}

// NewPage opens about:blank in a new browser context (its own cache,
// cookies and connections: a first visit) and attaches to it.
func (c *CDP) NewPage() (Page, error) {
	var bc struct{ BrowserContextID string }
	if err := c.Call("", "Target.createBrowserContext", map[string]any{}, &bc); err != nil {
		return Page{}, err
	}
	var target struct{ TargetID string }
	if err := c.Call("", "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": bc.BrowserContextID}, &target); err != nil {
		return Page{}, err
	}
	var attached struct{ SessionID string }
	if err := c.Call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return Page{}, err
	}
	return Page{Session: attached.SessionID, Context: bc.BrowserContextID}, nil
}

// ClosePage disposes of p's browser context: its page, and its
// connections with it.
func (c *CDP) ClosePage(p Page) error {
	return c.Call("", "Target.disposeBrowserContext", map[string]any{"browserContextId": p.Context}, nil)
}

// Navigate loads url in session's page and waits for its load event;
// OnEvent still sees every event.
func (c *CDP) Navigate(session, url string) error {
	loaded := false
	seen := c.OnEvent
	c.OnEvent = func(m Message) {
		if m.SessionID == session && m.Method == "Page.loadEventFired" {
			loaded = true
		}
		seen(m)
	}
	defer func() { c.OnEvent = seen }()
	if err := c.Call(session, "Page.enable", map[string]any{}, nil); err != nil {
		return err
	}
	var nav struct{ ErrorText string }
	if err := c.Call(session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("navigate to %s: %s", url, nav.ErrorText)
	}
	for !loaded {
		if err := c.Next(); err != nil {
			return fmt.Errorf("waiting for the load event of %s: %w", url, err)
		}
	}
	return nil
}
