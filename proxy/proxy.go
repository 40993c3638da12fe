package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
)

// Proxy is the embedded reverse proxy. Create it with New; it is an
// http.Handler, and Serve runs it with its admin endpoints.
type Proxy struct {
	opts Options
	reg  *prometheus.Registry
	m    *metrics

	// ctx is cancelled by Close to abort every response still in flight.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	active sync.WaitGroup // one per ServeHTTP call past the closed check

	flowMu sync.Mutex
	flows  map[*flow]struct{} // requests with an upstream connection (Buffered)
}

var _ http.Handler = (*Proxy)(nil)

// New validates o, creates o.TempDir if missing and returns a Proxy with a
// metrics registry of its own (also holding Go and process collectors).
func New(o Options) (*Proxy, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.TempDir, 0o700); err != nil {
		return nil, fmt.Errorf("create temp dir: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{opts: o, reg: reg, m: newMetrics(reg, o), ctx: ctx, cancel: cancel, flows: map[*flow]struct{}{}}, nil
}

// Options returns the options the proxy runs with.
func (p *Proxy) Options() Options { return p.opts }

// Registry returns the proxy's metrics registry.
func (p *Proxy) Registry() *prometheus.Registry { return p.reg }

// AdminHandler serves /metrics, /healthz and /buffers (Buffered as a JSON
// array).
func (p *Proxy) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /buffers", p.serveBuffered)
	return mux
}

// Serve proxies requests accepted on ln and serves AdminHandler on admin
// (nil for none) until ctx is done. It then stops accepting, lets responses
// in flight finish for up to ShutdownTimeout, aborts the rest and returns
// once every upstream connection and temp file is closed. Serve closes p.
func (p *Proxy) Serve(ctx context.Context, ln, admin net.Listener) error {
	defer p.Close()
	g, gctx := errgroup.WithContext(ctx)
	run := func(srv *http.Server, ln net.Listener, grace time.Duration) {
		g.Go(func() error {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		g.Go(func() error {
			<-gctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			if srv.Shutdown(sctx) != nil {
				srv.Close() // slow downloads still running: cut them
			}
			return nil
		})
	}
	// Timeouts as NGINX's client_header_timeout (silent, see quietListener),
	// keepalive_timeout and send_timeout (sendTimeoutListener).
	if p.opts.HTTP3 {
		if err := p.serveHTTP3(g, gctx, ln.Addr()); err != nil {
			return err
		}
	}
	srv, ln := p.clientServer(withSendTimeout(quietListener{ln}, p.opts.SendTimeout))
	run(srv, ln, p.opts.ShutdownTimeout)
	if admin != nil {
		run(&http.Server{Handler: p.AdminHandler(), ReadHeaderTimeout: 10 * time.Second}, admin, time.Second)
	}
	return g.Wait()
}

// clientServer is the server for clients on ln: HTTP/1.1, and HTTP/2 with
// Options.HTTP2 (h2c on a cleartext listener, ALPN h2 under TLS), TLS with
// Options.TLS (ln then wrapped in it).
func (p *Proxy) clientServer(ln net.Listener) (*http.Server, net.Listener) {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: p.opts.ClientHeaderTimeout, IdleTimeout: 75 * time.Second, ConnContext: connContext,
		Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	if p.opts.HTTP2 {
		srv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: p.opts.MaxConcurrentStreams}
		srv.Protocols.SetHTTP2(p.opts.TLS != nil)
		srv.Protocols.SetUnencryptedHTTP2(p.opts.TLS == nil)
	}
	if p.opts.TLS != nil {
		cfg := p.opts.TLS.Clone()
		cfg.NextProtos = []string{"http/1.1"}
		if p.opts.HTTP2 {
			cfg.NextProtos = []string{"h2", "http/1.1"}
		}
		srv.TLSConfig = cfg
		ln = tls.NewListener(ln, cfg)
	}
	return srv, ln
}

// Close aborts the responses still in flight and waits until their
// upstream connections and temp files are closed. Later requests get 503.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.active.Wait()
	return nil
}

func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.active.Add(1)
	return true
}

