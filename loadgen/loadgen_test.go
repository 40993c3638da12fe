package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"
)

func TestConstantPacer(t *testing.T) {
	p, err := RatePacer(8, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if p.Hits() != 72 {
		t.Errorf("8/s for 9s: %d hits, want 72", p.Hits())
	}
	n := 0
	for hit := 0; ; hit++ {
		off, ok := p.Due(hit)
		if !ok {
			break
		}
		if want := time.Duration(hit) * 125 * time.Millisecond; off != want {
			t.Fatalf("hit %d due at %s, want %s", hit, off, want)
		}
		n++
	}
	if n != 72 {
		t.Errorf("Due gave %d hits, want 72", n)
	}
	for _, tc := range []struct {
		rate float64
		d    time.Duration
		want string
	}{
		{0, time.Second, "rate 0: want more than 0"},
		{-1, time.Second, "rate -1: want more than 0"},
		{2e6, time.Second, "rate 2e+06: want more than 0"},
		{10, 0, "duration 0s: must be more than 0"},
	} {
		if _, err := RatePacer(tc.rate, tc.d); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("RatePacer(%v, %s) = %v, want %q...", tc.rate, tc.d, err, tc.want)
		}
	}
}

// An open loop never waits for responses: with a server slower than the
// schedule, every request still starts on time and gets exactly one result.
func TestOpenLoopDoesNotWaitForResponses(t *testing.T) {
	var active, peak atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := active.Add(1)
		defer active.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(400 * time.Millisecond)
		w.Header().Set("Server-Timing", "app;dur=400")
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	c := NewClient(ClientOptions{})
	defer c.Close()
	var streamed int
	loop := OpenLoop{Client: c, URL: srv.URL, Pacer: ConstantPacer{Interval: 20 * time.Millisecond, Duration: 200 * time.Millisecond},
		Start: time.Now(), RunID: "r1", Metrics: m, OnResult: func(Result) { streamed++ }}
	res := loop.Run(context.Background())
	if len(res) != 10 || streamed != 10 {
		t.Fatalf("%d results, %d streamed; want 10", len(res), streamed)
	}
	for i, r := range res {
		if r.Seq != i || r.Err != nil || r.Status != 200 || r.Bytes != 5 || !r.NewConn {
			t.Errorf("result %d: %+v", i, r)
		}
		if r.ServerTiming != 400*time.Millisecond {
			t.Errorf("result %d server timing %s", i, r.ServerTiming)
		}
		if r.Latency < 400*time.Millisecond || r.TTFB > r.Latency {
			t.Errorf("result %d latency %s ttfb %s", i, r.Latency, r.TTFB)
		}
	}
	// All 10 were in flight at once: the schedule ran ahead of the responses.
	if peak.Load() < 8 {
		t.Errorf("peak concurrency %d: the loop waited for responses", peak.Load())
	}
	want := `
# HELP slowlab_loadgen_requests_total Requests that got a response, by status code.
# TYPE slowlab_loadgen_requests_total counter
slowlab_loadgen_requests_total{code="200",role="fast",run_id="r1"} 10
# HELP slowlab_loadgen_received_bytes_total Response body bytes received.
# TYPE slowlab_loadgen_received_bytes_total counter
slowlab_loadgen_received_bytes_total{role="fast",run_id="r1"} 50
# HELP slowlab_loadgen_in_flight Requests started and not finished.
# TYPE slowlab_loadgen_in_flight gauge
slowlab_loadgen_in_flight{role="fast",run_id="r1"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "slowlab_loadgen_requests_total", "slowlab_loadgen_received_bytes_total", "slowlab_loadgen_in_flight"); err != nil {
		t.Error(err)
	}
	counts := map[string]uint64{}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, mm := range mf.Metric {
			if h := mm.GetHistogram(); h != nil {
				counts[mf.GetName()] += h.GetSampleCount()
			}
		}
	}
	for name, want := range map[string]uint64{"slowlab_loadgen_request_duration_seconds": 10, "slowlab_loadgen_schedule_lag_seconds": 10,
		"slowlab_loadgen_connect_duration_seconds": 10, "slowlab_loadgen_ttfb_seconds": 10, "slowlab_loadgen_server_timing_seconds": 10} {
		if counts[name] != want {
			t.Errorf("%s count %d, want %d", name, counts[name], want)
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func TestFailedRequestsKeepTheirRows(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := "http://" + ln.Addr().String() + "/"
	ln.Close()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer hang.Close()
	short := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("only ten.."))
	}))
	defer short.Close()

	for _, tc := range []struct {
		name, url, reason string
	}{
		{"refused", refused, "refused"},
		{"timeout", hang.URL, "timeout"},
		{"short body", short.URL, "incomplete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			c := NewClient(ClientOptions{Timeout: 200 * time.Millisecond})
			loop := OpenLoop{Client: c, URL: tc.url, Pacer: ConstantPacer{Interval: 10 * time.Millisecond, Duration: 30 * time.Millisecond},
				Start: time.Now(), RunID: "r", Metrics: NewMetrics(reg)}
			res := loop.Run(context.Background())
			if len(res) != 3 {
				t.Fatalf("%d results, want 3", len(res))
			}
			for _, r := range res {
				if r.Err == nil || ErrorReason(r.Err) != tc.reason {
					t.Errorf("seq %d: err %v (reason %q), want reason %q", r.Seq, r.Err, ErrorReason(r.Err), tc.reason)
				}
			}
			want := fmt.Sprintf(`
# HELP slowlab_loadgen_request_errors_total Requests that failed without a complete response, by reason (timeout, refused, reset, eof, canceled, incomplete, other).
# TYPE slowlab_loadgen_request_errors_total counter
slowlab_loadgen_request_errors_total{reason=%q,role="fast",run_id="r"} 3
`, tc.reason)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "slowlab_loadgen_request_errors_total"); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestOpenLoopCancel(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(120*time.Millisecond, cancel)
	c := NewClient(ClientOptions{})
	loop := OpenLoop{Client: c, URL: hang.URL, Pacer: ConstantPacer{Interval: 50 * time.Millisecond, Duration: time.Hour}, Start: time.Now()}
	res := loop.Run(ctx)
	if len(res) < 2 || len(res) > 4 {
		t.Fatalf("%d results after cancelling at 120ms of a 50ms schedule", len(res))
	}
	for _, r := range res {
		if ErrorReason(r.Err) != "canceled" {
			t.Errorf("seq %d: %v, want canceled", r.Seq, r.Err)
		}
	}
}

func TestKeepAliveReusesConnections(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "x") }))
	defer srv.Close()
	c := NewClient(ClientOptions{KeepAlive: true})
	defer c.Close()
	var rs [3]Result
	for i := range rs {
		c.Get(context.Background(), srv.URL, &rs[i])
	}
	if !rs[0].NewConn || rs[1].NewConn || rs[2].NewConn {
		t.Errorf("new conn flags %v %v %v, want true false false", rs[0].NewConn, rs[1].NewConn, rs[2].NewConn)
	}
}

func TestSlowReaderPacesAndSetsRcvBuf(t *testing.T) {
	const size = 1 << 20
	var rcvbuf atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		w.Write(make([]byte, size))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/large")
	reg := prometheus.NewRegistry()
	sr := SlowReader{URL: u, RcvBuf: 8 << 10, ReadSize: 16 << 10, Rate: 4 << 20, RunID: "s", Metrics: NewMetrics(reg)}
	// Check SO_RCVBUF on a connection made the same way.
	d := net.Dialer{Control: func(n, a string, c syscall.RawConn) error {
		if err := rcvBufControl(sr.RcvBuf)(n, a, c); err != nil {
			return err
		}
		return c.Control(func(fd uintptr) {
			v, _ := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
			rcvbuf.Store(int64(v))
		})
	}}
	conn, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if rcvbuf.Load() != 16<<10 {
		t.Errorf("SO_RCVBUF reads back %d, want 16384 (8 KiB doubled by Linux)", rcvbuf.Load())
	}
	got := sr.Run(context.Background(), 3)
	if !got.Complete || got.Bytes != size || got.Status != 200 || got.Client != 3 || got.Err != nil {
		t.Fatalf("download: %+v", got)
	}
	// Pacing guarantees consumed/elapsed <= rate, so 1 MiB at 4 MiB/s takes >= 250 ms.
	if got.Receive < 250*time.Millisecond {
		t.Errorf("receive %s: faster than the pacing allows", got.Receive)
	}
	want := `
# HELP slowlab_loadgen_received_bytes_total Response body bytes received.
# TYPE slowlab_loadgen_received_bytes_total counter
slowlab_loadgen_received_bytes_total{role="slow",run_id="s"} 1.048576e+06
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "slowlab_loadgen_received_bytes_total"); err != nil {
		t.Error(err)
	}
}

