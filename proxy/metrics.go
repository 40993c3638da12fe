package proxy

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// initialCodes are the status codes requests_total starts with at 0: the
// usual upstream answer and every status the proxy sends itself (fail).
// Other upstream codes get their series when first seen.
var initialCodes = []int{http.StatusOK, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}

// Upstream error stages, the values of the stage label.
const (
	stageConnect = "connect" // dialing the upstream
	stageSend    = "send"    // writing the request
	stageHeader  = "header"  // reading the response status and header
	stageBody    = "body"    // reading the response body
)

type metrics struct {
	requests          *prometheus.CounterVec
	inFlight          prometheus.Gauge
	http2Streams      prometheus.Gauge
	websockets        prometheus.Gauge
	upstreamSeconds   prometheus.Histogram
	upstreamErrors    *prometheus.CounterVec
	clientDisconnects prometheus.Counter
	spooledBytes      prometheus.Counter
	bodySpooledBytes  prometheus.Counter
	tempFilesOpen     prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, o Options) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slowlab_proxy_requests_total",
			Help: "Responses the proxy started, by status code (the upstream's, or 502/504 when the upstream failed before its header).",
		}, []string{"code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "slowlab_proxy_in_flight_requests",
			Help: "Requests the proxy is working on now.",
		}),
		http2Streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "slowlab_proxy_http2_streams",
			Help: "Requests in flight that came as HTTP/2 streams (each with its own upstream connection; many can share one client connection).",
		}),
		websockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "slowlab_proxy_websockets",
			Help: "WebSocket tunnels open now (each holds a client connection, an upstream connection and the app's side of it).",
		}),
		upstreamSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:                        "slowlab_proxy_upstream_response_seconds",
			Help:                        "Time from connecting to the upstream until its whole body was read (the upstream is closed then).",
			Buckets:                     []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
			NativeHistogramBucketFactor: 1.1,
		}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slowlab_proxy_upstream_errors_total",
			Help: "Upstream failures by stage: connect, send (request), header, body (response cut short).",
		}, []string{"stage"}),
		clientDisconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "slowlab_proxy_client_disconnects_total",
			Help: "Responses abandoned because the client went away before the last byte.",
		}),
		spooledBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "slowlab_proxy_spooled_bytes_total",
			Help: "Response bytes written to temp files.",
		}),
		bodySpooledBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "slowlab_proxy_request_body_spooled_bytes_total",
			Help: "Request body bytes written to temp files (request buffering on, bodies over the client body buffer).",
		}),
		tempFilesOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "slowlab_proxy_temp_files_open",
			Help: "Temp files the proxy holds open now (already unlinked).",
		}),
	}
	buffering := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "slowlab_proxy_buffering",
		Help: "1 if the proxy buffers responses (proxy_buffering on), 0 if it relays them.",
	})
	if o.Buffering {
		buffering.Set(1)
	}
	// Series with a bounded label exist at 0 from the start, so rate()
	// and absent() see them before the first request.
	for _, s := range []string{stageConnect, stageSend, stageHeader, stageBody} {
		m.upstreamErrors.WithLabelValues(s)
	}
	for _, code := range initialCodes {
		m.requests.WithLabelValues(strconv.Itoa(code))
	}
	reg.MustRegister(m.requests, m.inFlight, m.http2Streams, m.websockets, m.upstreamSeconds, m.upstreamErrors,
		m.clientDisconnects, m.spooledBytes, m.bodySpooledBytes, m.tempFilesOpen, buffering)
	return m
}
