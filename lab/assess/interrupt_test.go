package assess

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// TestBaselineInterrupted: a probe whose baseline the session's
// interruption cuts short (SIGINT as its first /fast request is served)
// stops "interrupted", with no error, so assess keeps the verdict and
// exits 1; it was ErrUnavailable, "the stack cannot be assessed: it does
// not answer" (exit 3, no assessment.json).
func TestBaselineInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(cancel)
		select { // the client gives up as its session ends
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	reqs, err := recorder.CreateFile[recorder.Request](t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer reqs.Close()
	c := quick("sync-1", stack.RouteDirect, 1, ProbeSlowReaders)
	r := &run{cfg: c, env: &lab.Env{}, probe: ProbeSlowReaders, reqs: reqs, fastTimeout: 2 * time.Second, t0: time.Now(),
		t: targets{fast: srv.URL + "/fast", front: srv.Listener.Addr().String()}, maxLag: DefaultMaxLag}
	var v Verdict
	_, ok, err := r.baseline(ctx, &v, time.Now())
	if ok || err != nil || v.Stopped != "interrupted: context canceled" {
		t.Errorf("interrupted baseline: ok %v, err %v (unavailable %v), stopped %q; want false, nil, interrupted",
			ok, err, errors.Is(err, ErrUnavailable), v.Stopped)
	}
}

// TestAssessInterruptedAtStart: an assessment interrupted before its
// first probe's stack answered (SIGINT in the first 0.1 s) returns the
// interruption with that probe stopped "interrupted", on disk too; it
// was "failed: start stack: target: context canceled".
func TestAssessInterruptedAtStart(t *testing.T) {
	env := labtest.Env(t, stack.NameEmbedded)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := quick("sync-2", stack.RouteDirect, 2, ProbeIdle).Run(ctx, env)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want canceled", err)
	}
	if v := res.(*Result).Verdicts; len(v) != 1 || v[0].Stopped != "interrupted: context canceled" {
		t.Fatalf("verdicts %+v, want idle's, interrupted", v)
	}
	if b, _ := os.ReadFile(filepath.Join(env.Out, File)); !strings.Contains(string(b), `"stopped": "interrupted`) {
		t.Errorf("%s lacks the interrupted verdict:\n%s", File, b)
	}
}
