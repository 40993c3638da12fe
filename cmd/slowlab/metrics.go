package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/slowlab/slowlab/loadgen"
)

// serveLoadgenMetrics registers loadgen metrics on a fresh registry and, when
// addr is set, serves them on addr/metrics (OpenMetrics negotiated, so
// native histograms and exemplars reach scrapers that ask). An addr
// another process holds is a failure, any other listen error a usage
// error (listenError).
func serveLoadgenMetrics(addr string, stderr io.Writer) (*loadgen.Metrics, func(), error) {
	reg := prometheus.NewRegistry()
	m := loadgen.NewMetrics(reg)
	if addr == "" {
		return m, func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, listenError("--metrics-addr", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintf(stderr, "loadgen metrics on http://%s/metrics\n", ln.Addr())
	return m, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}
