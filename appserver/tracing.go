package appserver

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Server span attributes slowlab adds to the HTTP server semantic conventions.
const (
	AttrServer = attribute.Key("slowlab.server") // Options.Name: sync-2, gthread-1x4, async
	AttrWorker = attribute.Key("slowlab.worker") // the worker that served the request
	// AttrThreadWaitMS is how long a gthread request waited, after its
	// worker accepted it, for one of the worker's threads (0 when one was
	// free). A request accepted by a worker whose threads all hold
	// long-polls shows the whole wait here.
	AttrThreadWaitMS = attribute.Key("slowlab.thread_wait_ms")
)

// traced wraps one worker's app in a server span (otelhttp: HTTP semantic
// conventions, span name "GET /fast" from the route) continuing the
// client's W3C traceparent. For sync and async workers the span covers the
// request's time on its worker (a sync request waits for a worker in the
// kernel backlog, which no server span sees); for gthread it starts when
// the worker reads the request, so it also covers the wait for a thread,
// recorded as AttrThreadWaitMS. Without a TracerProvider it returns app
// unchanged.
func (s *Server) traced(app http.Handler, worker int) http.Handler {
	tp := s.opts.TracerProvider
	if tp == nil {
		return app
	}
	attrs := []attribute.KeyValue{AttrServer.String(s.opts.Name()), AttrWorker.Int(worker)}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		span := trace.SpanFromContext(r.Context())
		span.SetAttributes(attrs...)
		app.ServeHTTP(w, r)
		// The app's mux set the pattern ("GET /fast"); otelhttp names the
		// span from it but does not record the route.
		if route := r.Pattern; route != "" {
			if i := strings.IndexByte(route, ' '); i >= 0 {
				route = route[i+1:]
			}
			span.SetAttributes(semconv.HTTPRoute(route))
		}
	})
	return otelhttp.NewHandler(inner, "",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		// The target's metrics are its own Prometheus ones; keep otelhttp's
		// off the global MeterProvider.
		otelhttp.WithMeterProvider(noop.NewMeterProvider()),
	)
}
