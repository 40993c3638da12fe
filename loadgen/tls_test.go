package loadgen

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestClientTLSHandshake sends two requests on new connections to a TLS
// server, for TLS 1.2 and 1.3: each result carries its handshake time and
// version, the first a full handshake and the second, with a session
// cache, a resumed one; the connection's RTT is still read through TLS.
func TestClientTLSHandshake(t *testing.T) {
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(version), func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
			srv.TLS = &tls.Config{MinVersion: version, MaxVersion: version}
			srv.StartTLS()
			defer srv.Close()
			roots := x509.NewCertPool()
			roots.AddCert(srv.Certificate())
			c := NewClient(ClientOptions{TCPInfo: true, TLS: &tls.Config{RootCAs: roots, ClientSessionCache: tls.NewLRUClientSessionCache(4)}})
			defer c.Close()
			for i, wantResumed := range []bool{false, true} {
				var r Result
				c.Get(context.Background(), srv.URL, &r)
				if r.Err != nil || r.Status != 200 {
					t.Fatalf("request %d: status %d, %v", i, r.Status, r.Err)
				}
				if !r.NewConn || r.TLSHandshake <= 0 || r.TLSVersion != version || r.TLSResumed != wantResumed {
					t.Errorf("request %d: new conn %t, handshake %s, version %s, resumed %t: want a new connection, a handshake, %s, resumed %t",
						i, r.NewConn, r.TLSHandshake, tls.VersionName(r.TLSVersion), r.TLSResumed, tls.VersionName(version), wantResumed)
				}
				if r.TCPMinRTT <= 0 {
					t.Errorf("request %d: no TCP RTT read through the TLS connection", i)
				}
			}
		})
	}
}

// TestClientWithoutTLSHasNoHandshake: a plain request reports none.
func TestClientWithoutTLSHasNoHandshake(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c := NewClient(ClientOptions{})
	defer c.Close()
	var r Result
	c.Get(context.Background(), srv.URL, &r)
	if r.Err != nil || r.TLSHandshake != 0 || r.TLSVersion != 0 || r.TLSResumed {
		t.Errorf("plain request: err %v, handshake %s, version %d, resumed %t", r.Err, r.TLSHandshake, r.TLSVersion, r.TLSResumed)
	}
}
