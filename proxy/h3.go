package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/sync/errgroup"
)

// serveHTTP3 serves clients HTTP/3 (Options.HTTP3) on the UDP port of
// tcp, the TLS listener's address, with quic-go's server under g until
// ctx is done; then it lets streams in flight finish for up to
// ShutdownTimeout (GOAWAY) and closes the rest. Each stream is a request
// to ServeHTTP as an HTTP/2 stream is: its own upstream connection over
// HTTP/1.1, its writes under send_timeout (streamSendTimeout, which the
// HTTP/3 server enforces per stream). A stream the proxy gives up on is
// reset (H3_REQUEST_CANCELLED).
func (p *Proxy) serveHTTP3(g *errgroup.Group, ctx context.Context, tcp net.Addr) error {
	ta, ok := tcp.(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("http/3: the client listener's address %v is not TCP: no UDP port to match", tcp)
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: ta.IP, Port: ta.Port, Zone: ta.Zone})
	if err != nil {
		return fmt.Errorf("http/3: listen on udp %v: %w", ta, err)
	}
	cfg := p.opts.TLS.Clone()
	srv := &http3.Server{Handler: p, TLSConfig: http3.ConfigureTLSConfig(cfg), MaxHeaderBytes: 64 << 10,
		QUICConfig: &quic.Config{MaxIncomingStreams: int64(p.opts.MaxConcurrentStreams), MaxIdleTimeout: 75 * time.Second}}
	g.Go(func() error {
		if err := srv.Serve(pc); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, quic.ErrServerClosed) {
			return fmt.Errorf("http/3: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), p.opts.ShutdownTimeout)
		defer cancel()
		srv.Shutdown(sctx)
		srv.Close()
		return pc.Close()
	})
	return nil
}
