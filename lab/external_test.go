package lab_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slowlab/slowlab/internal/loopback"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	_ "github.com/slowlab/slowlab/lab/experiments"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// TestExternalRefusalIsRegistered: an experiment that cannot run on
// stack: external says so in its registration, and ValidateAll refuses
// its published configuration on that stack with "stack external: NAME"
// and the registered reason, before anything asks for the external:
// block; one that can run there asks for the block instead. One that
// cannot map its requests to an external stack (no Targeting) must
// register a refusal: with sse's taken away, this test fails.
func TestExternalRefusalIsRegistered(t *testing.T) {
	refusing := 0
	for _, e := range lab.Experiments() {
		cfg := e.New()
		s, ok := cfg.(lab.Stacked)
		if !ok {
			continue
		}
		s.Stack().Stack = "external"
		err := lab.ValidateAll(cfg)
		_, targets := cfg.(lab.Targeting)
		switch {
		case e.External == "" && !targets:
			t.Errorf("%s cannot map its requests to an external stack (no Targeting) and registers no refusal of it", e.Name)
		case e.External != "":
			refusing++
			if want := "stack external: " + e.Name + " " + e.External; err == nil || err.Error() != want {
				t.Errorf("%s on stack external: %v, want %q", e.Name, err, want)
			}
		case err == nil || !strings.Contains(err.Error(), "no external: block"):
			t.Errorf("%s on stack external: %v, want it to ask for the external: block", e.Name, err)
		}
	}
	if refusing < 8 {
		t.Errorf("%d experiments refuse stack: external, want the 8 that start their own stack at least", refusing)
	}
}

// externalSession runs a one-run slow-client session (no slow clients)
// on stack: external at fast (and large) into a new directory, as
// `slowlab run` does, and returns its directory and error.
func externalSession(t *testing.T, fast, large string) (string, error) {
	t.Helper()
	scen := fmt.Sprintf(`schema_version: "1.0"
experiment: slow-client
reps: 1
stack: external
external:
  fast_url: %s
  large_url: %s
  route: direct
  server: sync-2
  groups: {app: ["pid:%d"]}
conditions:
  - {route: direct, server: sync-2, slow_clients: 0}
fast: {rate: 10, duration: 1s, offset: 100ms}
`, fast, large, os.Getpid())
	cfg, err := lab.ParseScenario([]byte(scen))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "results")
	var stdout, stderr bytes.Buffer
	err = lab.RunSession(context.Background(), cfg, lab.Options{Out: out, Command: "run"}, &stdout, &stderr)
	t.Logf("err: %v\nstderr:\n%s", err, stderr.String())
	return out, err
}

// TestExternalSessionReach: a session on an external stack that does not
// answer (a refusing port; one that accepts and never answers) fails
// before any run, naming the URL and what happened, and writes no
// results; one whose stack answers (an HTTP server of this process, the
// app its groups select) runs and its run is ok.
func TestExternalSessionReach(t *testing.T) {
	slowlabtest.Timing(t)
	refused, release, err := loopback.Refused()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts, never answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	quiet := "http://" + ln.Addr().String()
	for _, tc := range []struct{ name, base, want string }{
		{"refused", "http://" + refused, "external stack: fast_url http://" + refused + "/fast: connection refused: is the stack running?"},
		{"silent", quiet, "external stack: fast_url " + quiet + "/fast: connected, but no response header within " + stack.ReachTimeout.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "silent" {
				slowlabtest.EndToEnd(t, "waits out the check's timeout")
			}
			out, err := externalSession(t, tc.base+"/fast", tc.base+"/large")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("results directory %s: %v, want none written", out, err)
			}
		})
	}

	slowlabtest.EndToEnd(t, "a run on a live external stack starts the exporter")

	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer live.Close()
	out, err := externalSession(t, live.URL+"/fast", live.URL+"/large")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(out, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Status != recorder.RunOK || runs[0].FastOK == 0 {
		t.Fatalf("runs = %+v, want one ok run with /fast answered", runs)
	}
}

// TestExternalStackDiesMidSession: an external stack that answers the
// session's check and then stops listening during the run (its listener
// closed after a few /fast requests) fails that run, the stack named:
// the /fast requests it refused measured nothing of it.
func TestExternalStackDiesMidSession(t *testing.T) {
	slowlabtest.EndToEnd(t, "a run on an external stack starts the exporter")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok"))
		if served.Add(1) == 3 { // the check's, then two of the run's
			ln.Close()
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	out, err := externalSession(t, base+"/fast", base+"/large")
	if !errors.Is(err, lab.ErrAllFailed) {
		t.Fatalf("err = %v, want every run failed", err)
	}
	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(out, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want := "external stack: fast_url " + base + "/fast stopped answering during the run: connection refused"
	if len(runs) != 1 || runs[0].Status != recorder.RunFailed || !strings.Contains(runs[0].Reason, want) {
		t.Fatalf("runs = %+v, want one failed run saying %q", runs, want)
	}
}
