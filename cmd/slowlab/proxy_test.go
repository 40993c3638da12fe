package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestProxyFlagErrors(t *testing.T) {
	on := func(more ...string) []string {
		return append([]string{"proxy", "--buffering", "on", "--upstream", "127.0.0.1:8000"}, more...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy", "--buffering", "x", "--upstream", "127.0.0.1:8000"}, `slowlab proxy: --buffering "x": allowed on, off`},
		{[]string{"proxy", "--upstream", "127.0.0.1:8000"}, `slowlab proxy: --buffering "": allowed on, off`},
		{[]string{"proxy", "--buffering", "on"}, `slowlab proxy: --upstream "": allowed host:port with a port 1 to 65535, e.g. 127.0.0.1:8000`},
		{[]string{"proxy", "--buffering", "on", "--upstream", "127.0.0.1"}, `slowlab proxy: --upstream "127.0.0.1": allowed host:port with a port 1 to 65535, e.g. 127.0.0.1:8000`},
		{[]string{"proxy", "--buffering", "off", "--upstream", "10.0.0.1:80"}, `slowlab proxy: --upstream "10.0.0.1:80": allowed a loopback HOST:PORT (127.0.0.0/8, ::1, localhost) unless --allow-remote`},
		{on("--listen", "nonsense"), `slowlab proxy: --listen "nonsense": allowed HOST:PORT, e.g. 127.0.0.1:8080 (port 0 picks a free port)`},
		{on("--admin", "127.0.0.1:99999"), `slowlab proxy: --admin "127.0.0.1:99999": allowed HOST:PORT, e.g. 127.0.0.1:8080 (port 0 picks a free port)`},
		{on("--buffer-size", "16q"), `slowlab proxy: --buffer-size "16q": allowed a whole number of bytes with an optional unit k, m or g (powers of 1024, as in nginx; KiB, MiB, GiB and kb, mb, gb also accepted), e.g. 16k, at most 256m`},
		{on("--buffer-size", "0"), `slowlab proxy: --buffer-size "0": allowed 1k to 16m`},
		{on("--buffers", "4"), `slowlab proxy: --buffers "4": allowed "COUNT SIZE" as in nginx proxy_buffers, e.g. "4 16k"`},
		{on("--buffers", "1 16k"), `slowlab proxy: --buffers "1 16k": allowed a count of 2 to 1024 (nginx needs at least 2)`},
		{on("--busy-buffers-size", "64k"), `slowlab proxy: --busy-buffers-size "64k": allowed at least 16k (the larger of BufferSize and one of Buffers) and less than 48k (all Buffers but one)`},
		{on("--max-temp-file-size", "-1"), `slowlab proxy: --max-temp-file-size "-1": allowed a whole number of bytes`},
		{on("--max-temp-file-size", "4k"), `slowlab proxy: --max-temp-file-size "4k": allowed 0 (no temp file) or at least 16k`},
		{on("--temp-file-write-size", "1k"), `slowlab proxy: --temp-file-write-size "1k": allowed 16k (the larger of BufferSize and one of Buffers) to 256m`},
		{on("--temp-dir", ""), `slowlab proxy: --temp-dir "": allowed a directory path`},
		{on("--upstream-timeout", "soon"), `slowlab proxy: --upstream-timeout "soon": allowed a Go duration, e.g. 60s or 500ms`},
		{on("--upstream-timeout", "0s"), `slowlab proxy: --upstream-timeout "0s": allowed a duration above 0, e.g. 60s`},
		{on("--shutdown-timeout", "-1s"), `slowlab proxy: --shutdown-timeout "-1s": allowed 0 or more, e.g. 5s`},
		{on("--http-version", "2"), `slowlab proxy: --http-version "2": allowed 1.0, 1.1`},
		{on("--tls-cert", "cert.pem"), `slowlab proxy: --tls-cert "cert.pem", --tls-key "": give both files or neither`},
		{on("--tls-key", "key.pem"), `slowlab proxy: --tls-cert "", --tls-key "key.pem": give both files or neither`},
		{on("--tls-cert", "testdata/no-such-cert.pem", "--tls-key", "testdata/no-such-key.pem"), `slowlab proxy: --tls-cert "testdata/no-such-cert.pem", --tls-key "testdata/no-such-key.pem": open testdata/no-such-cert.pem: no such file or directory`},
		{on("--http3"), `slowlab proxy: --http3: allowed only with --tls-cert and --tls-key (QUIC is always TLS)`},
		{on("--bogus"), `slowlab proxy: flag provided but not defined: -bogus (see --help)`},
		{on("extra"), `slowlab proxy: unexpected argument "extra" (see --help)`},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tc.args...)
			// The flag package itself prints usage on an undefined flag.
			if code != 2 || stdout != "" && !strings.Contains(tc.want, "not defined") {
				t.Errorf("exit %d, stdout %q; want 2 and nothing", code, stdout)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) {
				t.Errorf("stderr:\n%s\nwant one line starting\n%s", stderr, tc.want)
			}
		})
	}
}

