package stack

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// The embedded target's admin reads bound the body: against a loopback
// admin that writes /metrics samples or /app-send records for ever, each
// read fails at its bound (lowered here to 1 MiB) having allocated a few
// MiB, where an unbounded one reads until the admin's stop after 64 MiB.
func TestEmbeddedAdminReadsBoundBody(t *testing.T) {
	slowlabtest.Timing(t)
	defer func(m, s int64) { maxAdminMetricsBytes, maxAppSendBytes = m, s }(maxAdminMetricsBytes, maxAppSendBytes)
	maxAdminMetricsBytes, maxAppSendBytes = 1<<20, 1<<20
	written := make(chan int64, 1)
	mux := http.NewServeMux()
	endless := func(head, repeat string) http.HandlerFunc {
		b := []byte(repeat) // a write allocates nothing
		return func(w http.ResponseWriter, r *http.Request) {
			n, _ := w.Write([]byte(head))
			total := int64(n)
			for total < 64<<20 {
				n, err := w.Write(b)
				total += int64(n)
				if err != nil {
					break
				}
			}
			written <- total
		}
	}
	mux.Handle("GET /metrics", endless("# TYPE slowlab_target_longpolls_in_progress gauge\n",
		`slowlab_target_longpolls_in_progress{worker="`+strings.Repeat("1", 100)+"\"} 1\n"))
	mux.Handle("GET /app-send", endless("[", `{"id":"`+strings.Repeat("a", 100)+`","app_send_s":1},`))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r := &embeddedRun{admin: ln.Addr().String()}
	for _, tc := range []struct {
		name string
		read func(context.Context) error
	}{
		{"metrics", func(ctx context.Context) error { _, err := r.LongPollsHeld(ctx); return err }},
		{"app-send", func(ctx context.Context) error { _, err := r.AppSend(ctx); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := tc.read(context.Background())
			n := <-written // the admin saw the client close
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%v, allocated %.1f MiB, admin wrote %.1f MiB", err, float64(alloc)/(1<<20), float64(n)/(1<<20))
			if err == nil || !strings.Contains(err.Error(), "/"+tc.name+": ") || !strings.Contains(err.Error(), "response body over 1048576 bytes") {
				t.Errorf("err %v, want the /%s body over 1048576 bytes", err, tc.name)
			}
			if alloc > 16<<20 {
				t.Errorf("allocated %d bytes, want at most %d", alloc, 16<<20)
			}
		})
	}
}
