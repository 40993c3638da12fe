// Package appservertest serves the embedded app server on loopback for
// the tests of the packages that talk to it (the load generator, the
// proxy). It owns the server's life in a test, not what the tests check.
package appservertest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// Serve runs the embedded server with o on a loopback port until the test
// ends (Serve must return then, without error): its base URL and the
// server (its metrics).
func Serve(t testing.TB, o appserver.Options) (string, *appserver.Server) {
	t.Helper()
	s, err := appserver.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(slowlabtest.HangGuard):
			t.Error("the app server's Serve did not return after cancel")
		}
	})
	return "http://" + ln.Addr().String(), s
}
