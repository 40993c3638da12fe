package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// otlpReceiver is an OTLP/gRPC trace receiver on loopback that keeps every
// span it is sent, with its resource's service.name.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	addr  string
	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct {
	service string
	*tracepb.Span
}

func startReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{addr: ln.Addr().String()}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, r)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return r
}

func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, receivedSpan{service, s})
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (r *otlpReceiver) received() []receivedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedSpan(nil), r.spans...)
}

func (r *otlpReceiver) env() []string {
	return []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + r.addr, "OTEL_EXPORTER_OTLP_INSECURE=true"}
}

// child is `slowlab ARGS` run as a child process (this test binary acting
// as slowlab, see TestMain).
type testProc struct {
	cmd            *exec.Cmd
	stdout, stderr *lineWriter
	done           chan struct{}
	err            error
}

func startChild(t *testing.T, env []string, args ...string) *testProc {
	t.Helper()
	c := &testProc{cmd: exec.Command(os.Args[0], args...), done: make(chan struct{}),
		stdout: &lineWriter{first: make(chan string, 1)}, stderr: &lineWriter{first: make(chan string, 1)}}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// wait waits for the child to exit and fails the test unless it exits 0.
func (c *testProc) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(timeout):
		t.Fatalf("%v still running after %s; stderr:\n%s", c.cmd.Args[1:], timeout, c.stderr.String())
	}
	if c.err != nil {
		t.Fatalf("%v: %v; stderr:\n%s", c.cmd.Args[1:], c.err, c.stderr.String())
	}
}

// stop sends SIGTERM, so the child flushes its spans, and waits for it.
func (c *testProc) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	c.wait(t, 60*time.Second)
}

// startTarget starts `slowlab target` and returns it and its app address
// from its ready line.
func startTarget(t *testing.T, env []string, args ...string) (*testProc, string) {
	t.Helper()
	c := startChild(t, env, append([]string{"target", "--model", "sync", "--workers", "2", "--large-size", "64k"}, args...)...)
	select {
	case line := <-c.stdout.first:
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "listen="); ok && strings.HasPrefix(line, "ready ") {
				return c, v
			}
		}
		t.Fatalf("ready line %q", line)
	case <-c.done:
		t.Fatalf("target exited: %v; stderr:\n%s", c.err, c.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("target not ready after 60 s")
	}
	return nil, ""
}

// openMetrics scrapes url asking for OpenMetrics, which carries exemplars.
func openMetrics(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("%s: content type %q, want OpenMetrics", url, ct)
	}
	return string(b)
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			if v := kv.GetValue(); v.GetStringValue() != "" {
				return v.GetStringValue()
			} else {
				return fmt.Sprint(v.GetIntValue())
			}
		}
	}
	return ""
}

