package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// rawResponses serves raw HTTP responses on a loopback listener: a request
// for /close/ID gets response ID and then the connection closed; one for
// /keep/ID gets it and the connection kept, every later request on it
// answered with a plain 2-byte 200. The server reads each request's
// header before answering, so closing never resets unread bytes.
type rawResponses struct {
	base string
	mu   sync.Mutex
	resp map[string][]byte
	next int
}

func newRawResponses(tb testing.TB) *rawResponses {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &rawResponses{base: "http://" + ln.Addr().String(), resp: map[string][]byte{}}
	var wg sync.WaitGroup
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { s.serve(c) })
		}
	})
	return s
}

// remove forgets response id.
func (s *rawResponses) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.resp, id)
}

// add registers raw and returns its ID.
func (s *rawResponses) add(raw []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := fmt.Sprint(s.next)
	s.resp[id] = raw
	return id
}

func (s *rawResponses) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute)) // a client that hangs cannot hold the test's cleanup
	br := bufio.NewReader(c)
	for first := true; ; first = false {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		for {
			h, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(bytes.TrimRight(h, "\r\n")) == 0 {
				break
			}
		}
		if !first {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
			continue
		}
		var mode, id string
		if f := strings.Fields(line); len(f) == 3 {
			mode, id, _ = strings.Cut(strings.TrimPrefix(f[1], "/"), "/")
		}
		s.mu.Lock()
		raw := s.resp[id]
		s.mu.Unlock()
		c.Write(raw)
		if mode != "keep" {
			return
		}
	}
}

// leanPair is a net/http client and a lean client with the same options,
// each observing into its own metrics.
type leanPair struct {
	clients [2]*Client
	metrics [2]*Metrics
	regs    [2]*prometheus.Registry
}

func newLeanPair(keepAlive bool) *leanPair {
	p := &leanPair{}
	for i, lean := range []bool{false, true} {
		p.clients[i] = NewClient(ClientOptions{KeepAlive: keepAlive, Lean: lean, Timeout: 10 * time.Second})
		p.regs[i] = prometheus.NewRegistry()
		p.metrics[i] = NewMetrics(p.regs[i])
	}
	return p
}

func (p *leanPair) close() {
	for _, c := range p.clients {
		c.Close()
	}
}

// get sends url with both and returns net/http's result and lean's.
func (p *leanPair) get(url string) (want, got Result) {
	var r [2]Result
	for i, c := range p.clients {
		c.Get(context.Background(), url, &r[i])
		p.metrics[i].Observe("diff", RoleFast, &r[i])
	}
	return r[0], r[1]
}

// differ describes how got (lean) differs from want (net/http), "" when
// they agree on everything the results files and metrics use.
func differ(want, got Result) string {
	if got.Status == want.Status && got.Bytes == want.Bytes && got.ServerTiming == want.ServerTiming &&
		got.ServerTimingTrailer == want.ServerTimingTrailer && ErrorReason(got.Err) == ErrorReason(want.Err) && got.NewConn == want.NewConn {
		return ""
	}
	return fmt.Sprintf("\nlean     status %d bytes %d st %v trailer %v new %v err %v (%s)\nnet/http status %d bytes %d st %v trailer %v new %v err %v (%s)",
		got.Status, got.Bytes, got.ServerTiming, got.ServerTimingTrailer, got.NewConn, got.Err, ErrorReason(got.Err),
		want.Status, want.Bytes, want.ServerTiming, want.ServerTimingTrailer, want.NewConn, want.Err, ErrorReason(want.Err))
}

// series is every counter's value and every histogram's sample count in
// reg, by name and labels.
func series(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var lbl []string
			for _, l := range m.GetLabel() {
				lbl = append(lbl, l.GetName()+"="+l.GetValue())
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			out = append(out, fmt.Sprintf("%s{%s} %g", mf.GetName(), strings.Join(lbl, ","), v))
		}
	}
	sort.Strings(out)
	return out
}

// keepable are the responses after which a keep-alive connection may be
// reused (or, by their own header, not): the keep-alive run sends a second
// request after each and compares whether it opened a new connection.
var keepable = []string{"cl", "chunked", "chunked-trailer", "http10", "http10-keepalive", "204", "304", "100-then-200",
	"long-header", "long-server-timing", "cl-duplicate", "connection-list-close", "server-timing-twice", "te-and-cl", "status-no-reason"}

// TestLeanDifferential serves each raw response of testdata/responses
// over a loopback socket to the net/http client and to the lean one: both
// must give the same status, body bytes, Server-Timing (header and
// trailer), error class and new-connection flag, and so the same metric
// series; with keep-alive, the request after a reusable response must
// agree on reusing the connection too.
func TestLeanDifferential(t *testing.T) {
	files, err := filepath.Glob("testdata/responses/*.http")
	if err != nil || len(files) < 30 {
		t.Fatalf("%d raw responses in testdata/responses (%v), want the 30 or more cases", len(files), err)
	}
	srv := newRawResponses(t)
	for _, keepAlive := range []bool{false, true} {
		p := newLeanPair(keepAlive)
		defer p.close()
		for _, file := range files {
			name := strings.TrimSuffix(filepath.Base(file), ".http")
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			mode := "close"
			if keepAlive && slices.Contains(keepable, name) {
				mode = "keep"
			}
			p.close() // a new connection: on a kept one, the server answers with the plain 200
			want, got := p.get(srv.base + "/" + mode + "/" + srv.add(raw))
			if d := differ(want, got); d != "" {
				t.Errorf("keep-alive %v, %s:%s", keepAlive, name, d)
			}
			if mode == "keep" {
				want, got = p.get(srv.base + "/keep/" + srv.add(raw)) // reused: answered with the plain 200
				if d := differ(want, got); d != "" {
					t.Errorf("keep-alive %v, the request after %s:%s", keepAlive, name, d)
				}
			}
		}
		if w, g := series(t, p.regs[0]), series(t, p.regs[1]); !slices.Equal(w, g) {
			t.Errorf("keep-alive %v: metric series differ:\nlean     %q\nnet/http %q", keepAlive, g, w)
		}
	}
}

