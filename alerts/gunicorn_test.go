package alerts

import (
	"context"
	"net"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
)

// watchedSync2 starts real Gunicorn sync-2 reached directly (a worker
// timeout longer than any test, so no held worker is replaced), serving
// /large of largeSize bytes, and an exporter whose group "app" is its
// processes plus its port (the port: selector counts connections still in
// the backlog, which no process holds yet). It returns the stack, the
// app's port and the exporter's URL; both stop when the test ends.
func watchedSync2(t *testing.T, runID string, largeSize int64) (*stack.Running, string, string) {
	t.Helper()
	server, err := stack.ParseServer("sync-2")
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := stack.Lookup(stack.NameReal, server)
	why := ""
	if err != nil {
		why = err.Error()
	}
	slowlabtest.Require(t, err == nil, why)
	d := stack.Deployment{RunID: runID + "-" + strconv.Itoa(os.Getpid()), Route: stack.RouteDirect, Server: server, LargeSize: largeSize,
		AppTimeout: 10 * time.Minute, LogDir: t.TempDir(), WorkDir: t.TempDir()}
	r, err := st.Start(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop() })
	_, port, _ := net.SplitHostPort(r.AppAddr())
	e, err := exporter.New(exporter.Config{Groups: []exporter.Group{{Name: "app", Selectors: append(r.Groups()["app"], "port:"+port)}}},
		exporter.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	return r, port, srv.URL
}
