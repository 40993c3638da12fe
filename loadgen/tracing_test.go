package loadgen

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/appserver/appservertest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// spanLog records every span, like tracetest.SpanRecorder, and lets a test
// wait for the next span to end.
type spanLog struct {
	*tracetest.SpanRecorder
	mu    sync.Mutex
	ended chan struct{} // closed (and replaced) when a span ends
}

func (l *spanLog) OnEnd(s sdktrace.ReadOnlySpan) {
	l.SpanRecorder.OnEnd(s)
	l.mu.Lock()
	close(l.ended)
	l.ended = make(chan struct{})
	l.mu.Unlock()
}

// next returns a channel closed when the next span ends.
func (l *spanLog) next() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended
}

// traced is a tracer provider recording every span, shared by the client
// and the embedded target so one recorder sees both sides.
func traced(t *testing.T) (*spanLog, *sdktrace.TracerProvider) {
	t.Helper()
	rec := &spanLog{SpanRecorder: tracetest.NewSpanRecorder(), ended: make(chan struct{})}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return rec, tp
}

// serveTarget runs the embedded target with o on loopback and returns its
// base URL.
func serveTarget(t *testing.T, o appserver.Options) string {
	t.Helper()
	base, _ := serveApp(t, o)
	return base
}

// serveApp is serveTarget that also returns the server (its metrics).
func serveApp(t *testing.T, o appserver.Options) (string, *appserver.Server) {
	t.Helper()
	return appservertest.Serve(t, o)
}

func targetOptions(tp trace.TracerProvider, model appserver.Model) appserver.Options {
	o := appserver.DefaultOptions()
	o.Model, o.TracerProvider, o.LargeSize = model, tp, 64<<10
	return o
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func eventNames(s sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, e := range s.Events() {
		names = append(names, e.Name)
	}
	return names
}

// split returns the ended client and server spans.
func split(rec *spanLog) (clients, servers []sdktrace.ReadOnlySpan) {
	for _, s := range rec.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindClient:
			clients = append(clients, s)
		case trace.SpanKindServer:
			servers = append(servers, s)
		}
	}
	return clients, servers
}

// serverSpanOf waits for the server span whose parent is client: the
// server may end its span after the client has its response. It waits for
// spans to end, not for a time.
func serverSpanOf(t *testing.T, rec *spanLog, client sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	t.Helper()
	for {
		ended := rec.next()
		_, servers := split(rec)
		for _, s := range servers {
			if s.Parent().SpanID() == client.SpanContext().SpanID() {
				if s.SpanContext().TraceID() != client.SpanContext().TraceID() || !s.Parent().IsRemote() {
					t.Errorf("server span %s: trace %s (remote parent %v), want the client's trace %s", s.Name(), s.SpanContext().TraceID(), s.Parent().IsRemote(), client.SpanContext().TraceID())
				}
				return s
			}
		}
		<-ended
	}
}

// checkAttrs compares the attributes in want; a nil value means absent.
func checkAttrs(t *testing.T, what string, s sdktrace.ReadOnlySpan, want map[attribute.Key]any) {
	t.Helper()
	got := attrs(s)
	for k, w := range want {
		v, ok := got[k]
		switch {
		case w == nil && ok:
			t.Errorf("%s: %s = %v, want absent", what, k, v.Emit())
		case w == nil:
		case !ok:
			t.Errorf("%s: no %s (want %v); attributes %v", what, k, w, s.Attributes())
		case v.AsInterface() != w:
			t.Errorf("%s: %s = %#v, want %#v", what, k, v.AsInterface(), w)
		}
	}
}

// phaseEvents reduces otelhttptrace's events to phases: the connect events
// carry the address in their name.
func phaseEvents(s sdktrace.ReadOnlySpan, addr string) string {
	var out []string
	for _, n := range eventNames(s) {
		out = append(out, strings.Replace(n, "http.connect."+addr+".", "http.connect.", 1))
	}
	return strings.Join(out, " ")
}

const (
	newConnPhases = "http.getconn.start http.connect.start http.connect.done http.getconn.done http.send.start http.send.done http.receive.start http.receive.done"
	reusedPhases  = "http.getconn.start http.getconn.done http.send.start http.send.done http.receive.start http.receive.done"
)

