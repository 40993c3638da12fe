package latencygap

import (
	"crypto/tls"

	"github.com/slowlab/slowlab/internal/runcert"
)

// tlsVersion is the one protocol version a TLS mode allows.
func tlsVersion(mode string) uint16 {
	if mode == TLS12 {
		return tls.VersionTLS12
	}
	return tls.VersionTLS13
}

// serverTLS is the server's TLS configuration for a mode: only its
// version, session tickets on (Go's default: resumption needs them), h2
// and http/1.1 offered by ALPN (a client that asks only for http/1.1, as
// loadgen's does, gets it; a page's HTTP/2 client gets h2).
func serverTLS(c *runcert.Cert, mode string) *tls.Config {
	v := tlsVersion(mode)
	return &tls.Config{Certificates: []tls.Certificate{c.TLS}, MinVersion: v, MaxVersion: v, NextProtos: []string{"h2", "http/1.1"}}
}

// clientTLS is a client's TLS configuration for a mode: only its version,
// trusting exactly the run's certificate; with a session cache (a client
// that resumes) for 1.3-resume only, so the other modes do a full
// handshake on every new connection.
func clientTLS(c *runcert.Cert, mode string) *tls.Config {
	v := tlsVersion(mode)
	cfg := &tls.Config{RootCAs: c.Pool, MinVersion: v, MaxVersion: v, NextProtos: []string{"http/1.1"}}
	if mode == TLS13Resume {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(16)
	}
	return cfg
}
