package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"

	"github.com/slowlab/slowlab/internal/slowlabtest"
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

// An open loop never waits for responses: with a server that answers no
// request before all ten have arrived, every request still starts and gets
// exactly one result. (A loop that waited would never send the second.)
func TestOpenLoopDoesNotWaitForResponses(t *testing.T) {
	const n = 10
	var active, peak atomic.Int32
	all := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := active.Add(1)
		defer active.Add(-1)
		for {
			p := peak.Load()
			if a <= p || peak.CompareAndSwap(p, a) {
				break
			}
		}
		if a == n {
			close(all)
		}
		select {
		case <-all:
		case <-r.Context().Done():
			return
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
	if peak.Load() != n {
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
	refused := "http://" + slowlabtest.RefusedAddr(t) + "/"
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer hang.Close()
	short := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("only ten.."))
	}))
	defer short.Close()

	// Only the hanging server gets a short timeout: the others must fail
	// for their own reason however slowly this machine runs.
	for _, tc := range []struct {
		name, url, reason string
		timeout           time.Duration
	}{
		{"refused", refused, "refused", 0},
		{"timeout", hang.URL, "timeout", 200 * time.Millisecond},
		{"short body", short.URL, "incomplete", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			c := NewClient(ClientOptions{Timeout: tc.timeout})
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
			want := bytes.NewBufferString(`
# HELP slowlab_loadgen_request_errors_total Requests that failed without a complete response, by reason (timeout, refused, reset, eof, canceled, incomplete, not_sent, late, header_too_large, other).
# TYPE slowlab_loadgen_request_errors_total counter
`)
			for _, reason := range ErrorReasons {
				n := 0
				if reason == tc.reason {
					n = 3
				}
				fmt.Fprintf(want, "slowlab_loadgen_request_errors_total{reason=%q,role=\"fast\",run_id=\"r\"} %d\n", reason, n)
			}
			if err := testutil.GatherAndCompare(reg, want, "slowlab_loadgen_request_errors_total"); err != nil {
				t.Error(err)
			}
		})
	}
}

