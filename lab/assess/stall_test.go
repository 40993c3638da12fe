package assess

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// syncOne is a server with one worker, as a sync worker pool of one:
// /large holds the worker while it writes a 64 MiB response, until one
// write has been blocked for cut (then it gives up and frees the worker,
// as a worker timeout does; never when cut is 0); /fast takes the worker
// for an instant.
func syncOne(t *testing.T, cut time.Duration) *httptest.Server {
	t.Helper()
	var worker sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) {
		worker.Lock()
		worker.Unlock()
		w.Write([]byte("ok"))
	})
	mux.HandleFunc("/large", func(w http.ResponseWriter, r *http.Request) {
		worker.Lock()
		defer worker.Unlock()
		w.Header().Set("Content-Length", strconv.Itoa(64<<20))
		rc := http.NewResponseController(w)
		chunk := make([]byte, 64<<10)
		for written := 0; written < 64<<20; written += len(chunk) {
			if cut > 0 {
				rc.SetWriteDeadline(time.Now().Add(cut))
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// A level of stalled readers that degraded /fast is kept past its window,
// and /fast is watched meanwhile: on a server that frees the worker a
// stalled reader holds (after 1.5 s of blocked writes) /fast comes back
// with the reader still connected, which the reader itself never sees
// (it is held to the bound); on one that never frees it, /fast does not
// come back while it is held.
func TestStalledLevelWatchesFast(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs levels of load for seconds")
	for _, tc := range []struct {
		name string
		cut  time.Duration
	}{{"freed", 1500 * time.Millisecond}, {"never", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := syncOne(t, tc.cut)
			large, _ := url.Parse(srv.URL + "/large")
			// Kept 4.5 s from the level's start: the window ends by 2.75 s
			// (offset, window, the 2 s timeout of a request the held
			// worker never answers), so the tail kept is 1.75 s at least.
			c := quick("sync-1", stack.RouteDirect, 1, ProbeStalled)
			c.IdleMax = lab.Duration(4500 * time.Millisecond)
			reqs, err := recorder.CreateFile[recorder.Request](t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer reqs.Close()
			r := &run{cfg: c, env: &lab.Env{}, probe: ProbeStalled, reqs: reqs, fastTimeout: 2 * time.Second, t0: time.Now(),
				t:      targets{fast: srv.URL + "/fast", front: srv.Listener.Addr().String(), large: large, largeSize: 64 << 20},
				maxLag: DefaultMaxLag}
			lv, err := r.levelIn(context.Background(), 1, 5*time.Millisecond, true, slot{share: 1, measure: true, keep: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("level: /fast %d/%d ok, p95 %.0f ms, %q; ends %v, held %s s, /fast back after %s s", lv.FastOK, lv.FastSent, lv.P95MS,
				lv.Degraded, lv.Ends, orNone(lv.HeldMaxS), orNone(lv.FastBackS))
			if lv.Degraded == "" || lv.Status != statusDegraded || lv.Connected != 1 || lv.Ends["bound"] != 1 || lv.HeldMaxS == nil {
				t.Fatalf("want a degraded level whose reader was held to the bound")
			}
			// The level's instruments are read over its window, not the
			// kept tail (which diluted a CPU-bound level's throttling).
			if lv.KeptS == nil || *lv.KeptS < 1 || lv.EndS-lv.StartS > 4.5 {
				t.Errorf("level %.1f to %.1f s, kept %s s after: want the window alone in the level and the tail kept", lv.StartS, lv.EndS, orNone(lv.KeptS))
			}
			if (lv.FastBackS != nil) != (tc.cut > 0) {
				t.Errorf("/fast back after %v; want it back only where the server frees the worker", lv.FastBackS)
			}
			if tc.cut > 0 && *lv.FastBackS > *lv.HeldMaxS {
				t.Errorf("/fast back after %.1f s, later than the reader was held (%.1f s)", *lv.FastBackS, *lv.HeldMaxS)
			}
		})
	}
}

func orNone(p *float64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64)
}