// slowlab loadgen against slowlab target, both exporting OTLP/gRPC to a
// receiver in this test: every server span is inside a client span of the
// same trace, and /metrics carries the clients' trace IDs as exemplars.
func TestTracesEndToEndOTLP(t *testing.T) {
	slowlabtest.Timing(t)
	rcv := startReceiver(t)
	tgt, listen := startTarget(t, rcv.env())
	metricsAddr := freeAddr(t)
	lg := startChild(t, append(rcv.env(), "OTEL_BSP_SCHEDULE_DELAY=100"), "loadgen", "--target", "http://"+listen+"/fast", "--rate", "50", "--duration", "400ms",
		"--slow", "1", "--read-rate", "256k", "--run-id", "e2e", "--metrics-addr", metricsAddr, "--linger", "2m")
	// The summary is printed when the load is done; /metrics lingers.
	select {
	case <-lg.stdout.first:
	case <-lg.done:
		t.Fatalf("loadgen exited early: %v; stderr:\n%s", lg.err, lg.stderr.String())
	case <-time.After(90 * time.Second):
		t.Fatalf("loadgen not done after 90 s; stderr:\n%s", lg.stderr.String())
	}
	scraped := openMetrics(t, "http://"+metricsAddr+"/metrics")
	lg.cmd.Process.Signal(os.Interrupt) // end the linger
	lg.wait(t, 60*time.Second)
	tgt.stop(t)

	clients := map[string]*tracepb.Span{} // by span ID
	var servers []receivedSpan
	for _, s := range rcv.received() {
		switch {
		case s.service == "slowlab-loadgen" && s.GetKind() == tracepb.Span_SPAN_KIND_CLIENT:
			clients[hex.EncodeToString(s.GetSpanId())] = s.Span
		case s.service == "slowlab-target" && s.GetKind() == tracepb.Span_SPAN_KIND_SERVER:
			servers = append(servers, s)
		}
	}
	if len(clients) != 21 || len(servers) != 21 {
		t.Fatalf("%d client spans and %d server spans, want 21 each (20 fast requests and a slow reader)", len(clients), len(servers))
	}
	roles := map[string]int{}
	for _, s := range servers {
		c := clients[hex.EncodeToString(s.GetParentSpanId())]
		if c == nil || string(c.GetTraceId()) != string(s.GetTraceId()) {
			t.Errorf("server span %s (trace %x) has no client parent in its trace", s.GetName(), s.GetTraceId())
			continue
		}
		role := attr(c, "slowlab.role")
		roles[role]++
		if want := map[string]string{"fast": "GET /fast", "slow": "GET /large"}[role]; s.GetName() != want || c.GetName() != "GET" || attr(c, "slowlab.run_id") != "e2e" {
			t.Errorf("server span %q under client %q (role %q, run %q)", s.GetName(), c.GetName(), role, attr(c, "slowlab.run_id"))
		}
		if s.GetStartTimeUnixNano() < c.GetStartTimeUnixNano() {
			t.Errorf("server span %s starts before its client span", s.GetName())
		}
	}
	if roles["fast"] != 20 || roles["slow"] != 1 {
		t.Errorf("server spans by client role %v, want 20 fast and 1 slow", roles)
	}
	exemplars := 0
	for _, c := range clients {
		if strings.Contains(scraped, `# {trace_id="`+hex.EncodeToString(c.GetTraceId())+`"}`) {
			exemplars++
		}
	}
	if exemplars == 0 {
		t.Errorf("no client trace ID among the exemplars of /metrics:\n%s", scraped)
	}
}

// consoleSpan is the part of a stdouttrace span this test reads.
type consoleSpan struct {
	Name        string
	SpanKind    int
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
}

// consoleSpans parses the JSON spans among out's lines.
func consoleSpans(out string) []consoleSpan {
	var spans []consoleSpan
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s consoleSpan
		if json.Unmarshal(sc.Bytes(), &s) == nil && s.SpanContext.TraceID != "" {
			spans = append(spans, s)
		}
	}
	return spans
}

// With the console exporter, each process prints its spans on stderr (the
// target's stdout stays its ready line alone) and the trace IDs match.
func TestTracesConsole(t *testing.T) {
	env := []string{"OTEL_TRACES_EXPORTER=console"}
	tgt, listen := startTarget(t, env)
	lg := startChild(t, env, "loadgen", "--target", "http://"+listen+"/fast", "--rate", "20", "--duration", "200ms")
	lg.wait(t, 90*time.Second)
	tgt.stop(t)

	if out := tgt.stdout.String(); strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "ready ") {
		t.Errorf("target stdout %q, want its ready line alone", out)
	}
	if out := lg.stdout.String(); strings.Contains(out, "TraceID") {
		t.Errorf("loadgen stdout has spans:\n%s", out)
	}
	clients := map[string]consoleSpan{}
	for _, s := range consoleSpans(lg.stderr.String()) {
		if s.Name == "GET" {
			clients[s.SpanContext.SpanID] = s
		}
	}
	servers := consoleSpans(tgt.stderr.String())
	if len(clients) != 4 || len(servers) != 4 {
		t.Fatalf("%d client and %d server spans, want 4 each; loadgen stderr:\n%s\ntarget stderr:\n%s", len(clients), len(servers), lg.stderr.String(), tgt.stderr.String())
	}
	for _, s := range servers {
		c, ok := clients[s.Parent.SpanID]
		if !ok || s.Name != "GET /fast" || c.SpanContext.TraceID != s.SpanContext.TraceID || s.Parent.TraceID != c.SpanContext.TraceID {
			t.Errorf("server span %+v: want GET /fast under a loadgen span of the same trace", s)
		}
	}
}

