package latencygap

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// certificate is a run's own server certificate: an ECDSA P-256 key made
// for the run, self-signed for the path's server address, valid for a day.
// The client trusts exactly it; nothing is written to disk.
type certificate struct {
	tls  tls.Certificate
	pool *x509.CertPool
}

func newCertificate(server netip.Addr) (*certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tls key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "slowlab latency-gap " + server.String()},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{server.AsSlice()},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("tls certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &certificate{tls: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool: pool}, nil
}

// tlsVersion is the one protocol version a TLS mode allows.
func tlsVersion(mode string) uint16 {
	if mode == recorder.GapTLS12 {
		return tls.VersionTLS12
	}
	return tls.VersionTLS13
}

// server is the server's TLS configuration for a mode: only its version,
// session tickets on (Go's default: resumption needs them).
func (c *certificate) server(mode string) *tls.Config {
	v := tlsVersion(mode)
	return &tls.Config{Certificates: []tls.Certificate{c.tls}, MinVersion: v, MaxVersion: v, NextProtos: []string{"http/1.1"}}
}

// client is a client's TLS configuration for a mode: only its version,
// trusting the run's certificate; with a session cache (a client that
// resumes) for 1.3-resume only, so the other modes do a full handshake on
// every new connection.
func (c *certificate) client(mode string) *tls.Config {
	v := tlsVersion(mode)
	cfg := &tls.Config{RootCAs: c.pool, MinVersion: v, MaxVersion: v, NextProtos: []string{"http/1.1"}}
	if mode == recorder.GapTLS13Resume {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(16)
	}
	return cfg
}
