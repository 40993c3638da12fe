package loadgen

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// Three shards at the barrier are answered together, with one instant
// after the last arrived; a shard out of range, or one arriving twice,
// is refused with why; a remote barrier is refused unless allowed.
func TestStartBarrier(t *testing.T) {
	slowlabtest.Timing(t)
	srv := httptest.NewServer(&StartBarrier{Shards: 3, Lead: 50 * time.Millisecond})
	defer srv.Close()
	starts := make([]time.Time, 3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lastArrival time.Time
	for i := range starts {
		wg.Go(func() {
			mu.Lock()
			if now := time.Now(); now.After(lastArrival) {
				lastArrival = now
			}
			mu.Unlock()
			var err error
			if starts[i], err = WaitBarrier(context.Background(), srv.URL, i, false); err != nil {
				t.Errorf("shard %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if starts[0].IsZero() || !starts[0].Equal(starts[1]) || !starts[1].Equal(starts[2]) || starts[0].Before(lastArrival) {
		t.Errorf("starts %v, want one instant after the last shard set out (%v)", starts, lastArrival)
	}
	for _, tc := range []struct {
		shard int
		err   string
	}{{1, "shard 1 arrived twice"}, {3, `shard "3": want 0 to 2`}} {
		if _, err := WaitBarrier(context.Background(), srv.URL, tc.shard, false); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("shard %d: %v, want %q", tc.shard, err, tc.err)
		}
	}
	if _, err := WaitBarrier(context.Background(), "http://192.0.2.1:80/", 0, false); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a remote barrier: %v, want refused", err)
	}
}
