package stack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/loadgen"
)

// The HTTP/2 routes on both stacks, in front of sync-2: one HTTP/2
// connection to the proxy (prior knowledge, or TLS with the run's
// certificate on the TLS routes) gets /fast and the whole
// 16 MiB /large; with buffering off two stalled streams on it hold both
// app workers (two upstream connections open to the app for as long as
// they stall); with buffering on the proxy takes both responses whole and
// lets the workers go (the app's send log says both bodies were handed
// over whole), and /fast on another connection is answered while the two
// still stall.
func TestH2Routes(t *testing.T) {
	slowlabtest.Timing(t)
	for _, name := range []string{NameEmbedded, NameReal} {
		for _, route := range H2Routes {
			t.Run(name+"/"+string(route), func(t *testing.T) {
				s := startReal(t, lookup(t, name, "sync-2"), route, "sync-2", 16<<20)
				c := dialH2Proxy(t, s.run)
				if r := <-c.Get("/fast", loadgen.H2Read{}); r.Err != nil || !r.Complete {
					t.Fatalf("/fast over HTTP/2: %+v", r)
				}
				if r := <-c.Get("/large", loadgen.H2Read{}); r.Err != nil || !r.Complete || r.Bytes != 16<<20 {
					t.Fatalf("/large over HTTP/2: %+v", r)
				}
				var stalled []<-chan loadgen.H2Result
				for i := range 2 {
					h := http.Header{appserver.RequestIDHeader: {"h2-stalled-" + strconv.Itoa(i)}}
					stalled = append(stalled, c.GetHeader("/large", h, loadgen.H2Read{Stall: time.Minute}))
				}
				_, port, _ := net.SplitHostPort(s.run.AppAddr())
				if !route.Buffering() {
					slowlabtest.WaitFor(t, "both app workers held by the two stalled streams", func() bool { return slowlabtest.EstablishedTo(t, port) == 2 },
						func() string { return fmt.Sprintf("%d connections to the app", slowlabtest.EstablishedTo(t, port)) })
				} else {
					// The app handed both bodies over whole, the streams
					// still stalled.
					slowlabtest.WaitFor(t, "the app done with both stalled streams' responses", func() bool {
						served, _, err := s.run.AppServed(context.Background())
						return err == nil && served["h2-stalled-0"].Complete && served["h2-stalled-1"].Complete
					})
					other := dialH2Proxy(t, s.run)
					if r := <-other.Get("/fast", loadgen.H2Read{}); r.Err != nil || !r.Complete {
						t.Fatalf("/fast on another connection: %+v", r)
					}
					for _, ch := range stalled {
						select {
						case r := <-ch:
							t.Errorf("a stalled stream ended before /fast was answered: %+v", r)
						default:
						}
					}
				}
			})
		}
	}
}

// dialH2Proxy opens an HTTP/2 connection to r's proxy: with prior
// knowledge, or over TLS trusting the run's certificate on a TLS route.
func dialH2Proxy(t *testing.T, r *Running) *loadgen.H2Conn {
	t.Helper()
	c, err := loadgen.DialH2(context.Background(), loadgen.H2Options{Addr: r.ProxyAddr(), TLS: r.ClientTLS(), StreamWindow: 64 << 10, ConnWindow: 16 << 20, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