func TestTracingFastRequests(t *testing.T) {
	for _, keepAlive := range []bool{false, true} {
		t.Run("keepalive="+strconv.FormatBool(keepAlive), func(t *testing.T) {
			rec, tp := traced(t)
			model := appserver.ModelSync
			if keepAlive {
				model = appserver.ModelAsync // sync workers close every connection
			}
			base := serveTarget(t, targetOptions(tp, model))
			u, _ := url.Parse(base)
			port, _ := strconv.Atoi(u.Port())
			c := NewClient(ClientOptions{KeepAlive: keepAlive, TracerProvider: tp})
			defer c.Close()
			loop := OpenLoop{Client: c, URL: base + "/fast", Pacer: ConstantPacer{Interval: 20 * time.Millisecond, Duration: 60 * time.Millisecond},
				Start: time.Now(), RunID: "r1", Metrics: NewMetrics(prometheus.NewRegistry())}
			res := loop.Run(context.Background())
			if len(res) != 3 {
				t.Fatalf("%d results, want 3", len(res))
			}
			clients, _ := split(rec)
			if len(clients) != 3 {
				t.Fatalf("%d client spans, want 3", len(clients))
			}
			byTrace := map[trace.TraceID]sdktrace.ReadOnlySpan{}
			for _, s := range clients {
				byTrace[s.SpanContext().TraceID()] = s
			}
			for _, r := range res {
				s := byTrace[r.TraceID]
				if s == nil {
					t.Fatalf("result %d: trace %s has no client span", r.Seq, r.TraceID)
				}
				what := "request " + strconv.Itoa(r.Seq)
				if s.Name() != "GET" || s.InstrumentationScope().Name != TracerName || s.Parent().IsValid() {
					t.Errorf("%s: span %q scope %q parent %v, want a root GET span from %s", what, s.Name(), s.InstrumentationScope().Name, s.Parent(), TracerName)
				}
				want := map[attribute.Key]any{
					"http.request.method": "GET", "url.full": base + "/fast", "server.address": "127.0.0.1", "server.port": int64(port),
					"http.response.status_code": int64(200), "http.response.body.size": int64(12), "error.type": nil,
					AttrRunID: "r1", AttrRole: RoleFast, AttrScheduledTime: r.ScheduledAt.UTC().Format(time.RFC3339Nano),
					AttrScheduleLagMS: millis(r.ScheduleLag),
				}
				if r.ServerTiming > 0 { // /fast may take under the header's 1 us resolution
					want[AttrServerTimingMS] = millis(r.ServerTiming)
				}
				checkAttrs(t, what, s, want)
				if s.Status().Code != codes.Unset {
					t.Errorf("%s: status %v", what, s.Status())
				}
				if !s.StartTime().Equal(r.Start) || !s.EndTime().Equal(r.Start.Add(r.Latency)) {
					t.Errorf("%s: span %s..%s, want the result's %s..%s", what, s.StartTime(), s.EndTime(), r.Start, r.Start.Add(r.Latency))
				}
				// Whether a kept-alive connection was free when a request
				// started depends on this machine's speed; the phases must
				// match what happened.
				phases := newConnPhases
				if !r.NewConn {
					phases = reusedPhases
				}
				if !keepAlive && !r.NewConn {
					t.Errorf("%s: reused a connection without keep-alive", what)
				}
				if got := phaseEvents(s, u.Host); got != phases {
					t.Errorf("%s: events\n%s\nwant\n%s", what, got, phases)
				}
				srv := serverSpanOf(t, rec, s)
				if srv.Name() != "GET /fast" || srv.StartTime().Before(s.StartTime()) {
					t.Errorf("%s: server span %q starts %s, want GET /fast inside the client span from %s", what, srv.Name(), srv.StartTime(), s.StartTime())
				}
				checkAttrs(t, what+" server span", srv, map[attribute.Key]any{
					"http.response.status_code": int64(200), "http.route": "/fast", appserver.AttrServer: targetOptions(nil, model).Name(),
				})
				if _, ok := attrs(srv)[appserver.AttrWorker]; !ok {
					t.Errorf("%s: server span without %s", what, appserver.AttrWorker)
				}
			}
			if !keepAlive {
				return
			}
			// After the loop every connection is idle: one more request
			// reuses one, and its span has no connect phase.
			var r Result
			c.Get(context.Background(), base+"/fast", &r)
			clients, _ = split(rec)
			if r.NewConn || len(clients) != 4 {
				t.Fatalf("request after the loop: new connection %v, %d client spans; want a reused connection and 4 spans", r.NewConn, len(clients))
			}
			for _, s := range clients {
				if s.SpanContext().TraceID() == r.TraceID {
					if got := phaseEvents(s, u.Host); got != reusedPhases {
						t.Errorf("reused connection: events\n%s\nwant\n%s", got, reusedPhases)
					}
				}
			}
		})
	}
}

