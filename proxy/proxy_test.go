package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func TestProxyRelaysBodyExactly(t *testing.T) {
	body := testBody(4<<20 + 123) // not a multiple of any buffer
	for _, tc := range []struct {
		name      string
		buffering bool
		chunked   bool
		maxTemp   int64
	}{
		{name: "off"},
		{name: "off-chunked", chunked: true},
		{name: "on", buffering: true, maxTemp: DefaultMaxTempFileSize},
		{name: "on-chunked", buffering: true, chunked: true, maxTemp: DefaultMaxTempFileSize},
		{name: "on-memory-only", buffering: true, maxTemp: 0},
		{name: "on-small-temp-file", buffering: true, maxTemp: 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := newAppServer(t, body)
			app.chunked = tc.chunked
			o := testOptions(t, app.URL, tc.buffering)
			o.MaxTempFileSize = tc.maxTemp
			_, addr := startProxy(t, o)

			resp, got := get(t, "http://"+addr+"/large")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if !bytes.Equal(got, body) {
				t.Fatalf("body differs: got %d bytes, want %d (first difference at %d)", len(got), len(body), firstDiff(got, body))
			}
			wantCL := int64(len(body))
			if tc.chunked {
				wantCL = -1
			}
			if resp.ContentLength != wantCL {
				t.Errorf("ContentLength %d, want %d", resp.ContentLength, wantCL)
			}
			if st := resp.Header.Get("Server-Timing"); st != "app;dur=1" {
				t.Errorf("Server-Timing %q not relayed", st)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/octet-stream" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestProxyForwardsRequest(t *testing.T) {
	for _, buffering := range []bool{false, true} {
		t.Run(fmt.Sprint("buffering=", buffering), func(t *testing.T) {
			var upstreamConns atomic.Int32
			seen := make(chan *http.Request, 1)
			var seenBody []byte
			app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seenBody, _ = io.ReadAll(r.Body)
				seen <- r
				w.Header().Set("Keep-Alive", "timeout=5")
				w.Header().Set("X-App", "yes")
				io.WriteString(w, "hello")
			}))
			app.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					upstreamConns.Add(1)
				}
			}
			app.Start()
			defer app.Close()
			_, addr := startProxy(t, testOptions(t, app.URL, buffering))

			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			var clientConns atomic.Int32
			tr.DialContext = func(ctx context.Context, network, a string) (net.Conn, error) {
				clientConns.Add(1)
				return (&net.Dialer{}).DialContext(ctx, network, a)
			}
			for i := range 3 {
				req, _ := http.NewRequest("POST", "http://"+addr+"/echo/a%2Fb?x=1&y=two", strings.NewReader("payload"))
				req.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
				req.Header.Set("X-Slowlab-Run", "run-7")
				req.Header.Set("Connection", "X-Drop-Me")
				req.Header.Set("X-Drop-Me", "1")
				req.Header.Set("Proxy-Authorization", "secret")
				resp, err := (&http.Client{Transport: tr}).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "hello" || resp.Header.Get("X-App") != "yes" || resp.Header.Get("Keep-Alive") != "" {
					t.Errorf("response %q, header %v", b, resp.Header)
				}
				r := <-seen
				if i > 0 {
					continue
				}
				checks := []struct{ what, got, want string }{
					{"method", r.Method, "POST"},
					{"request target", r.RequestURI, "/echo/a%2Fb?x=1&y=two"},
					{"Host", r.Host, strings.TrimPrefix(app.URL, "http://")},
					{"traceparent", r.Header.Get("Traceparent"), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
					{"X-Slowlab-Run", r.Header.Get("X-Slowlab-Run"), "run-7"},
					{"X-Drop-Me (named in Connection)", r.Header.Get("X-Drop-Me"), ""},
					{"Proxy-Authorization", r.Header.Get("Proxy-Authorization"), ""},
					{"User-Agent", r.Header.Get("User-Agent"), "Go-http-client/1.1"},
					{"body", string(seenBody), "payload"},
					{"Connection: close", fmt.Sprint(r.Close), "true"},
					{"proto", r.Proto, "HTTP/1.1"},
				}
				for _, c := range checks {
					if c.got != c.want {
						t.Errorf("upstream saw %s %q, want %q", c.what, c.got, c.want)
					}
				}
			}
			if n := upstreamConns.Load(); n != 3 {
				t.Errorf("upstream connections %d, want 3 (a new one per request)", n)
			}
			if n := clientConns.Load(); n != 1 {
				t.Errorf("client connections %d, want 1 (kept alive)", n)
			}
		})
	}
}