// Cancelling a schedule accounts for every hit: the requests answered keep
// their results, those in flight end canceled, and each hit never started
// gets a NotSent result, in seq order after the started ones.
func TestOpenLoopCancelAccountsEveryHit(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs a load for seconds")
	const answered = 3
	var arrived atomic.Int32
	hanging := make(chan struct{}) // closed when a request beyond the answered ones is in the handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := arrived.Add(1)
		if n <= answered {
			fmt.Fprint(w, "ok")
			return
		}
		if n == answered+1 {
			close(hanging)
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := prometheus.NewRegistry()
	c := NewClient(ClientOptions{})
	defer c.Close()
	pacer := ConstantPacer{Interval: 20 * time.Millisecond, Duration: 10 * time.Minute}
	var streamed []Result
	observed := make(chan struct{})
	loop := OpenLoop{Client: c, URL: srv.URL, Pacer: pacer, Start: time.Now(), RunID: "c", Metrics: NewMetrics(reg),
		OnResult: func(r Result) {
			streamed = append(streamed, r)
			if len(streamed) == answered {
				close(observed)
			}
		}}
	if got, want := loop.Planned(), pacer.Hits(); got != want || want != 30000 {
		t.Fatalf("Planned %d, want %d (the pacer's hits, 30000)", got, want)
	}
	go func() {
		<-observed
		<-hanging
		cancel()
	}()
	res := loop.Run(ctx)

	planned := loop.Planned()
	if len(res) != planned || len(streamed) != planned {
		t.Fatalf("%d results, %d streamed; want one per planned hit, %d", len(res), len(streamed), planned)
	}
	var started, canceled, notSent int
	for i, r := range res {
		if t.Failed() {
			break // one bad hit is enough; there may be 30000
		}
		if r.Seq != i {
			t.Fatalf("result %d has seq %d: want every seq 0..%d once, in order", i, r.Seq, planned-1)
		}
		off, _ := pacer.Due(i)
		if !r.Scheduled || !r.ScheduledAt.Equal(loop.Start.Add(off)) {
			t.Errorf("seq %d: scheduled %v at %s, want %s", i, r.Scheduled, r.ScheduledAt, loop.Start.Add(off))
		}
		switch {
		case r.NotSent:
			notSent++
			if !errors.Is(r.Err, ErrNotSent) || ErrorReason(r.Err) != "not_sent" || !r.Start.IsZero() || r.Status != 0 || r.Latency != 0 {
				t.Errorf("seq %d not sent: %+v", i, r)
			}
			if started+notSent != i+1 {
				t.Errorf("seq %d not sent before seq %d was started", i, started+notSent)
			}
		case r.Err == nil && r.Status == 200:
			started++
		case ErrorReason(r.Err) == "canceled":
			started++
			canceled++
		default:
			t.Errorf("seq %d: status %d, err %v; want 200, canceled or not sent", i, r.Status, r.Err)
		}
	}
	if started < answered+1 || canceled < 1 || notSent < 1 {
		t.Errorf("%d started (%d canceled), %d not sent; want at least %d started, 1 canceled and 1 not sent", started, canceled, notSent, answered+1)
	}
	// OnResult saw the started results first, then the unsent in seq order.
	for i, r := range streamed[started:] {
		if !r.NotSent || r.Seq != started+i {
			t.Fatalf("streamed result %d: seq %d not sent %v; want the unsent hits in seq order after the %d started", started+i, r.Seq, r.NotSent, started)
		}
	}
	if got := testutil.ToFloat64(loop.Metrics.errors.WithLabelValues("c", RoleFast, "not_sent")); got != float64(notSent) {
		t.Errorf("not_sent errors %v, want %d", got, notSent)
	}
	if got := testutil.ToFloat64(loop.Metrics.inFlight.WithLabelValues("c", RoleFast)); got != 0 {
		t.Errorf("in flight %v after the run, want 0", got)
	}
	if got := histogramCount(t, reg, "slowlab_loadgen_schedule_lag_seconds"); got != uint64(started) {
		t.Errorf("schedule lag observed %d times, want once per started request (%d)", got, started)
	}
}

// histogramCount is the sample count of the histogram family name in reg,
// summed over its series.
func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.Metric {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

// endless is a Pacer without Hits whose schedule never ends.
type endless struct{}

func (endless) Due(hit int) (time.Duration, bool) { return time.Duration(hit) * time.Second, true }

// threeHits is a Pacer without Hits.
type threeHits struct{}

func (threeHits) Due(hit int) (time.Duration, bool) {
	return time.Duration(hit) * time.Millisecond, hit >= 0 && hit < 3
}

func TestOpenLoopPlanned(t *testing.T) {
	for _, tc := range []struct {
		p    Pacer
		want int
	}{
		{ConstantPacer{Interval: 125 * time.Millisecond, Duration: 9 * time.Second}, 72},
		{threeHits{}, 3},
		{endless{}, -1},
		{ConstantPacer{Interval: time.Microsecond, Duration: time.Minute}, -1}, // 60 million: too many to account
		{ConstantPacer{Interval: time.Microsecond, Duration: 10 * time.Second}, 10_000_000},
	} {
		if got := (&OpenLoop{Pacer: tc.p}).Planned(); got != tc.want {
			t.Errorf("Planned with %T = %d, want %d", tc.p, got, tc.want)
		}
	}
}

// The series of a run's labels exist, at 0, as soon as its loop starts:
// before any request has finished, every loadgen family is there, with each
// error reason and code 200.
func TestMetricsExistBeforeTheFirstResult(t *testing.T) {
	arrived := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(arrived) })
		<-r.Context().Done()
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	c := NewClient(ClientOptions{})
	defer c.Close()
	loop := OpenLoop{Client: c, URL: srv.URL, Pacer: ConstantPacer{Interval: time.Hour, Duration: time.Hour}, Start: time.Now(),
		RunID: "z", Metrics: NewMetrics(reg)}
	done := make(chan []Result)
	go func() { done <- loop.Run(ctx) }()
	<-arrived // the only request is in the handler, which never answers

	var want strings.Builder
	want.WriteString(`
# HELP slowlab_loadgen_in_flight Requests started and not finished.
# TYPE slowlab_loadgen_in_flight gauge
slowlab_loadgen_in_flight{role="fast",run_id="z"} 1
# HELP slowlab_loadgen_received_bytes_total Response body bytes received.
# TYPE slowlab_loadgen_received_bytes_total counter
slowlab_loadgen_received_bytes_total{role="fast",run_id="z"} 0
# HELP slowlab_loadgen_requests_total Requests that got a response, by status code.
# TYPE slowlab_loadgen_requests_total counter
slowlab_loadgen_requests_total{code="200",role="fast",run_id="z"} 0
# HELP slowlab_loadgen_request_errors_total Requests that failed without a complete response, by reason (timeout, refused, reset, eof, canceled, incomplete, not_sent, late, header_too_large, other).
# TYPE slowlab_loadgen_request_errors_total counter
`)
	for _, reason := range ErrorReasons {
		fmt.Fprintf(&want, "slowlab_loadgen_request_errors_total{reason=%q,role=\"fast\",run_id=\"z\"} 0\n", reason)
	}
	families := []string{"slowlab_loadgen_in_flight", "slowlab_loadgen_received_bytes_total", "slowlab_loadgen_requests_total", "slowlab_loadgen_request_errors_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want.String()), families...); err != nil {
		t.Error(err)
	}
	histograms := []string{"slowlab_loadgen_request_duration_seconds", "slowlab_loadgen_schedule_lag_seconds",
		"slowlab_loadgen_connect_duration_seconds", "slowlab_loadgen_ttfb_seconds", "slowlab_loadgen_server_timing_seconds"}
	for _, name := range histograms {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 1 {
			t.Errorf("%s: %d series (%v), want 1", name, n, err)
		}
		if got := histogramCount(t, reg, name); got != 0 {
			t.Errorf("%s: %d observations before any request finished, want 0", name, got)
		}
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != len(families)-1+len(ErrorReasons)+len(histograms) {
		t.Errorf("%d series in all (%v), want %d: one per family and error reason", n, err, len(families)-1+len(ErrorReasons)+len(histograms))
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	cancel()
	<-done
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

// TestSlowReaderPacesFromResponse: a reader whose response comes late
// (the server was busy: a sync worker serving other slow readers) still
// reads the body at its rate, from when the response begins; the wait is
// not credit to read the body at once.
func TestSlowReaderPacesFromResponse(t *testing.T) {
	t.Parallel() // it waits for its pacing, and its bounds are lower ones, which load only lengthens
	const size, rate, late = 256 << 10, 512 << 10, 600 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(late) // the busy server: it answers late
		w.Header().Set("Content-Length", fmt.Sprint(size))
		w.Write(make([]byte, size))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/large")
	got := SlowReader{URL: u, RcvBuf: 8 << 10, ReadSize: 16 << 10, Rate: rate}.Run(context.Background(), 0)
	if !got.Complete {
		t.Fatalf("download: %+v", got)
	}
	// The server's wait plus the body at the rate (500 ms): pacing and
	// the wait only ever make it longer.
	if min := late + time.Duration(size)*time.Second/rate; got.Receive < min {
		t.Errorf("receive %s: the body was read faster than %d B/s after a %s wait; want at least %s", got.Receive, rate, late, min)
	}
}

func TestSlowReaderFailures(t *testing.T) {
	u, _ := url.Parse("http://" + slowlabtest.RefusedAddr(t) + "/large")
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
		{SlowReader{RcvBuf: -1, ReadSize: 1, Rate: 1 << 20}, "rcvbuf -1: allowed 0 (the kernel's) to 64m"},
		{SlowReader{RcvBuf: 65 << 20, ReadSize: 1, Rate: 1 << 20}, "rcvbuf 65m: allowed 0 (the kernel's) to 64m"},
		{SlowReader{ReadSize: 0, Rate: 1 << 20}, "read_size 0: allowed 1 byte to 16m"},
		{SlowReader{ReadSize: 17 << 20, Rate: 1 << 20}, "read_size 17m: allowed 1 byte to 16m"},
		{SlowReader{ReadSize: 1, Rate: 0}, "read_rate 0: allowed 1k to 1g bytes/s"},
		{SlowReader{ReadSize: 1, Rate: 1000}, "read_rate 1000: allowed 1k to 1g bytes/s"},
		{SlowReader{ReadSize: 1, Rate: 1.5e9}, "read_rate 1500000000: allowed 1k to 1g bytes/s"},
		{SlowReader{ReadSize: 1, Rate: 1 << 20, Timeout: 2 * time.Hour}, "timeout 2h0m0s: allowed up to 1h"},
		{SlowReader{ReadSize: 1, Rate: 1 << 20, Stall: -time.Second}, "stall -1s: allowed 0 (no stall) or more"},
		{SlowReader{ReadSize: 1, Rate: 1 << 20, Stall: time.Minute, Timeout: time.Second}, "timeout 1s: must outlast the 1m0s stall"},
	} {
		if err := tc.s.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("Validate %+v = %v, want %q", tc.s, err, tc.want)
		}
	}
}

func TestCheckTarget(t *testing.T) {
	slowlabtest.ResolveWith(t, map[string][]string{
		"localhost":     {"127.0.0.1", "::1"},
		"app.test":      {"127.0.0.5"},
		"internal.test": {"10.0.0.1"},
		"mixed.test":    {"127.0.0.1", "192.0.2.7"},
		"mapped.test":   {"::ffff:127.0.0.1"},
		"hijacked":      {"10.9.9.9"},
		"empty.test":    {},
	})
	for _, tc := range []struct {
		url    string
		remote bool
		want   string // "" = ok
	}{
		{"http://127.0.0.1:8000/fast", false, ""},
		{"http://127.9.9.9/", false, ""},
		{"http://[::1]:80/", false, ""},
		{"http://localhost:1/", false, ""},
		{"http://app.test:1/", false, ""},
		{"http://mapped.test/", false, ""},
		{"http://10.0.0.1/", false, `target "http://10.0.0.1/": 10.0.0.1 is not a loopback address (127.0.0.0/8, ::1, localhost); pass --allow-remote to load another host`},
		{"http://[::ffff:10.0.0.1]/", false, "::ffff:10.0.0.1 is not a loopback address"},
		{"http://internal.test/", false, `target "http://internal.test/": internal.test resolves to 10.0.0.1, which is not a loopback address (127.0.0.0/8, ::1, localhost); pass --allow-remote to load another host`},
		{"http://mixed.test/", false, "mixed.test resolves to 192.0.2.7, which is not a loopback address"},
		{"http://empty.test/", false, "empty.test resolves to no address"},
		{"http://example.invalid/", false, `target "http://example.invalid/": example.invalid: cannot resolve it to check that it is a loopback address (127.0.0.0/8, ::1, localhost): lookup example.invalid: no such host; pass --allow-remote to load another host`},
		{"http://10.0.0.1/", true, ""},
		{"http://internal.test/", true, ""},
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
	// The resolver, not the name, decides: a localhost that resolves
	// elsewhere is refused.
	slowlabtest.ResolveWith(t, map[string][]string{"localhost": {"127.0.0.1", "10.1.1.1"}})
	if _, err := CheckTarget("http://localhost:8000/", false); err == nil || !strings.Contains(err.Error(), "localhost resolves to 10.1.1.1, which is not a loopback address") {
		t.Errorf("localhost resolving to 10.1.1.1: %v, want it refused naming 10.1.1.1", err)
	}
	if IsLoopback("localhost") || !IsLoopback("127.0.0.1") || IsLoopback("10.0.0.1") {
		t.Errorf("IsLoopback: localhost %v, 127.0.0.1 %v, 10.0.0.1 %v; want false, true, false", IsLoopback("localhost"), IsLoopback("127.0.0.1"), IsLoopback("10.0.0.1"))
	}
}

// The dial guard checks the address about to be connected, after any
// lookup: no traffic to it is needed to test it.
func TestDialGuard(t *testing.T) {
	guard := dialGuard(false)
	for addr, ok := range map[string]bool{
		"127.0.0.1:80": true, "127.200.0.1:80": true, "[::1]:80": true, "[::ffff:127.0.0.1]:80": true,
		"10.0.0.1:80": false, "[2001:db8::1]:80": false, "0.0.0.0:80": false, "[::ffff:10.0.0.1]:80": false, "garbage": false,
	} {
		err := guard("tcp", addr, nil)
		if ok && err != nil || !ok && !errors.Is(err, ErrNotLoopback) {
			t.Errorf("guard(%s) = %v, want allowed %v", addr, err, ok)
		}
	}
	if dialGuard(true) != nil {
		t.Error("dialGuard(true): want no guard")
	}
}

// Client and SlowReader connect through the guard unless AllowRemote: with
// 127.0.0.1 counting as remote for this test, they refuse to connect to a
// loopback server, and connect with AllowRemote.
func TestClientsRefuseRemoteAddresses(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "x")
	}))
	defer srv.Close()
	orig := isLoopbackAddr
	t.Cleanup(func() { isLoopbackAddr = orig })
	isLoopbackAddr = func(netip.Addr) bool { return false }
	u, _ := url.Parse(srv.URL)

	var r Result
	NewClient(ClientOptions{}).Get(context.Background(), srv.URL, &r)
	if !errors.Is(r.Err, ErrNotLoopback) || r.Status != 0 {
		t.Errorf("client without AllowRemote: status %d, err %v; want ErrNotLoopback", r.Status, r.Err)
	}
	d := SlowReader{URL: u, ReadSize: 1024, Rate: 1e9}.Run(context.Background(), 0)
	if !errors.Is(d.Err, ErrNotLoopback) || d.Status != 0 {
		t.Errorf("slow reader without AllowRemote: status %d, err %v; want ErrNotLoopback", d.Status, d.Err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the server through the guard", n)
	}

	r = Result{}
	NewClient(ClientOptions{AllowRemote: true}).Get(context.Background(), srv.URL, &r)
	if r.Err != nil || r.Status != 200 {
		t.Errorf("client with AllowRemote: status %d, err %v", r.Status, r.Err)
	}
	d = SlowReader{URL: u, ReadSize: 1024, Rate: 1e9, AllowRemote: true}.Run(context.Background(), 0)
	if !d.Complete {
		t.Errorf("slow reader with AllowRemote: %+v", d)
	}
}

