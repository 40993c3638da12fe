package loadgen

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Roles label what a request was for.
const (
	RoleFast     = "fast"
	RoleProbe    = "probe"
	RoleLongPoll = "longpoll"
	RoleSlow     = "slow"
	RoleGap      = "gap" // latency-gap's requests, sent one after another
	RoleUpload   = "upload"
)

// Buckets are the classic histogram buckets: 100 us to 60 s. Native
// histogram buckets are exposed beside them for scrapers that ask.
var Buckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Metrics are the load generator's metrics (a contract: names, labels and buckets stay stable), on a
// registry the caller owns. A nil *Metrics observes nothing.
type Metrics struct {
	duration, lag, connect, ttfb, serverTiming *prometheus.HistogramVec
	requests, errors                           *prometheus.CounterVec
	inFlight                                   *prometheus.GaugeVec
	received                                   *prometheus.CounterVec
}

// NewMetrics registers the loadgen metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name, Help: help, Buckets: Buckets,
			NativeHistogramBucketFactor:    1.1,
			NativeHistogramMaxBucketNumber: 160,
		}, []string{"run_id", "role"})
	}
	m := &Metrics{
		duration:     hist("slowlab_loadgen_request_duration_seconds", "Request latency from the request's actual start to its last body byte."),
		lag:          hist("slowlab_loadgen_schedule_lag_seconds", "How late each open-loop request started against its schedule."),
		connect:      hist("slowlab_loadgen_connect_duration_seconds", "TCP connect time of requests that opened a new connection."),
		ttfb:         hist("slowlab_loadgen_ttfb_seconds", "Time from the request's start to the first response byte."),
		serverTiming: hist("slowlab_loadgen_server_timing_seconds", "The server's own time for the request, from its Server-Timing app;dur header."),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slowlab_loadgen_requests_total", Help: "Requests that got a response, by status code.",
		}, []string{"run_id", "role", "code"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slowlab_loadgen_request_errors_total", Help: "Requests that failed without a complete response, by reason (timeout, refused, reset, eof, canceled, incomplete, not_sent, late, header_too_large, other).",
		}, []string{"run_id", "role", "reason"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "slowlab_loadgen_in_flight", Help: "Requests started and not finished.",
		}, []string{"run_id", "role"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slowlab_loadgen_received_bytes_total", Help: "Response body bytes received.",
		}, []string{"run_id", "role"}),
	}
	reg.MustRegister(m.duration, m.lag, m.connect, m.ttfb, m.serverTiming, m.requests, m.errors, m.inFlight, m.received)
	return m
}

// labels is a run_id/role pair with its metric children resolved once.
type labels struct {
	m            *Metrics
	runID, role  string
	inFlight     prometheus.Gauge
	received     prometheus.Counter
	duration     prometheus.Observer
	lag          prometheus.Observer
	connect      prometheus.Observer
	ttfb         prometheus.Observer
	serverTiming prometheus.Observer
	late         prometheus.Counter // errors_total{reason="late"}
	ok           prometheus.Counter // requests_total{code="200"}
}

// with resolves the children of a run_id/role pair. It creates every
// series the pair can have with a bounded label (each error reason, and
// requests_total for code 200) at 0, so rate() and absent() see a series
// from the moment a loop starts rather than from its first event.
func (m *Metrics) with(runID, role string) *labels {
	if m == nil {
		return nil
	}
	for _, reason := range ErrorReasons {
		m.errors.WithLabelValues(runID, role, reason)
	}
	m.requests.WithLabelValues(runID, role, "200")
	return &labels{
		m: m, runID: runID, role: role,
		inFlight:     m.inFlight.WithLabelValues(runID, role),
		received:     m.received.WithLabelValues(runID, role),
		duration:     m.duration.WithLabelValues(runID, role),
		lag:          m.lag.WithLabelValues(runID, role),
		connect:      m.connect.WithLabelValues(runID, role),
		ttfb:         m.ttfb.WithLabelValues(runID, role),
		serverTiming: m.serverTiming.WithLabelValues(runID, role),
		late:         m.errors.WithLabelValues(runID, role, "late"),
		ok:           m.requests.WithLabelValues(runID, role, "200"),
	}
}

// Observe records one finished request of role in run runID, for callers
// that send requests one by one with Client.Get rather than in a loop.
func (m *Metrics) Observe(runID, role string, r *Result) {
	l := m.with(runID, role)
	l.start()
	l.observe(r)
}

// Begin and End record a request of role in run runID that another
// process measured: Begin when it is known to be in flight, End with its
// result when it ended (a NotSent or Skipped one counted as the loop
// counts them). Observe is both at once.
func (m *Metrics) Begin(runID, role string) { m.with(runID, role).start() }

// Prepare creates the series of role in run runID at 0, as a loop does
// when it starts: a series that first appears with its first observations
// counted is one whose rate() misses them.
func (m *Metrics) Prepare(runID, role string) { m.with(runID, role) }

// End: see Begin.
func (m *Metrics) End(runID, role string, r *Result) {
	l := m.with(runID, role)
	switch {
	case r.NotSent:
		l.notSent()
	case r.Skipped:
		l.skipped()
	default:
		l.observe(r)
	}
}

func (l *labels) start() {
	if l != nil {
		l.inFlight.Inc()
	}
}

// skipped records a scheduled request not started because it was too
// late: an error (reason late), and nothing else.
func (l *labels) skipped() {
	if l != nil {
		l.late.Inc()
	}
}

// notSent records a scheduled request that was never sent: an error, and
// nothing else (it was never in flight and has no timings).
func (l *labels) notSent() {
	if l != nil {
		l.m.errors.WithLabelValues(l.runID, l.role, ErrorReason(ErrNotSent)).Inc()
	}
}

// observe records one finished request. A sampled request's observations
// carry its trace ID as an exemplar.
func (l *labels) observe(r *Result) {
	if l == nil {
		return
	}
	var ex prometheus.Labels
	if r.TraceID.IsValid() {
		ex = prometheus.Labels{"trace_id": r.TraceID.String()}
	}
	l.inFlight.Dec()
	l.received.Add(float64(r.Bytes))
	if r.Scheduled {
		observe(l.lag, r.ScheduleLag.Seconds(), ex)
	}
	if r.NewConn && r.Connect > 0 {
		observe(l.connect, r.Connect.Seconds(), ex)
	}
	if r.TTFB > 0 {
		observe(l.ttfb, r.TTFB.Seconds(), ex)
	}
	if r.ServerTiming > 0 {
		observe(l.serverTiming, r.ServerTiming.Seconds(), ex)
	}
	switch {
	case r.Status == 200:
		l.ok.Inc()
	case r.Status > 0:
		l.m.requests.WithLabelValues(l.runID, l.role, strconv.Itoa(r.Status)).Inc()
	}
	if r.Err != nil {
		l.m.errors.WithLabelValues(l.runID, l.role, ErrorReason(r.Err)).Inc()
		return
	}
	observe(l.duration, r.Latency.Seconds(), ex)
}

// observe observes v into o, with exemplar ex when it is set (histograms
// from a HistogramVec always take exemplars).
func observe(o prometheus.Observer, v float64, ex prometheus.Labels) {
	if ex != nil {
		if eo, ok := o.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(v, ex)
			return
		}
	}
	o.Observe(v)
}
