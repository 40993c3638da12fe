package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/httptrace/otelhttptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of the load generator's spans.
const TracerName = "github.com/slowlab/slowlab/loadgen"

// Span attributes slowlab adds to the HTTP client semantic conventions.
const (
	AttrRunID          = attribute.Key("slowlab.run_id")
	AttrRole           = attribute.Key("slowlab.role")
	AttrScheduledTime  = attribute.Key("slowlab.scheduled_time")   // RFC 3339, UTC, open loop only
	AttrScheduleLagMS  = attribute.Key("slowlab.schedule_lag_ms")  // open loop only
	AttrServerTimingMS = attribute.Key("slowlab.server_timing_ms") // the response's Server-Timing app;dur

	// Slow readers only.
	AttrSlowClient = attribute.Key("slowlab.slow_client")                // Download.Client
	AttrReadRate   = attribute.Key("slowlab.read_rate_bytes_per_second") // SlowReader.Rate
	AttrRcvBuf     = attribute.Key("slowlab.rcvbuf_bytes")               // SlowReader.RcvBuf
)

// propagator is W3C trace context, chosen here rather than read from the
// OpenTelemetry globals, so a process that never set them still propagates.
var propagator = propagation.TraceContext{}

// tracer starts the request spans of a Client or a SlowReader. A nil
// *tracer means tracing is off: nothing is started, injected or allocated.
type tracer struct {
	tp trace.TracerProvider
	t  trace.Tracer
}

func newTracer(tp trace.TracerProvider) *tracer {
	if tp == nil {
		return nil
	}
	return &tracer{tp: tp, t: tp.Tracer(TracerName, trace.WithSchemaURL(semconv.SchemaURL))}
}

// targetAttrs are the span attributes shared by every request of a loop:
// computed once per loop rather than once per request.
func targetAttrs(u *url.URL, runID, role string) []attribute.KeyValue {
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		port = 80
		if u.Scheme == "https" {
			port = 443
		}
	}
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodGet,
		semconv.URLFull(u.Redacted()),
		semconv.ServerAddress(u.Hostname()),
		semconv.ServerPort(port),
	}
	if runID != "" {
		attrs = append(attrs, AttrRunID.String(runID))
	}
	if role != "" {
		attrs = append(attrs, AttrRole.String(role))
	}
	return attrs
}

// reqTrace is one request's span and the otelhttptrace hooks that record its
// connection phases as span events. A nil *reqTrace does nothing.
type reqTrace struct {
	ctx  context.Context // carries span
	span trace.Span
	// hooks is otelhttptrace's ClientTrace in event mode (nil when the span
	// is not recording); its events are http.getconn, http.dns,
	// http.connect.ADDR, http.send and http.receive, each .start and .done.
	// The wait for the server is the gap from http.send.done to
	// http.receive.start.
	hooks *httptrace.ClientTrace
	// putIdle is otelhttptrace's PutIdleConn, which ends http.receive. The
	// transport calls it only when it keeps the connection, so bodyDone
	// calls it for the connections it closes.
	putIdle  func(error)
	received atomic.Bool
}

// begin starts r's span at r.Start. fixed are the loop's targetAttrs; when
// nil they are derived from rawURL.
func (t *tracer) begin(ctx context.Context, rawURL string, r *Result, fixed []attribute.KeyValue) *reqTrace {
	if fixed == nil {
		if u, err := url.Parse(rawURL); err == nil {
			fixed = targetAttrs(u, "", "")
		} else {
			fixed = []attribute.KeyValue{semconv.HTTPRequestMethodGet}
		}
	}
	ctx, span := t.t.Start(ctx, http.MethodGet, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(r.Start), trace.WithAttributes(fixed...))
	rt := &reqTrace{ctx: ctx, span: span}
	if !span.IsRecording() {
		return rt
	}
	if r.Scheduled {
		span.SetAttributes(
			AttrScheduledTime.String(r.ScheduledAt.UTC().Format(time.RFC3339Nano)),
			AttrScheduleLagMS.Float64(millis(r.ScheduleLag)),
		)
	}
	rt.hooks = otelhttptrace.NewClientTrace(ctx,
		otelhttptrace.WithTracerProvider(t.tp),
		// Events, not sub-spans: otelhttptrace never ends its http.receive
		// span on a connection the transport closes (one per request is the
		// default here), nor http.getconn when the dial fails.
		otelhttptrace.WithoutSubSpans(),
		otelhttptrace.WithoutHeaders(),
	)
	rt.putIdle = rt.hooks.PutIdleConn
	rt.hooks.PutIdleConn = func(err error) {
		rt.received.Store(true)
		rt.putIdle(err)
	}
	return rt
}