// A slow reader's span covers its whole paced download, and the server span
// of the write it holds up is inside it.
func TestTracingSlowReader(t *testing.T) {
	rec, tp := traced(t)
	base := serveTarget(t, targetOptions(tp, appserver.ModelSync))
	u, _ := url.Parse(base + "/large")
	sr := SlowReader{URL: u, RcvBuf: 8 << 10, ReadSize: 16 << 10, Rate: 256 << 10, RunID: "s", TracerProvider: tp, Metrics: NewMetrics(prometheus.NewRegistry())}
	d := sr.Run(context.Background(), 2)
	if !d.Complete {
		t.Fatalf("download: %+v", d)
	}
	clients, _ := split(rec)
	if len(clients) != 1 {
		t.Fatalf("%d client spans, want 1", len(clients))
	}
	s := clients[0]
	checkAttrs(t, "slow reader", s, map[attribute.Key]any{
		"http.request.method": "GET", "url.full": base + "/large", "server.address": "127.0.0.1",
		"http.response.status_code": int64(200), "http.response.body.size": int64(64 << 10), "error.type": nil,
		AttrRunID: "s", AttrRole: RoleSlow, AttrSlowClient: int64(2), AttrReadRate: float64(256 << 10), AttrRcvBuf: int64(8 << 10),
		AttrScheduledTime: nil,
	})
	// 64 KiB at 256 KiB/s is paced over at least 250 ms.
	if dur := s.EndTime().Sub(s.StartTime()); dur < 250*time.Millisecond || dur < d.Receive {
		t.Errorf("span lasts %s, want the whole paced download (receive %s)", dur, d.Receive)
	}
	if got := phaseEvents(s, u.Host); got != newConnPhases {
		t.Errorf("events\n%s\nwant\n%s", got, newConnPhases)
	}
	// The server span starts inside the client's (the request caused it).
	// When it ends is not compared: the handler returns once the kernel
	// has the last bytes, which on a loaded machine may be scheduled after
	// the reader's last paced read.
	srv := serverSpanOf(t, rec, s)
	if srv.Name() != "GET /large" || srv.StartTime().Before(s.StartTime()) || srv.StartTime().After(s.EndTime()) {
		t.Errorf("server span %q starts %s, want GET /large starting inside the slow reader's %s..%s", srv.Name(), srv.StartTime(), s.StartTime(), s.EndTime())
	}
}

func TestTracingFailedRequests(t *testing.T) {
	refused := "http://" + slowlabtest.RefusedAddr(t) + "/fast"
	t.Run("timeout", func(t *testing.T) {
		rec, tp := traced(t)
		base := serveTarget(t, targetOptions(tp, appserver.ModelAsync))
		c := NewClient(ClientOptions{TracerProvider: tp})
		// The deadline passes once the request is sent, so the span has
		// its connect and send phases however slowly this machine runs.
		ctx := newExpiring()
		sent := make(chan struct{})
		go func() {
			<-sent
			ctx.expire()
		}()
		var r Result
		c.Get(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { close(sent) }}),
			base+"/longpoll?wait=10m", &r)
		if ErrorReason(r.Err) != "timeout" {
			t.Fatalf("err %v, want a timeout", r.Err)
		}
		clients, _ := split(rec)
		if len(clients) != 1 {
			t.Fatalf("%d client spans, want 1", len(clients))
		}
		s := clients[0]
		checkAttrs(t, "timed out", s, map[attribute.Key]any{"error.type": "timeout", "http.response.status_code": nil, AttrRunID: nil})
		if s.Status().Code != codes.Error || !strings.Contains(s.Status().Description, "deadline exceeded") {
			t.Errorf("status %v, want an error naming the deadline", s.Status())
		}
		if got := phaseEvents(s, strings.TrimPrefix(base, "http://")); got != "http.getconn.start http.connect.start http.connect.done http.getconn.done http.send.start http.send.done" {
			t.Errorf("events %s: want connect and send, no response", got)
		}
		if r.TraceID != s.SpanContext().TraceID() {
			t.Errorf("result trace %s, span trace %s", r.TraceID, s.SpanContext().TraceID())
		}
		// The server span ends when the handler sees the client go.
		srv := serverSpanOf(t, rec, s)
		if srv.Name() != "GET /longpoll" {
			t.Errorf("server span %q", srv.Name())
		}
	})
	t.Run("refused", func(t *testing.T) {
		rec, tp := traced(t)
		c := NewClient(ClientOptions{TracerProvider: tp})
		loop := OpenLoop{Client: c, URL: refused, Pacer: ConstantPacer{Interval: 10 * time.Millisecond, Duration: 20 * time.Millisecond}, Start: time.Now(), RunID: "r"}
		res := loop.Run(context.Background())
		clients, servers := split(rec)
		if len(clients) != 2 || len(res) != 2 || len(servers) != 0 {
			t.Fatalf("%d results, %d client and %d server spans; want 2, 2, 0", len(res), len(clients), len(servers))
		}
		for _, s := range clients {
			checkAttrs(t, "refused", s, map[attribute.Key]any{"error.type": "refused", "http.response.status_code": nil, AttrRole: RoleFast})
			if s.Status().Code != codes.Error || s.Parent().IsValid() {
				t.Errorf("status %v, parent %v: want a root span with an error", s.Status(), s.Parent())
			}
			addr := strings.TrimSuffix(strings.TrimPrefix(refused, "http://"), "/fast")
			if got := phaseEvents(s, addr); got != "http.getconn.start http.connect.start http.connect.done" {
				t.Errorf("events %s: want a failed connect", got)
			}
			last := s.Events()[len(s.Events())-1]
			if set := attribute.NewSet(last.Attributes...); !strings.Contains(set.Encoded(attribute.DefaultEncoder()), "connection refused") {
				t.Errorf("connect done event %v: want the refusal", last.Attributes)
			}
		}
	})
}

