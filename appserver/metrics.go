package appserver

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// statusClientClosed is what a long-poll whose client left first is counted
// as (NGINX's 499); it is never sent.
const statusClientClosed = 499

// endpointCodes lists the app endpoints (see Handler) with every status code
// their handlers count: the bounded label values of requests_total.
var endpointCodes = map[string][]int{
	"fast":     {http.StatusOK},
	"large":    {http.StatusOK, http.StatusBadRequest},
	"longpoll": {http.StatusNoContent, http.StatusBadRequest, statusClientClosed},
	"bytes":    {http.StatusOK, http.StatusBadRequest},
	"upload":   {http.StatusOK, statusClientClosed},
	"events":   {http.StatusOK, http.StatusBadRequest, statusClientClosed},
	"ws":       {http.StatusSwitchingProtocols, http.StatusBadRequest, http.StatusUpgradeRequired, statusClientClosed},
	"redirect": {http.StatusMovedPermanently, http.StatusFound, http.StatusBadRequest},
	"page":     {http.StatusOK, http.StatusBadRequest},
}

type metrics struct {
	requests *prometheus.CounterVec
	write    *prometheus.HistogramVec
	busy     *prometheus.GaugeVec
	held     *prometheus.GaugeVec
	queued   prometheus.Gauge
	wsQueued prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, o Options) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slowlab_target_requests_total",
			Help: "Requests answered by the embedded target, by endpoint and status code.",
		}, []string{"endpoint", "code"}),
		write: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                        "slowlab_target_response_write_seconds",
			Help:                        "Time from handler start until the last response byte was accepted by the socket.",
			Buckets:                     []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
			NativeHistogramBucketFactor: 1.1,
		}, []string{"endpoint"}),
		busy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "slowlab_target_busy_slots",
			Help: "Requests a worker is working on now (a sync worker has one slot, a gthread worker one per thread).",
		}, []string{"worker"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "slowlab_target_longpolls_in_progress",
			Help: "Long-polls, SSE streams (/events) and WebSockets (/ws) a worker is holding now, each on one of its slots (part of busy slots).",
		}, []string{"worker"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "slowlab_target_queued_requests",
			Help: "Requests accepted by a gthread worker and waiting for one of its threads.",
		}),
		wsQueued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "slowlab_target_ws_queued_bytes",
			Help: "Bytes of /ws?queue=unbounded messages stamped and held in the app's memory that their sockets have not taken yet.",
		}),
	}
	slots := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "slowlab_target_slots",
		Help: "Requests the server can work on at once (workers x threads); absent for the unbounded async model.",
	})
	reg.MustRegister(m.requests, m.write, m.busy, m.held, m.queued, m.wsQueued)
	// Every series with a bounded label exists at 0 from the start, so
	// rate() and absent() see it before the first request.
	for endpoint, codes := range endpointCodes {
		m.write.WithLabelValues(endpoint)
		for _, code := range codes {
			m.requests.WithLabelValues(endpoint, strconv.Itoa(code))
		}
	}
	workers := 1 // async serves everything as worker 0
	if n := o.Slots(); n > 0 {
		slots.Set(float64(n))
		reg.MustRegister(slots)
		workers = o.Workers
	}
	for w := range workers {
		m.busy.WithLabelValues(strconv.Itoa(w))
		m.held.WithLabelValues(strconv.Itoa(w))
	}
	return m
}