// withHooks returns ctx with the phase hooks, which the transport calls in
// addition to any hooks ctx already has.
func (rt *reqTrace) withHooks(ctx context.Context) context.Context {
	if rt == nil || rt.hooks == nil {
		return ctx
	}
	return httptrace.WithClientTrace(ctx, rt.hooks)
}

// inject writes the traceparent header (sampled or not, so the server
// follows the client's sampling decision).
func (rt *reqTrace) inject(h http.Header) {
	if rt != nil {
		propagator.Inject(rt.ctx, propagation.HeaderCarrier(h))
	}
}

// bodyDone ends http.receive when the transport did not (a connection it
// closes after the response), if the response ever started.
func (rt *reqTrace) bodyDone(err error, gotFirstByte bool) {
	if rt == nil || rt.hooks == nil || !gotFirstByte || rt.received.Load() {
		return
	}
	rt.received.Store(true)
	rt.putIdle(err)
}

// phaseHooks returns the phase events for a request sent without net/http's
// transport (the slow reader's own connection), or nil when not recording.
func (rt *reqTrace) phaseHooks() *rawPhases {
	if rt == nil || rt.hooks == nil {
		return nil
	}
	return &rawPhases{rt: rt, h: rt.hooks}
}

// rawPhases calls the otelhttptrace hooks the transport would have called,
// so a raw-connection request has the same events as a Client's. A nil
// *rawPhases does nothing.
type rawPhases struct {
	rt           *reqTrace
	h            *httptrace.ClientTrace
	gotFirstByte bool
}

func (p *rawPhases) connectStart(addr string) {
	if p != nil {
		p.h.GetConn(addr)
		p.h.ConnectStart("tcp", addr)
	}
}

func (p *rawPhases) connectDone(addr string, conn net.Conn, err error) {
	if p == nil {
		return
	}
	p.h.ConnectDone("tcp", addr, err)
	if err == nil {
		p.h.GotConn(httptrace.GotConnInfo{Conn: conn})
	}
}

func (p *rawPhases) sendStart() {
	if p != nil {
		p.h.WroteHeaders() // otelhttptrace starts http.send here
	}
}

func (p *rawPhases) sendDone(err error) {
	if p != nil {
		p.h.WroteRequest(httptrace.WroteRequestInfo{Err: err})
	}
}

func (p *rawPhases) firstByte() {
	if p != nil {
		p.gotFirstByte = true
		p.h.GotFirstResponseByte()
	}
}

func (p *rawPhases) bodyDone(err error) {
	if p != nil {
		p.rt.bodyDone(err, p.gotFirstByte)
	}
}

// end finishes the span at r.Start + r.Latency with the response's
// attributes, and sets r.TraceID when the span was sampled.
func (rt *reqTrace) end(r *Result) {
	if rt == nil {
		return
	}
	span := rt.span
	if span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 4)
		if r.Status > 0 {
			attrs = append(attrs, semconv.HTTPResponseStatusCode(r.Status), semconv.HTTPResponseBodySize(int(r.Bytes)))
		}
		if r.ServerTiming > 0 {
			attrs = append(attrs, AttrServerTimingMS.Float64(millis(r.ServerTiming)))
		}
		switch {
		case r.Err != nil:
			attrs = append(attrs, errorType(r.Err))
			span.SetStatus(codes.Error, r.Err.Error())
		case r.Status >= 400:
			attrs = append(attrs, semconv.ErrorTypeKey.String(strconv.Itoa(r.Status)))
			span.SetStatus(codes.Error, "")
		}
		span.SetAttributes(attrs...)
	}
	if sc := span.SpanContext(); sc.IsSampled() {
		r.TraceID = sc.TraceID()
	}
	span.End(trace.WithTimestamp(r.Start.Add(r.Latency)))
}

// errorType is error.type: the same bounded reasons as the error metric,
// with the semantic conventions' _OTHER for the rest.
func errorType(err error) attribute.KeyValue {
	if reason := ErrorReason(err); reason != "other" {
		return semconv.ErrorTypeKey.String(reason)
	}
	return semconv.ErrorTypeOther
}

// spanAttrs returns the fixed span attributes of a loop against rawURL, or
// nil when c does not trace.
func (c *Client) spanAttrs(rawURL, runID, role string) []attribute.KeyValue {
	if c.tracer == nil {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	return targetAttrs(u, runID, role)
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
