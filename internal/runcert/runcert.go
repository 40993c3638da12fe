// Package runcert makes a run's own TLS server certificate: an ECDSA P-256
// key made for the run, self-signed for the addresses the server listens
// on, valid for a day, and the pool a client trusts it with. Nothing else
// trusts it. It owns making the certificate and writing it as PEM for a
// server that reads files (NGINX's ssl_certificate, `slowlab proxy
// --tls-cert`); the TLS versions and protocols are the caller's.
package runcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// Cert is a run's certificate: TLS for the server, Pool for its clients.
type Cert struct {
	TLS  tls.Certificate
	Pool *x509.CertPool
}

// New makes a certificate for the server addresses given (at least one),
// named name in its subject.
func New(name string, addrs ...netip.Addr) (*Cert, error) {
	if len(addrs) == 0 {
		return nil, errors.New("runcert: no server address")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tls key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	ips := make([]net.IP, len(addrs))
	for i, a := range addrs {
		ips[i] = a.AsSlice()
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: ips,
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
	return &Cert{TLS: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, Pool: pool}, nil
}

// WritePEM writes the certificate and its key (readable by its owner
// only) as cert.pem and key.pem in dir, and returns their paths.
func (c *Cert) WritePEM(dir string) (certFile, keyFile string, err error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.TLS.PrivateKey)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.TLS.Certificate[0]}), 0o644); err != nil {
		return "", "", fmt.Errorf("tls certificate: %w", err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", fmt.Errorf("tls key: %w", err)
	}
	return certFile, keyFile, nil
}
