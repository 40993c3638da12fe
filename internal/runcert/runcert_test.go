package runcert

import (
	"crypto/tls"
	"net"
	"net/netip"
	"testing"
)

// A server with the written files is trusted by a client with the pool
// for the address named, and not for another; no address is refused.
func TestCertServesItsAddress(t *testing.T) {
	c, err := New("test", netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := c.WritePEM(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, tt := range []struct {
		server string
		ok     bool
	}{{"127.0.0.1", true}, {"127.0.0.2", false}} {
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: c.Pool, ServerName: tt.server})
		if (err == nil) != tt.ok {
			t.Errorf("%s:%s: handshake error %v, want ok %v", tt.server, port, err, tt.ok)
		}
		if conn != nil {
			conn.Close()
		}
	}
	if _, err := New("test"); err == nil {
		t.Error("New without an address made a certificate")
	}
}
