package appserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"
)

// Server is the embedded lab server. Create it with New, then Serve.
type Server struct {
	opts    Options
	reg     *prometheus.Registry
	metrics *metrics
	sends   *sendLog
	block   []byte
	timeout *timeouts
	wsOpen  wsSessions // GET /ws sessions, closed by Serve on shutdown
}

// New validates o and returns a Server with its own metrics registry.
func New(o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	s := &Server{
		opts:    o,
		reg:     reg,
		metrics: newMetrics(reg, o),
		sends:   newSendLog(10000),
		block:   make([]byte, o.BlockSize),
		timeout: newTimeouts(reg, o),
	}
	for i := range s.block {
		s.block[i] = byte('a' + i%26)
	}
	return s, nil
}

// Registry returns the server's metrics registry.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Serve runs the worker pool on app and the admin endpoints on admin until
// ctx is cancelled, then shuts both down. A nil admin listener serves no admin.
func (s *Server) Serve(ctx context.Context, app, admin net.Listener) error {
	var servers []*http.Server
	g, gctx := errgroup.WithContext(ctx)
	serve := func(srv *http.Server, ln net.Listener) {
		servers = append(servers, srv)
		g.Go(func() error {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
				return err
			}
			return nil
		})
	}
	spec, _ := specOf(s.opts.Model) // New validated it
	spec.serve(s, app, serve, g)
	if admin != nil {
		serve(&http.Server{Handler: s.AdminHandler(), ReadHeaderTimeout: 10 * time.Second}, admin)
	}
	g.Go(func() error {
		<-gctx.Done()
		// Workers share app through sharedListener, whose Close does
		// nothing: close the socket itself once so every accept loop ends.
		app.Close()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for _, srv := range servers {
			wg.Go(func() {
				if srv.Shutdown(shutdownCtx) != nil {
					srv.Close()
				}
			})
		}
		wg.Wait()
		s.wsOpen.closeAll() // hijacked: Shutdown does not see them
		return nil
	})
	return g.Wait()
}

func (s *Server) newHTTPServer(h http.Handler) *http.Server {
	if s.opts.LastByteTiming {
		h = LastByteTiming(h)
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
}

// worker wraps the app for one sync or async worker, counting its busy
// requests; the listener decides how many it takes at once.
func (s *Server) worker(id int) http.Handler {
	return s.traced(s.counted(s.Handler(), id), id)
}

// counted wraps app so that worker id's requests count as busy while they
// run and, for /longpoll, /events and /ws, as held.
func (s *Server) counted(app http.Handler, id int) http.Handler {
	busy := s.metrics.busy.WithLabelValues(strconv.Itoa(id))
	held := s.metrics.held.WithLabelValues(strconv.Itoa(id))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		busy.Inc()
		defer busy.Dec()
		if r.URL.Path == "/longpoll" || r.URL.Path == "/events" || r.URL.Path == "/ws" {
			held.Inc()
			defer held.Dec()
		}
		app.ServeHTTP(w, r)
	})
}

// threadedWorker is a gthread worker: a request runs on one of the worker's
// threads (slots), using the slot its connection reserved at accept time if
// it has one (AcceptWhenFree), else waiting for one in arrival order.
func (s *Server) threadedWorker(id int, slots chan struct{}) http.Handler {
	app := s.counted(s.Handler(), id)
	tracing := s.opts.TracerProvider != nil
	return s.traced(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var waited time.Duration
		gc, _ := r.Context().Value(connKey{}).(*gateConn)
		if gc != nil && gc.reserved.CompareAndSwap(true, false) {
			waited = gc.waited // before the request was read (threadConn)
		} else {
			start := time.Now()
			s.metrics.queued.Inc()
			select {
			case slots <- struct{}{}:
				s.metrics.queued.Dec()
			case <-r.Context().Done():
				s.metrics.queued.Dec()
				return
			}
			waited = time.Since(start)
		}
		defer func() { <-slots }()
		if tracing {
			trace.SpanFromContext(r.Context()).SetAttributes(AttrThreadWaitMS.Float64(float64(waited.Microseconds()) / 1e3))
		}
		app.ServeHTTP(w, r)
	}), id)
}

type connKey struct{}

// gateListener accepts only after reserving a thread slot for the
// connection's first request.
type gateListener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *gateListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	gc := &gateConn{Conn: c, slots: l.slots}
	gc.reserved.Store(true)
	return gc, nil
}

func (l *gateListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// gateConn carries its reservation until its first request uses it; a
// connection closed before any request gives the slot back.
type gateConn struct {
	net.Conn
	slots    chan struct{}
	reserved atomic.Bool
	once     sync.Once
	waited   time.Duration // how long the reservation waited for a thread
}

func (c *gateConn) Close() error {
	c.once.Do(func() {
		if c.reserved.CompareAndSwap(true, false) {
			<-c.slots
		}
	})
	return c.Conn.Close()
}

// AdminHandler serves /metrics, /healthz and /app-send outside the worker pool.
func (s *Server) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /app-send", s.sends.serveHTTP)
	return mux
}

// sharedListener lets several workers accept from one socket without any of
// them closing it for the others when it shuts down.
type sharedListener struct{ net.Listener }

func (sharedListener) Close() error { return nil }