// continue1xx is the informational response hostileResponses repeat.
const continue1xx = "HTTP/1.1 100 Continue\r\n\r\n"

// headerOf returns n1xx 100 Continue responses and a 200 whose header
// pads them to total bytes in all, then its 2-byte body.
func headerOf(n1xx, total int) []byte {
	head := strings.Repeat(continue1xx, n1xx) + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
	pad := total - len(head) - len("\r\n") // X-Pad lines up to the blank line
	var b strings.Builder
	b.WriteString(head)
	for pad > 0 {
		n := min(pad, 1000)
		if rest := pad - n; rest > 0 && rest < 10 {
			n -= 10 // the last line needs its name
		}
		b.WriteString("X-Pad: " + strings.Repeat("a", n-len("X-Pad: \r\n")) + "\r\n")
		pad -= n
	}
	b.WriteString("\r\nok")
	return []byte(b.String())
}

// hostileResponses are responses whose header, their 1xx responses
// included, is at or over MaxResponseHeaderBytes, which lean must bound as
// net/http does (built here: a MiB each is too much for testdata and the
// fuzz seeds it feeds).
func hostileResponses() map[string][]byte {
	const limit = MaxResponseHeaderBytes
	line := "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", limit) + "\r\n\r\n"
	return map[string][]byte{
		"header-at-limit":   headerOf(0, limit),
		"header-over-limit": headerOf(0, limit+1),
		"header-line-over":  []byte(line),
		"1xx-at-limit":      headerOf(limit/len(continue1xx)-10, limit),
		"1xx-over-limit":    headerOf(limit/len(continue1xx)-10, limit+1),
		"1xx-alone-over":    headerOf(limit/len(continue1xx)+1, limit+200),
		"1xx-ten":           headerOf(10, 400), // no bound on their number, as net/http
	}
}

// TestLeanDifferentialHeaderLimit serves the hostileResponses to both
// clients, as TestLeanDifferential: a header (1xx responses included) of
// MaxResponseHeaderBytes is read, one byte more fails both with reason
// header_too_large; with keep-alive, a connection after a header at the
// limit is reused by both. Each response has clients of its own, so none
// is sent on a connection another kept.
func TestLeanDifferentialHeaderLimit(t *testing.T) {
	srv := newRawResponses(t)
	reasons := map[string]int{}
	for _, keepAlive := range []bool{false, true} {
		for name, raw := range hostileResponses() {
			p := newLeanPair(keepAlive)
			defer p.close()
			mode := "close"
			if keepAlive && !strings.Contains(name, "over") {
				mode = "keep"
			}
			want, got := p.get(srv.base + "/" + mode + "/" + srv.add(raw))
			if d := differ(want, got); d != "" {
				t.Errorf("keep-alive %v, %s:%s", keepAlive, name, d)
			}
			if ok := !strings.Contains(name, "over"); (got.Err == nil) != ok || !ok && ErrorReason(got.Err) != "header_too_large" {
				t.Errorf("keep-alive %v, %s: lean status %d err %v (%s), want it to fail with header_too_large only when over the limit",
					keepAlive, name, got.Status, got.Err, ErrorReason(got.Err))
			}
			reasons[ErrorReason(want.Err)]++
			if mode == "keep" {
				want, got = p.get(srv.base + "/keep/" + srv.add(raw))
				if d := differ(want, got); d != "" || got.NewConn {
					t.Errorf("keep-alive %v, the request after %s (new connection %v):%s", keepAlive, name, got.NewConn, d)
				}
			}
			if w, g := series(t, p.regs[0]), series(t, p.regs[1]); !slices.Equal(w, g) {
				t.Errorf("keep-alive %v, %s: metric series differ:\nlean     %q\nnet/http %q", keepAlive, name, g, w)
			}
		}
	}
	if reasons["header_too_large"] != 8 {
		t.Errorf("net/http failed %v, want 8 header_too_large (4 responses over the limit, twice)", reasons)
	}
}

// FuzzLeanMatchesNetHTTP serves arbitrary raw responses (seeded from
// testdata/responses) to both clients: neither may panic or hang (each
// response ends with the connection closed, so a request that times out
// hangs), and lean must give what net/http gives.
func FuzzLeanMatchesNetHTTP(f *testing.F) {
	slowlabtest.EndToEnd(f, "its seeds run real servers for seconds")
	slowlabtest.SeedFiles(f, "*.http")
	for _, raw := range hostileResponses() {
		f.Add(string(raw))
	}
	srv := newRawResponses(f)
	p := newLeanPair(false)
	f.Cleanup(p.close)
	f.Fuzz(func(t *testing.T, raw string) {
		id := srv.add([]byte(raw))
		defer srv.remove(id)
		want, got := p.get(srv.base + "/close/" + id)
		for _, r := range []Result{want, got} {
			if ErrorReason(r.Err) == "timeout" {
				t.Fatalf("%.300q: a request hung until its timeout: %v", raw, r.Err)
			}
		}
		if d := differ(want, got); d != "" {
			t.Fatalf("%.300q:%s", raw, d)
		}
	})
}
