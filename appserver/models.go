package appserver

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"golang.org/x/net/netutil"
	"golang.org/x/sync/errgroup"
)

// ModelSpec is one worker model of the embedded server: its name, the
// sizes it takes and how it serves.
type ModelSpec struct {
	Model   Model
	Sized   bool   // takes a worker count: MODEL-W
	Threads bool   // takes a thread count too: MODEL-WxT
	Summary string // what bounds it, for help: "workers x threads"
	// serve starts the model's workers on app (serve runs one
	// http.Server on one listener in g).
	serve func(s *Server, app net.Listener, serve func(*http.Server, net.Listener), g *errgroup.Group)
}

// ModelSpecs are the embedded server's worker models, defined once here:
// Options.Validate, Slots and Name read them, Serve runs them, and
// lab/stack's embedded app lists them as its models. (Set in init: the
// serve functions refer back to them through Options.Name.)
var ModelSpecs []ModelSpec

func init() {
	ModelSpecs = []ModelSpec{
		{Model: ModelSync, Sized: true, Summary: "one request per worker at a time", serve: serveSync},
		{Model: ModelGthread, Sized: true, Threads: true, Summary: "workers x threads", serve: serveGthread},
		{Model: ModelAsync, Summary: "unbounded", serve: serveAsync},
	}
}

// specOf returns model m's spec; false when none has its name.
func specOf(m Model) (ModelSpec, bool) {
	for _, s := range ModelSpecs {
		if s.Model == m {
			return s, true
		}
	}
	return ModelSpec{}, false
}

// ModelNames lists the models joined by sep: "sync, gthread, async",
// "sync|gthread|async".
func ModelNames(sep string) string {
	var names []string
	for _, s := range ModelSpecs {
		names = append(names, string(s.Model))
	}
	return strings.Join(names, sep)
}

// ModelHelp describes the models for a flag's help: "sync (one request
// per worker at a time), gthread (workers x threads), async (unbounded)".
func ModelHelp() string {
	var parts []string
	for _, s := range ModelSpecs {
		parts = append(parts, fmt.Sprintf("%s (%s)", s.Model, s.Summary))
	}
	return strings.Join(parts, ", ")
}

// serveSync runs one listener wrapper per worker: each worker accepts
// one connection, serves one request and closes before it accepts the
// next.
func serveSync(s *Server, app net.Listener, serve func(*http.Server, net.Listener), _ *errgroup.Group) {
	for w := 0; w < s.opts.Workers; w++ {
		srv := s.newHTTPServer(s.worker(w))
		srv.SetKeepAlivesEnabled(false)
		serve(srv, s.timeout.listener(netutil.LimitListener(sharedListener{app}, 1), w))
	}
}

// serveGthread runs workers that, like Gunicorn's, take connections up to
// their connection limit (which one gets a connection is chance, see
// dispatcher) and queue them for their threads (threadListener), so a
// worker whose threads are all held keeps taking connections that wait,
// and a connection holds its thread until its request has arrived. With
// AcceptWhenFree a worker accepts only while a thread is free, and the
// kernel backlog holds the rest until any worker has one.
func serveGthread(s *Server, app net.Listener, serve func(*http.Server, net.Listener), g *errgroup.Group) {
	conns := s.opts.WorkerConnections
	if conns == 0 {
		conns = DefaultWorkerConnections
	}
	var disp *dispatcher
	if !s.opts.AcceptWhenFree {
		disp = newDispatcher(app, s.opts.Workers, conns)
		g.Go(func() error { disp.run(); return nil })
	}
	for w := 0; w < s.opts.Workers; w++ {
		slots := make(chan struct{}, s.opts.Threads)
		srv := s.newHTTPServer(s.threadedWorker(w, slots))
		srv.ConnContext = withConn
		if disp != nil {
			serve(srv, &threadListener{Listener: disp.workers[w], slots: slots, queued: s.metrics.queued})
			continue
		}
		serve(srv, &gateListener{Listener: sharedListener{app}, slots: slots, closed: make(chan struct{})})
	}
}

// serveAsync runs one server for every connection.
func serveAsync(s *Server, app net.Listener, serve func(*http.Server, net.Listener), _ *errgroup.Group) {
	serve(s.newHTTPServer(s.worker(0)), app)
}
