package appserver

import (
	"context"
	"net/http"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// Every worker model continues the caller's trace in a server span named
// after the route, with the worker that served it.
func TestServerSpans(t *testing.T) {
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, spec := range ModelSpecs {
		model := spec.Model
		t.Run(string(model), func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			defer tp.Shutdown(context.Background())
			o := DefaultOptions()
			o.Model, o.TracerProvider = model, tp
			if model == ModelGthread {
				o.Threads = 2
			}
			if model == ModelAsync {
				o.Workers = 1
			}
			_, app, _ := startServer(t, o)
			req, _ := http.NewRequest(http.MethodGet, app+"/bytes?n=10", nil)
			req.Header.Set("Traceparent", traceparent)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			// The handler may end its span after the client has the body.
			var spans []sdktrace.ReadOnlySpan
			slowlabtest.WaitFor(t, "the server span to end", func() bool { spans = rec.Ended(); return len(spans) > 0 })
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			s := spans[0]
			got := map[string]any{}
			for _, kv := range s.Attributes() {
				got[string(kv.Key)] = kv.Value.AsInterface()
			}
			if s.Name() != "GET /bytes" || s.SpanKind() != trace.SpanKindServer ||
				s.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent().SpanID().String() != "00f067aa0ba902b7" {
				t.Errorf("span %q kind %v trace %s parent %s: want GET /bytes continuing %s", s.Name(), s.SpanKind(), s.SpanContext().TraceID(), s.Parent().SpanID(), traceparent)
			}
			if got["http.route"] != "/bytes" || got["http.response.status_code"] != int64(200) || got[string(AttrServer)] != o.Name() || got[string(AttrWorker)] == nil {
				t.Errorf("attributes %v", got)
			}
		})
	}
}

// A gthread request that waits for a thread carries the wait in its server
// span: on 1 worker x 1 thread, /fast sent while a long-poll holds the
// thread waits at least from when it is seen queued until the long-poll's
// client leaves and frees the thread.
func TestServerSpanThreadWait(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	s, app, _ := startServer(t, Options{Model: ModelGthread, Workers: 1, Threads: 1, LargeSize: 10, BlockSize: 4, TracerProvider: tp})

	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, app+"/longpoll?wait=10m", nil)
	left := make(chan struct{})
	go func() {
		defer close(left)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	slowlabtest.WaitFor(t, "the long-poll to hold the thread", func() bool { return gauges(s, "slowlab_target_longpolls_in_progress")["0"] == 1 })
	fast := make(chan error, 1)
	go func() { fast <- getFast(app, slowlabtest.HangGuard) }()
	slowlabtest.WaitFor(t, "/fast to queue for the thread", func() bool { return gauges(s, "slowlab_target_queued_requests")[""] == 1 })
	queuedBy := time.Now()
	// Hold the thread a little longer, so the wait has a lower bound
	// worth checking; any length would do.
	time.Sleep(50 * time.Millisecond)
	freedAfter := time.Now()
	leave()
	<-left
	if err := <-fast; err != nil {
		t.Fatal(err)
	}

	byName := map[string]sdktrace.ReadOnlySpan{}
	slowlabtest.WaitFor(t, "both server spans to end", func() bool {
		for _, sp := range rec.Ended() {
			byName[sp.Name()] = sp
		}
		return byName["GET /longpoll"] != nil && byName["GET /fast"] != nil
	})
	wait := func(sp sdktrace.ReadOnlySpan) (float64, bool) {
		for _, kv := range sp.Attributes() {
			if kv.Key == AttrThreadWaitMS {
				return kv.Value.AsFloat64(), true
			}
		}
		return 0, false
	}
	if _, ok := wait(byName["GET /longpoll"]); !ok {
		t.Errorf("GET /longpoll span lacks %s", AttrThreadWaitMS)
	}
	got, ok := wait(byName["GET /fast"])
	if least := float64(freedAfter.Sub(queuedBy).Microseconds()) / 1e3; !ok || got < least {
		t.Errorf("GET /fast %s = %v (present %v); want at least %.1f ms, from when it was seen queued until the thread was freed", AttrThreadWaitMS, got, ok, least)
	}
}