// A DialContext option replaces the dialer, guard included: the caller
// decides where to connect.
func TestClientDialContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "x") }))
	defer srv.Close()
	orig := isLoopbackAddr
	t.Cleanup(func() { isLoopbackAddr = orig })
	isLoopbackAddr = func(netip.Addr) bool { return false }
	var dialed []string
	var d net.Dialer
	c := NewClient(ClientOptions{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed = append(dialed, network+" "+addr)
		return d.DialContext(ctx, network, strings.TrimPrefix(srv.URL, "http://"))
	}})
	// Nothing listens on 127.0.0.2:1: only the caller's dialer reaches srv.
	var r Result
	c.Get(context.Background(), "http://127.0.0.2:1/x", &r)
	if r.Err != nil || r.Status != 200 || len(dialed) != 1 || dialed[0] != "tcp 127.0.0.2:1" {
		t.Errorf("status %d, err %v, dialed %q; want 200 through the caller's dialer, asked for tcp 127.0.0.2:1", r.Status, r.Err, dialed)
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
		{io.ErrUnexpectedEOF, "eof"},
		{ErrNotSent, "not_sent"},
		{fmt.Errorf("wrapped: %w", ErrNotSent), "not_sent"},
		{&url.Error{Op: "Get", URL: "http://127.0.0.1/", Err: ErrHeaderTooLarge}, "header_too_large"},
		{fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w",
			errors.New("net/http: server response headers exceeded 1048576 bytes; aborted")), "header_too_large"},
		{errors.New("weird"), "other"},
	} {
		if got := ErrorReason(tc.err); got != tc.want {
			t.Errorf("ErrorReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
		if tc.err != nil && !slices.Contains(ErrorReasons, tc.want) {
			t.Errorf("ErrorReason(%v) = %q is not one of ErrorReasons %v", tc.err, tc.want, ErrorReasons)
		}
	}
	if !strings.HasPrefix(ErrNotSent.Error(), "not_sent") {
		t.Errorf("ErrNotSent %q: want its text to start with not_sent", ErrNotSent)
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

// TestResultNamesItsConnection: every result names the protocol it was
// sent in and the client's end of its connection, the address the server
// saw as the peer, on both HTTP/1.1 paths (net/http and lean), with a new
// connection each and kept alive; a refused request names no connection.
func TestResultNamesItsConnection(t *testing.T) {
	var mu sync.Mutex
	peers := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peers[r.URL.Query().Get("i")] = r.RemoteAddr
		mu.Unlock()
		fmt.Fprint(w, "x")
	}))
	defer srv.Close()
	for _, tt := range []struct {
		name            string
		lean, keepAlive bool
	}{{"net/http", false, false}, {"net/http keep-alive", false, true}, {"lean", true, false}, {"lean keep-alive", true, true}} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewClient(ClientOptions{Lean: tt.lean, KeepAlive: tt.keepAlive})
			defer c.Close()
			conns := map[netip.AddrPort]bool{}
			for i := range 3 {
				var r Result
				r.Start = time.Now()
				key := tt.name + strconv.Itoa(i)
				c.Get(context.Background(), srv.URL+"/?i="+url.QueryEscape(key), &r)
				mu.Lock()
				peer := peers[key]
				mu.Unlock()
				if r.Err != nil || r.Proto != ProtoHTTP1 || r.Stream != 0 || r.Conn.String() != peer {
					t.Errorf("request %d: proto %q, conn %v, stream %d, err %v; want HTTP/1.1 on the server's peer %s", i, r.Proto, r.Conn, r.Stream, r.Err, peer)
				}
				conns[r.Conn] = true
			}
			if want := map[bool]int{false: 3, true: 1}[tt.keepAlive]; len(conns) != want {
				t.Errorf("%d distinct connections over 3 requests, want %d", len(conns), want)
			}
			var r Result
			r.Start = time.Now()
			c.Get(context.Background(), "http://"+slowlabtest.RefusedAddr(t)+"/", &r)
			if r.Err == nil || r.Conn.IsValid() || r.Proto != ProtoHTTP1 {
				t.Errorf("refused request: conn %v, proto %q, err %v: want an error, HTTP/1.1 and no connection", r.Conn, r.Proto, r.Err)
			}
		})
	}
}

// TestOpenLoopRawSleep: with the pacer's nanosleeps raw (RawSleep), at a
// gap (1 ms) short enough that every wait is one, the loop still sends
// every hit once, none before it was due.
func TestOpenLoopRawSleep(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	c := NewClient(ClientOptions{KeepAlive: true})
	defer c.Close()
	const n = 200
	loop := OpenLoop{Client: c, URL: srv.URL, Pacer: ConstantPacer{Interval: time.Millisecond, Duration: n * time.Millisecond},
		Start: time.Now().Add(10 * time.Millisecond), RunID: "raw", Metrics: NewMetrics(prometheus.NewRegistry()), RawSleep: true}
	res := loop.Run(context.Background())
	if len(res) != n {
		t.Fatalf("%d results, want %d", len(res), n)
	}
	for i, r := range res {
		if r.Seq != i || r.Err != nil || r.Status != 200 {
			t.Errorf("result %d: seq %d, status %d, err %v", i, r.Seq, r.Status, r.Err)
		}
		if r.Start.Before(r.ScheduledAt) || r.ScheduleLag < 0 {
			t.Errorf("result %d started %s before it was due", i, r.ScheduledAt.Sub(r.Start))
		}
	}
}
