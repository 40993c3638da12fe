package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// An assessment shard says when its probe's slot starts; interrupted
// while it waits for it, it is interrupted (exit 1), not "the stack cannot
// be assessed" (exit 3): the stack answered every request it was sent.
func TestAssessShardInterruptedBeforeItsStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	// The interrupt comes once the shard waits for its slot: a goroutine
	// of this process is in lab/assess's sleepUntil.
	go func() {
		var stacks bytes.Buffer
		for ctx.Err() == nil && !strings.Contains(stacks.String(), "assess.sleepUntil(") {
			time.Sleep(10 * time.Millisecond)
			stacks.Reset()
			pprof.Lookup("goroutine").WriteTo(&stacks, 2)
		}
		cancel()
	}()
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	var stdout, stderr strings.Builder
	code := run(ctx, []string{"assess", "--shard", "0/2", "--start-at", at, "--fast-url", srv.URL + "/fast",
		"--probes", "idle", "--max-clients", "2", "--out", t.TempDir()}, &stdout, &stderr)
	if code != assessBroken || strings.Contains(stderr.String(), "cannot be assessed") || !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("exit %d, want 1 (interrupted) and no blame on the stack; stderr:\n%s", code, stderr.String())
	}
	// It said when the probe's slot starts, not a budget it does not keep.
	if want := "assess: idle at " + at + " on the shards' clock, in "; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
	}
}
