package latencygap

import (
	"crypto/tls"
	"crypto/x509"
	"net/netip"

	"github.com/slowlab/slowlab/internal/runcert"
)

// certificate is a run's own server certificate (runcert), for the
// path's server address. The client trusts exactly it; nothing is written
// to disk.
type certificate struct {
	tls  tls.Certificate
	pool *x509.CertPool
}

func newCertificate(server netip.Addr) (*certificate, error) {
	c, err := runcert.New("slowlab latency-gap "+server.String(), server)
	if err != nil {
		return nil, err
	}
	return &certificate{tls: c.TLS, pool: c.Pool}, nil
}

// tlsVersion is the one protocol version a TLS mode allows.
func tlsVersion(mode string) uint16 {
	if mode == TLS12 {
		return tls.VersionTLS12
	}
	return tls.VersionTLS13
}

// server is the server's TLS configuration for a mode: only its version,
// session tickets on (Go's default: resumption needs them), h2 and
// http/1.1 offered by ALPN (a client that asks only for http/1.1, as
// loadgen's does, gets it; a page's HTTP/2 client gets h2).
func (c *certificate) server(mode string) *tls.Config {
	v := tlsVersion(mode)
	return &tls.Config{Certificates: []tls.Certificate{c.tls}, MinVersion: v, MaxVersion: v, NextProtos: []string{"h2", "http/1.1"}}
}

// client is a client's TLS configuration for a mode: only its version,
// trusting the run's certificate; with a session cache (a client that
// resumes) for 1.3-resume only, so the other modes do a full handshake on
// every new connection.
func (c *certificate) client(mode string) *tls.Config {
	v := tlsVersion(mode)
	cfg := &tls.Config{RootCAs: c.pool, MinVersion: v, MaxVersion: v, NextProtos: []string{"http/1.1"}}
	if mode == TLS13Resume {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(16)
	}
	return cfg
}
