package target

import (
	"context"
	"net/http"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Every worker model continues the caller's trace in a server span named
// after the route, with the worker that served it.
func TestServerSpans(t *testing.T) {
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, model := range Models {
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
			spans := rec.Ended()
			for deadline := time.Now().Add(2 * time.Second); len(spans) == 0 && time.Now().Before(deadline); spans = rec.Ended() {
				time.Sleep(5 * time.Millisecond)
			}
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
// span: on 1 worker x 1 thread, /fast sent while a 300 ms long-poll holds
// the thread cannot start before the long-poll's app returns.
func TestServerSpanThreadWait(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	s, app, _ := startServer(t, Options{Model: ModelGthread, Workers: 1, Threads: 1, LargeSize: 10, BlockSize: 4, TracerProvider: tp})
	holdLongPolls(t, s, app, 1, 300*time.Millisecond)
	if err := getFast(app, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for deadline := time.Now().Add(5 * time.Second); len(byName) < 2 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, sp := range rec.Ended() {
			byName[sp.Name()] = sp
		}
	}
	lp, fast := byName["GET /longpoll"], byName["GET /fast"]
	if lp == nil || fast == nil {
		t.Fatalf("spans %v: want GET /longpoll and GET /fast", byName)
	}
	wait := func(sp sdktrace.ReadOnlySpan) (float64, bool) {
		for _, kv := range sp.Attributes() {
			if kv.Key == AttrThreadWaitMS {
				return kv.Value.AsFloat64(), true
			}
		}
		return 0, false
	}
	if _, ok := wait(lp); !ok {
		t.Errorf("GET /longpoll span lacks %s", AttrThreadWaitMS)
	}
	got, ok := wait(fast)
	least := float64(lp.StartTime().Add(300*time.Millisecond).Sub(fast.StartTime()).Microseconds())/1e3 - 1
	if !ok || got < least || least <= 0 {
		t.Errorf("GET /fast %s = %v (present %v); want at least %.1f ms, the long-poll's remaining time", AttrThreadWaitMS, got, ok, least)
	}
}