// TestProxyHTTPVersionFlag: --http-version 1.0 sets UpstreamHTTP10, and
// the default is the lab's 1.1.
func TestProxyHTTPVersionFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{{nil, false}, {[]string{"--http-version", "1.1"}, false}, {[]string{"--http-version", "1.0"}, true}} {
		fs := newFlagSet("proxy", "", io.Discard)
		f := defineProxyFlags(fs)
		if err := fs.Parse(append([]string{"--buffering", "on", "--upstream", "127.0.0.1:8000"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		o, err := f.options()
		if err != nil || o.UpstreamHTTP10 != tc.want {
			t.Errorf("%v: UpstreamHTTP10 %v (%v), want %v", tc.args, o.UpstreamHTTP10, err, tc.want)
		}
	}
}

// lineWriter collects output from another goroutine and reports its first
// line on first, and, if more is set (capacity 1), that a line was
// completed: a signal pending covers the lines written since.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan string
	more  chan struct{}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := bytes.IndexByte(w.buf.Bytes(), '\n') >= 0
	w.buf.Write(p)
	if i := bytes.IndexByte(w.buf.Bytes(), '\n'); !had && i >= 0 && w.first != nil {
		w.first <- w.buf.String()[:i]
	}
	if w.more != nil && bytes.IndexByte(p, '\n') >= 0 {
		select {
		case w.more <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// lines are the complete lines written so far.
func (w *lineWriter) lines() []string {
	s := w.String()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Split(s[:i], "\n")
	}
	return nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestProxyCommandServes(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server-Timing", "app;dur=2")
		io.WriteString(w, `{"ok": true}`)
	}))
	defer app.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := &lineWriter{first: make(chan string, 1)}
	var stderr lineWriter
	stderr.first = make(chan string, 1)
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"proxy", "--buffering", "on", "--upstream", strings.TrimPrefix(app.URL, "http://"),
			"--temp-dir", t.TempDir(), "--shutdown-timeout", "1s"}, stdout, &stderr)
	}()
	var ready string
	select {
	case ready = <-stdout.first:
	case code := <-exit:
		t.Fatalf("exit %d before ready: %s", code, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("no ready line")
	}
	var listen, admin string
	for _, f := range strings.Fields(strings.TrimPrefix(ready, "ready ")) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "listen":
			listen = v
		case "admin":
			admin = v
		}
	}
	if !strings.HasPrefix(ready, "ready listen=127.0.0.1:") || !strings.HasPrefix(admin, "127.0.0.1:") || len(strings.Fields(ready)) != 3 {
		t.Fatalf("ready line %q, want ready listen=IP:PORT admin=IP:PORT", ready)
	}

	body := httpGet(t, "http://"+listen+"/fast")
	if body != `{"ok": true}` {
		t.Errorf("proxied body %q", body)
	}
	if h := httpGet(t, "http://"+admin+"/healthz"); h != "ok\n" {
		t.Errorf("/healthz %q", h)
	}
	if m := httpGet(t, "http://"+admin+"/metrics"); !strings.Contains(m, `slowlab_proxy_requests_total{code="200"} 1`) {
		t.Errorf("/metrics lacks the request:\n%s", m)
	}

	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("exit %d after cancel, stderr %s", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("proxy did not stop after cancel")
	}
	if out := stdout.String(); out != ready+"\n" {
		t.Errorf("stdout %q, want only the ready line", out)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