// expiring is a context whose deadline passes when expire is called, so a
// test times a request out at a chosen event rather than after a guessed
// duration.
type expiring struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newExpiring() *expiring {
	return &expiring{Context: context.Background(), done: make(chan struct{})}
}

func (e *expiring) expire()               { e.once.Do(func() { close(e.done) }) }
func (e *expiring) Done() <-chan struct{} { return e.done }
func (e *expiring) Err() error {
	select {
	case <-e.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// Off means off: no header, no trace ID; a 0 ratio sends an unsampled
// traceparent, which the server's parent-based sampler follows.
func TestTracingOffAndUnsampled(t *testing.T) {
	headers := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers <- r.Header.Get("Traceparent")
	}))
	defer srv.Close()
	var r Result
	NewClient(ClientOptions{}).Get(context.Background(), srv.URL, &r)
	if h := <-headers; h != "" || r.TraceID.IsValid() {
		t.Errorf("tracing off: traceparent %q, trace %s", h, r.TraceID)
	}

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0))))
	base := serveTarget(t, targetOptions(tp, appserver.ModelAsync))
	r = Result{}
	NewClient(ClientOptions{TracerProvider: tp}).Get(context.Background(), srv.URL, &r)
	if h := <-headers; !strings.HasPrefix(h, "00-") || !strings.HasSuffix(h, "-00") || r.TraceID.IsValid() {
		t.Errorf("ratio 0: traceparent %q (want unsampled), trace %s (want none)", h, r.TraceID)
	}
	NewClient(ClientOptions{TracerProvider: tp}).Get(context.Background(), base+"/fast", &r)
	if r.Status != 200 || len(rec.Started()) != 0 {
		t.Errorf("ratio 0: status %d, %d spans recorded on either side, want none", r.Status, len(rec.Started()))
	}
}

// Sampled requests' observations carry their trace ID as an exemplar on
// /metrics when the scraper asks for OpenMetrics.
func TestExemplars(t *testing.T) {
	_, tp := traced(t)
	base := serveTarget(t, targetOptions(tp, appserver.ModelAsync))
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	c := NewClient(ClientOptions{TracerProvider: tp})
	loop := OpenLoop{Client: c, URL: base + "/longpoll?wait=2ms", Pacer: ConstantPacer{Interval: 5 * time.Millisecond, Duration: 10 * time.Millisecond},
		Start: time.Now(), RunID: "ex", Metrics: m}
	res := loop.Run(context.Background())
	metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	defer metrics.Close()
	req, _ := http.NewRequest(http.MethodGet, metrics.URL, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("content type %q, want OpenMetrics", ct)
	}
	for _, name := range []string{"slowlab_loadgen_request_duration_seconds_bucket", "slowlab_loadgen_ttfb_seconds_bucket",
		"slowlab_loadgen_server_timing_seconds_bucket", "slowlab_loadgen_schedule_lag_seconds_bucket", "slowlab_loadgen_connect_duration_seconds_bucket"} {
		found := false
		for _, line := range strings.Split(string(body), "\n") {
			if !strings.HasPrefix(line, name+"{") {
				continue
			}
			for _, r := range res {
				if strings.Contains(line, ` # {trace_id="`+r.TraceID.String()+`"} `) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("%s: no bucket with a request's trace_id exemplar in\n%s", name, body)
		}
	}
}

// Get's cost with tracing off, with a never-sampling provider and with every
// request sampled, on a kept-alive loopback connection.
func BenchmarkClientGet(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"ok": true}`)) }))
	defer srv.Close()
	never := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	always := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
	defer always.Shutdown(context.Background())
	for _, bc := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"off", nil}, {"unsampled", never}, {"sampled", always}} {
		b.Run(bc.name, func(b *testing.B) {
			c := NewClient(ClientOptions{KeepAlive: true, TracerProvider: bc.tp})
			defer c.Close()
			lbl := NewMetrics(prometheus.NewRegistry()).with("b", RoleFast)
			b.ReportAllocs()
			for b.Loop() {
				r := Result{}
				lbl.start()
				c.Get(context.Background(), srv.URL, &r)
				lbl.observe(&r)
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		})
	}
}

// discard is a span exporter that drops everything, so the benchmark
// measures span creation and batching, not an exporter.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