// ServeHTTP proxies one request to the upstream on a new connection.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer handling(r)()
	if !p.enter() {
		p.fail(w, http.StatusServiceUnavailable, "proxy is shutting down")
		return
	}
	defer p.active.Done()
	p.m.inFlight.Inc()
	defer p.m.inFlight.Dec()
	if r.ProtoMajor == 2 {
		p.m.http2Streams.Inc()
		defer p.m.http2Streams.Dec()
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)()

	release, err := p.bufferRequest(r)
	if err != nil {
		if isClientError(err) || r.Context().Err() != nil { // the client left mid-body
			p.m.clientDisconnects.Inc()
			return
		}
		p.fail(w, http.StatusInternalServerError, "request body: "+err.Error())
		return
	}
	defer release()
	up, err := p.openUpstream(ctx, r)
	if err != nil {
		if r.Context().Err() != nil { // the client left first (NGINX's 499)
			p.m.clientDisconnects.Inc()
			return
		}
		var se *stageError
		errors.As(err, &se)
		p.m.upstreamErrors.WithLabelValues(se.stage).Inc()
		switch {
		case timedOut(err):
			p.fail(w, http.StatusGatewayTimeout, "upstream timed out")
		case errors.Is(err, errUpstreamHeaderTooLarge):
			p.fail(w, http.StatusBadGateway, "upstream sent too big header")
		default:
			p.fail(w, http.StatusBadGateway, "upstream unavailable")
		}
		return
	}
	defer p.untrack(&up.flow)
	defer up.close()
	if up.resp.StatusCode == http.StatusSwitchingProtocols {
		if err := p.tunnel(w, up); err != nil {
			p.m.upstreamErrors.WithLabelValues(stageBody).Inc()
		}
		return
	}

	err = p.respond(ctx, w, r, up)
	var ce clientError
	switch {
	case err == nil:
	case errors.As(err, &ce) || r.Context().Err() != nil && p.ctx.Err() == nil:
		p.m.clientDisconnects.Inc()
		if errors.Is(err, ErrSendTimeout) {
			logClientTimeout(r)
		}
	default:
		if !errors.Is(err, context.Canceled) {
			p.m.upstreamErrors.WithLabelValues(stageBody).Inc()
		}
		// The body is cut short: close the client connection instead of
		// ending the response cleanly, as NGINX does, so the client can
		// tell (a short Content-Length, or a chunked body with no end).
		panic(http.ErrAbortHandler)
	}
}

// respond sends the upstream's response to the client, buffered or not,
// an HTTP/2 stream's writes under send_timeout (streamSendTimeout).
func (p *Proxy) respond(ctx context.Context, w http.ResponseWriter, r *http.Request, up *upstream) error {
	copyResponseHeader(w.Header(), up.resp)
	w.Header().Del(AccelBufferingHeader)
	w.WriteHeader(up.resp.StatusCode)
	p.m.requests.WithLabelValues(strconv.Itoa(up.resp.StatusCode)).Inc()
	rc := http.NewResponseController(w)
	var out io.Writer = w
	if r.ProtoMajor >= 2 { // a stream of HTTP/2 or HTTP/3
		out = streamSendTimeout{w: w, rc: rc, timeout: p.opts.SendTimeout}
	}
	if responseBuffering(up.resp.Header, p.opts.Buffering) {
		return p.relayBuffered(ctx, out, rc, up)
	}
	return p.relayUnbuffered(ctx, out, rc, up)
}

// fail answers a request the upstream never got to, with a short body.
func (p *Proxy) fail(w http.ResponseWriter, code int, msg string) {
	p.m.requests.WithLabelValues(strconv.Itoa(code)).Inc()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}

// clientError is a failed write to the client: it went away.
type clientError struct{ err error }

func (e clientError) Error() string { return "write to client: " + e.err.Error() }
func (e clientError) Unwrap() error { return e.err }

// finishUpstream closes the upstream once its whole body was read and
// records how long the upstream took.
func (p *Proxy) finishUpstream(up *upstream) {
	up.close()
	p.m.upstreamSeconds.Observe(time.Since(up.start).Seconds())
}

// relayUnbuffered copies the body through one BufferSize buffer, one
// read then one write at a time: the upstream waits for the client.
func (p *Proxy) relayUnbuffered(ctx context.Context, w io.Writer, rc *http.ResponseController, up *upstream) error {
	if err := rc.Flush(); err != nil { // the header goes out at once, as in NGINX
		return clientError{err}
	}
	buf := make([]byte, p.opts.BufferSize)
	f := &up.flow
	for {
		n, err := up.resp.Body.Read(buf)
		if n > 0 {
			f.relayed(n)
			if _, werr := w.Write(buf[:n]); werr != nil {
				return clientError{werr}
			}
			if werr := rc.Flush(); werr != nil {
				return clientError{werr}
			}
			f.sentFromMemory(int64(n))
		}
		switch {
		case err == io.EOF:
			p.finishUpstream(up)
			return nil
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return fmt.Errorf("read upstream body: %w", err)
		}
	}
}