func TestProxyUpstreamUnreachable(t *testing.T) {
	dead := slowlabtest.RefusedAddr(t) // nothing listens there: connection refused
	p, addr := startProxy(t, testOptions(t, dead, true))

	resp, body := get(t, "http://"+addr+"/fast")
	if resp.StatusCode != http.StatusBadGateway || len(body) == 0 || len(body) > 100 {
		t.Fatalf("status %d body %q, want 502 with a short body", resp.StatusCode, body)
	}
	want := `
# HELP slowlab_proxy_requests_total Responses the proxy started, by status code (the upstream's, or 502/504 when the upstream failed before its header).
# TYPE slowlab_proxy_requests_total counter
slowlab_proxy_requests_total{code="200"} 0
slowlab_proxy_requests_total{code="502"} 1
slowlab_proxy_requests_total{code="503"} 0
slowlab_proxy_requests_total{code="504"} 0
# HELP slowlab_proxy_upstream_errors_total Upstream failures by stage: connect, send (request), header, body (response cut short).
# TYPE slowlab_proxy_upstream_errors_total counter
slowlab_proxy_upstream_errors_total{stage="body"} 0
slowlab_proxy_upstream_errors_total{stage="connect"} 1
slowlab_proxy_upstream_errors_total{stage="header"} 0
slowlab_proxy_upstream_errors_total{stage="send"} 0
`
	if err := testutil.GatherAndCompare(p.Registry(), strings.NewReader(want),
		"slowlab_proxy_requests_total", "slowlab_proxy_upstream_errors_total"); err != nil {
		t.Error(err)
	}
}

// rawUpstream accepts connections and hands each to handle after reading
// the request header.
func rawUpstream(t *testing.T, handle func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestProxyUpstreamBadHeader(t *testing.T) {
	up := rawUpstream(t, func(c net.Conn) { io.WriteString(c, "this is not HTTP\r\n\r\n") })
	p, addr := startProxy(t, testOptions(t, up, false))
	resp, _ := get(t, "http://"+addr+"/")
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
	if v := testutil.ToFloat64(p.m.upstreamErrors.WithLabelValues(stageHeader)); v != 1 {
		t.Errorf("header errors %v, want 1", v)
	}
	if b := p.Buffered(); len(b) != 0 {
		t.Errorf("Buffered after a 502: %+v; want none", b)
	}
}

// TestProxyUpstreamBoundsHeader: an upstream that writes header bytes
// for ever (or 1xx responses for ever) gets the client a 502 once the
// header passes maxUpstreamHeaderBytes, the proxy having allocated a few
// MiB, where an unbounded read goes on until the upstream's stop after
// 64 MiB.
func TestProxyUpstreamBoundsHeader(t *testing.T) {
	slowlabtest.Timing(t)
	for _, tc := range []struct{ name, head, repeat string }{
		{"endless header", "HTTP/1.1 200 OK\r\n", "X-Endless: " + strings.Repeat("a", 1000) + "\r\n"},
		{"endless 1xx", "", "HTTP/1.1 103 Early Hints\r\nLink: </" + strings.Repeat("a", 1000) + ">\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			written := make(chan int64, 1)
			repeat := []byte(tc.repeat) // a write allocates nothing
			up := rawUpstream(t, func(c net.Conn) {
				n, _ := io.WriteString(c, tc.head)
				total := int64(n)
				for total < 64<<20 {
					n, err := c.Write(repeat)
					total += int64(n)
					if err != nil {
						break
					}
				}
				written <- total
			})
			p, addr := startProxy(t, testOptions(t, up, false))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			resp, body := get(t, "http://"+addr+"/")
			n := <-written // the upstream saw the proxy close
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d %q, allocated %.1f MiB, upstream wrote %.1f MiB", resp.StatusCode, body, float64(alloc)/(1<<20), float64(n)/(1<<20))
			if resp.StatusCode != http.StatusBadGateway || string(body) != "upstream sent too big header\n" {
				t.Errorf("status %d body %q, want 502 \"upstream sent too big header\"", resp.StatusCode, body)
			}
			if v := testutil.ToFloat64(p.m.upstreamErrors.WithLabelValues(stageHeader)); v != 1 {
				t.Errorf("header errors %v, want 1", v)
			}
			if alloc > 4<<20 {
				t.Errorf("allocated %d bytes, want at most %d", alloc, 4<<20)
			}
		})
	}
}

