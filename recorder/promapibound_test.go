package recorder

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// QueryRange bounds each response body: against a loopback "Prometheus"
// whose every query_range answer is a matrix that never ends, it fails at
// maxQueryBytes (lowered here to 1 MiB) having allocated a few MiB a
// query, where the client's unbounded read goes on until the server's stop
// after 16 MiB a query.
func TestQueryRangeBoundsBody(t *testing.T) {
	slowlabtest.Timing(t)
	defer func(m int64) { maxQueryBytes = m }(maxQueryBytes)
	maxQueryBytes = 1 << 20
	var active, written atomic.Int64
	head := []byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"group":"app"},"values":[`)
	point := []byte(`[1767322445,"1"],`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		active.Add(1)
		defer active.Add(-1)
		w.Header().Set("Content-Type", "application/json")
		n, _ := w.Write(head)
		total := int64(n)
		for total < 16<<20 {
			n, err := w.Write(point)
			total += int64(n)
			if err != nil {
				break
			}
		}
		written.Add(total)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rows, err := QueryRange(context.Background(), "http://"+ln.Addr().String(), RunSelector("r"), "r", now, now.Add(time.Minute), time.Second)
	for active.Load() > 0 { // the server saw every request's client close
		time.Sleep(time.Millisecond)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d rows, %v; allocated %.1f MiB, server wrote %.1f MiB", len(rows), err, float64(alloc)/(1<<20), float64(written.Load())/(1<<20))
	if err == nil || !strings.Contains(err.Error(), "response body over 1048576 bytes") {
		t.Errorf("err %v, want a response body over 1048576 bytes", err)
	}
	if alloc > 64<<20 {
		t.Errorf("allocated %d bytes, want at most %d", alloc, 64<<20)
	}
}