func TestTracingBadInput(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		code int
		want string
	}{
		{"", []string{"loadgen", "--target", "http://127.0.0.1:1/", "--trace-sample-ratio", "2"}, 2, "slowlab loadgen: --trace-sample-ratio 2: allowed 0 to 1"},
		{"", []string{"target", "--trace-sample-ratio", "-0.5"}, 2, "slowlab target: --trace-sample-ratio -0.5: allowed 0 to 1"},
		{"jaeger", []string{"loadgen", "--target", "http://127.0.0.1:1/"}, 2, `slowlab loadgen: OTEL_TRACES_EXPORTER="jaeger": allowed otlp, console, none (or unset: otlp if an OTLP endpoint is given, else no tracing)`},
		{"zipkin", []string{"target"}, 2, `slowlab target: OTEL_TRACES_EXPORTER="zipkin": allowed otlp, console, none (or unset: otlp if an OTLP endpoint is given, else no tracing)`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Setenv(tracesExporterEnv, tc.env)
			code, _, stderr := runCmd(t, tc.args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if code != tc.code || len(lines) != 1 || lines[0] != tc.want {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}
	t.Run("bad OTLP protocol", func(t *testing.T) {
		t.Setenv(tracesExporterEnv, "otlp")
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
		code, _, stderr := runCmd(t, "loadgen", "--target", "http://127.0.0.1:1/", "--duration", "10ms")
		if code != 1 || !strings.HasPrefix(stderr, "slowlab loadgen: OTEL_TRACES_EXPORTER=otlp: ") || !strings.Contains(stderr, "protocol") {
			t.Errorf("exit %d, stderr %q: want exit 1 naming the OTLP protocol", code, stderr)
		}
	})
	t.Run("ratio without exporter", func(t *testing.T) {
		t.Setenv(tracesExporterEnv, "")
		code, _, stderr := runCmd(t, "loadgen", "--target", "http://127.0.0.1:1/", "--duration", "10ms", "--trace-sample-ratio", "0.5")
		// Exit 3: the run completed against a refused port, so nothing succeeded.
		if code != 3 || !strings.Contains(stderr, "--trace-sample-ratio has no effect") {
			t.Errorf("exit %d, stderr %q: want exit 3 and a note that tracing is off", code, stderr)
		}
	})
}

// TestOTLPSink is not a test: scripts/bench-tracing.sh runs the test binary
// with SLOWLAB_OTLP_SINK=ADDR to receive (and count) the load generator's
// spans until SIGTERM.
func TestOTLPSink(t *testing.T) {
	addr := os.Getenv("SLOWLAB_OTLP_SINK")
	if addr == "" {
		t.Skip("SLOWLAB_OTLP_SINK not set: run by scripts/bench-tracing.sh only")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, countingReceiver{add: func(k int) { mu.Lock(); n += k; mu.Unlock() }})
	go srv.Serve(ln)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fmt.Printf("sink ready %s\n", ln.Addr())
	<-ctx.Done()
	srv.Stop()
	mu.Lock()
	fmt.Printf("sink received %d spans\n", n)
	mu.Unlock()
}

type countingReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	add func(int)
}

func (r countingReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	r.add(n)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestTracesExporterDefault: the specification's default exporter is
// otlp, so an OTLP endpoint alone (as the OpenTelemetry Operator injects)
// turns tracing on; none turns it off; with neither, tracing stays off.
func TestTracesExporterDefault(t *testing.T) {
	for _, tc := range []struct {
		exporter, endpoint, tracesEndpoint, want string
	}{
		{"", "", "", ""},
		{"", "http://127.0.0.1:4318", "", "otlp"},
		{"", "", "http://127.0.0.1:4318/v1/traces", "otlp"},
		{"none", "http://127.0.0.1:4318", "", ""},
		{"console", "", "", "console"},
		{"otlp", "", "", "otlp"},
	} {
		t.Setenv(tracesExporterEnv, tc.exporter)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", tc.endpoint)
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", tc.tracesEndpoint)
		if got := tracesExporter(); got != tc.want {
			t.Errorf("%s=%q endpoint %q traces endpoint %q: %q, want %q", tracesExporterEnv, tc.exporter, tc.endpoint, tc.tracesEndpoint, got, tc.want)
		}
	}
}
