package stack

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/loadgen"
)

// The embedded proxy serves HTTP/3 on a TLS route with Deployment.HTTP3,
// in front of sync-2: one HTTP/3 connection (the run's certificate, the
// proxy's address over UDP) gets /fast and the whole 16 MiB /large; with
// buffering off two stalled streams on it hold both app workers.
func TestH3EmbeddedRoute(t *testing.T) {
	slowlabtest.Timing(t)
	s := startRealWith(t, lookup(t, NameEmbedded, "sync-2"), RouteH2TLSBufferingOff, "sync-2", 16<<20, func(d *Deployment) { d.HTTP3 = true })
	c := dialH3Proxy(t, s.run)
	if r := <-c.Get("/fast", loadgen.H2Read{}); r.Err != nil || !r.Complete {
		t.Fatalf("/fast over HTTP/3: %+v", r)
	}
	if r := <-c.Get("/large", loadgen.H2Read{}); r.Err != nil || !r.Complete || r.Bytes != 16<<20 {
		t.Fatalf("/large over HTTP/3: %+v", r)
	}
	holdBothWorkers(t, s, c)
}

// holdBothWorkers stalls two streams on c and waits for them to hold
// both of s's app workers (two upstream connections to the app).
func holdBothWorkers(t *testing.T, s *realStack, c *loadgen.H3Conn) {
	t.Helper()
	for range 2 {
		c.Get("/large", loadgen.H2Read{Stall: time.Minute})
	}
	_, port, _ := net.SplitHostPort(s.run.AppAddr())
	slowlabtest.WaitFor(t, "both app workers held by the two stalled HTTP/3 streams", func() bool { return slowlabtest.EstablishedTo(t, port) == 2 },
		func() string { return fmt.Sprintf("%d connections to the app", slowlabtest.EstablishedTo(t, port)) })
}

// HTTP/3 is refused before anything starts on a route without TLS, and by
// a proxy that does not serve it, naming which.
func TestH3Refused(t *testing.T) {
	d := Deployment{Route: RouteH2BufferingOff, HTTP3: true}
	for _, p := range proxies {
		err := checkHTTP3(d, p)
		if err == nil || !strings.Contains(err.Error(), "HTTP/3 needs a TLS route") {
			t.Errorf("%s on %s: %v, want HTTP/3 refused without TLS", p.Name(), d.Route, err)
		}
		tlsD := Deployment{Route: RouteH2TLSBufferingOff, HTTP3: true}
		err = checkHTTP3(tlsD, p)
		serves := p.Name() == NameEmbedded || p.Name() == "caddy"
		if serves != (err == nil) || !serves && !strings.Contains(err.Error(), "proxy "+p.Name()+": does not serve HTTP/3") {
			t.Errorf("%s: %v, want it served: %t", p.Name(), err, serves)
		}
	}
}

// dialH3Proxy opens an HTTP/3 connection to r's proxy, trusting the
// run's certificate.
func dialH3Proxy(t *testing.T, r *Running) *loadgen.H3Conn {
	t.Helper()
	c, err := loadgen.DialH3(context.Background(), loadgen.H3Options{Addr: r.ProxyAddr(), TLS: r.ClientTLS(), StreamWindow: 64 << 10, ConnWindow: 16 << 20,
		Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Caddy serves HTTP/3 on caddy-tls with Deployment.HTTP3 (protocols h1
// h2 h3, the run's certificate), in front of sync-2: /large whole over
// HTTP/3 and over HTTP/2 beside it, and two stalled HTTP/3 streams on one
// connection hold both app workers (Caddy streams responses).
func TestH3CaddyRoute(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireTool(t, "caddy")
	s := startRealWith(t, lookup(t, nameCaddy, "sync-2"), RouteCaddyTLS, "sync-2", 16<<20, func(d *Deployment) { d.HTTP3 = true })
	c := dialH3Proxy(t, s.run)
	if r := <-c.Get("/large", loadgen.H2Read{}); r.Err != nil || !r.Complete || r.Bytes != 16<<20 {
		t.Fatalf("/large over HTTP/3: %+v", r)
	}
	if r := <-dialH2Proxy(t, s.run).Get("/large", loadgen.H2Read{}); r.Err != nil || !r.Complete || r.Bytes != 16<<20 {
		t.Fatalf("/large over HTTP/2 beside it: %+v", r)
	}
	holdBothWorkers(t, s, c)
}