// TestProxyUpstreamTimeout: an upstream that reads the request and never
// answers gets the client a 504 once UpstreamTimeout passes. The upstream
// lets go only when the proxy closes the connection, so nothing but the
// timeout can end the request.
func TestProxyUpstreamTimeout(t *testing.T) {
	up := rawUpstream(t, func(c net.Conn) { c.Read(make([]byte, 1)) })
	o := testOptions(t, up, true)
	o.UpstreamTimeout = 100 * time.Millisecond
	p, addr := startProxy(t, o)
	start := time.Now()
	resp, _ := get(t, "http://"+addr+"/")
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("status %d, want 504", resp.StatusCode)
	}
	if d := time.Since(start); d < o.UpstreamTimeout {
		t.Errorf("504 after %v, before the %v upstream timeout", d, o.UpstreamTimeout)
	}
	if v := testutil.ToFloat64(p.m.upstreamErrors.WithLabelValues(stageHeader)); v != 1 {
		t.Errorf("header errors %v, want 1", v)
	}
}

// TestProxyUpstreamCutsBody: when the upstream dies mid-body the client
// must see a broken response, never a clean short one.
func TestProxyUpstreamCutsBody(t *testing.T) {
	for _, tc := range []struct {
		name      string
		buffering bool
		header    string
	}{
		{"off-length", false, "Content-Length: 1048576\r\n"},
		{"on-length", true, "Content-Length: 1048576\r\n"},
		{"off-chunked", false, "Transfer-Encoding: chunked\r\n"},
		{"on-chunked", true, "Transfer-Encoding: chunked\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := rawUpstream(t, func(c net.Conn) {
				io.WriteString(c, "HTTP/1.1 200 OK\r\n"+tc.header+"\r\n")
				if strings.Contains(tc.header, "chunked") {
					io.WriteString(c, "10000\r\n")
				}
				c.Write(make([]byte, 100<<10/2))
			})
			p, addr := startProxy(t, testOptions(t, up, tc.buffering))
			resp, err := http.Get("http://" + addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			n, err := io.Copy(io.Discard, resp.Body)
			if err == nil {
				t.Fatalf("read %d bytes without error; want a broken response", n)
			}
			eventually(t, "body error counted", func() bool {
				return testutil.ToFloat64(p.m.upstreamErrors.WithLabelValues(stageBody)) == 1
			})
			eventually(t, "the cut response unlisted from Buffered", func() bool { return len(p.Buffered()) == 0 })
		})
	}
}

func TestProxyMetricsLint(t *testing.T) {
	app := newAppServer(t, testBody(1000))
	p, addr := startProxy(t, testOptions(t, app.URL, true))
	get(t, "http://"+addr+"/")
	problems, err := testutil.GatherAndLint(p.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range problems {
		if strings.HasPrefix(pr.Metric, "slowlab_") {
			t.Errorf("%s: %s", pr.Metric, pr.Text)
		}
	}
	if v := testutil.ToFloat64(p.m.requests.WithLabelValues("200")); v != 1 {
		t.Errorf("requests_total{code=200} %v, want 1", v)
	}
	if n := testutil.CollectAndCount(p.m.upstreamSeconds); n != 1 {
		t.Errorf("upstream_response_seconds series %d, want 1", n)
	}
}

// TestProxyClientLeavesBeforeHeader: a client that gives up while the
// upstream thinks closes the upstream connection too, with no 502 counted.
// Meanwhile Buffered lists the request, with no bytes yet.
func TestProxyClientLeavesBeforeHeader(t *testing.T) {
	arrived := make(chan struct{})
	var once sync.Once
	upstreamGone := make(chan error, 1)
	var upstreamPeer string
	up := rawUpstream(t, func(c net.Conn) {
		upstreamPeer = c.RemoteAddr().String()
		once.Do(func() { close(arrived) })
		c.SetReadDeadline(time.Now().Add(slowlabtest.HangGuard))
		_, err := c.Read(make([]byte, 1)) // returns when the proxy closes the connection
		upstreamGone <- err
	})
	p, addr := startProxy(t, testOptions(t, up, true))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case <-arrived:
	case <-time.After(slowlabtest.HangGuard):
		t.Fatal("the request never reached the upstream")
	}
	want := []Buffered{{Client: c.LocalAddr().String(), UpstreamLocal: upstreamPeer, Buffering: true}}
	if b := p.Buffered(); !slices.Equal(b, want) {
		t.Errorf("Buffered while the upstream thinks: %+v; want %+v", b, want)
	}
	c.Close()
	if err := <-upstreamGone; timedOut(err) {
		t.Fatalf("upstream connection still open %v after the client left", slowlabtest.HangGuard)
	}
	eventually(t, "disconnect counted", func() bool { return testutil.ToFloat64(p.m.clientDisconnects) == 1 })
	eventually(t, "the request unlisted from Buffered", func() bool { return len(p.Buffered()) == 0 })
	if v := testutil.ToFloat64(p.m.requests.WithLabelValues("502")); v != 0 {
		t.Errorf("502s counted: %v", v)
	}
}