func TestSlowReaderFailures(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	u, _ := url.Parse("http://" + ln.Addr().String() + "/large")
	ln.Close()
	d := SlowReader{URL: u, ReadSize: 1024, Rate: 1e6}.Run(context.Background(), 0)
	if d.Complete || ErrorReason(d.Err) != "refused" {
		t.Errorf("refused: %+v", d)
	}
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		w.Write(make([]byte, 1000))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer cut.Close()
	u, _ = url.Parse(cut.URL)
	d = SlowReader{URL: u, ReadSize: 1024, Rate: 1e9}.Run(context.Background(), 0)
	if d.Complete || d.Err == nil || d.Bytes != 1000 {
		t.Errorf("cut short: %+v", d)
	}
	for _, tc := range []struct {
		s    SlowReader
		want string
	}{
		{SlowReader{RcvBuf: -1, ReadSize: 1, Rate: 1}, "receive buffer -1"},
		{SlowReader{ReadSize: 0, Rate: 1}, "read size 0"},
		{SlowReader{ReadSize: 1, Rate: 0}, "read rate 0"},
	} {
		if err := tc.s.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Validate %+v = %v, want %q", tc.s, err, tc.want)
		}
	}
}

func TestCheckTarget(t *testing.T) {
	for _, tc := range []struct {
		url    string
		remote bool
		want   string // "" = ok
	}{
		{"http://127.0.0.1:8000/fast", false, ""},
		{"http://127.9.9.9/", false, ""},
		{"http://[::1]:80/", false, ""},
		{"http://localhost:1/", false, ""},
		{"http://10.0.0.1/", false, "is not a loopback address"},
		{"http://example.invalid/", false, "is not a loopback address"},
		{"http://10.0.0.1/", true, ""},
		{"https://127.0.0.1/", false, `scheme "https" not supported`},
		{"ftp://127.0.0.1/", false, `scheme "ftp" not supported`},
		{"127.0.0.1:8000", false, "not a URL"},
		{"http://", false, "no host"},
		{"http://%zz", false, "not a URL"},
	} {
		_, err := CheckTarget(tc.url, tc.remote)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckTarget(%q, %v) = %v, want %q", tc.url, tc.remote, err, tc.want)
		}
	}
}

func TestErrorReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{context.Canceled, "canceled"},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), "timeout"},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, "refused"},
		{syscall.ECONNRESET, "reset"},
		{syscall.EPIPE, "reset"},
		{ErrIncomplete, "incomplete"},
		{errors.New("weird"), "other"},
	} {
		if got := ErrorReason(tc.err); got != tc.want {
			t.Errorf("ErrorReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestParseServerTiming(t *testing.T) {
	for _, tc := range []struct {
		h    string
		want time.Duration
		ok   bool
	}{
		{"app;dur=1.5", 1500 * time.Microsecond, true},
		{"db;dur=3, app;desc=\"x\";dur=0.25", 250 * time.Microsecond, true},
		{"APP; DUR = 2", 2 * time.Millisecond, true},
		{`app;dur="4"`, 4 * time.Millisecond, true},
		{"app", 0, false},
		{"db;dur=1", 0, false},
		{"app;dur=abc", 0, false},
		{"app;dur=-1", 0, false},
		{"app;dur=NaN", 0, false},
		{"app;dur=Inf", 0, false},
		{"", 0, false},
	} {
		got, ok := ParseServerTiming(tc.h, "app")
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseServerTiming(%q) = %s, %v; want %s, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseServerTiming(f *testing.F) {
	for _, s := range []string{"app;dur=1.5", `db;dur=3, app;desc="x";dur=0.25`, "app;dur=", ";;,,=", "app;dur=1e308"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		d, ok := ParseServerTiming(h, "app")
		if !ok && d != 0 || d < 0 || d > time.Duration(1e9*float64(time.Millisecond)) {
			t.Fatalf("ParseServerTiming(%q) = %s, %v", h, d, ok)
		}
	})
}
