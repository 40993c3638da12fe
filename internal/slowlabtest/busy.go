package slowlabtest

import (
	"context"
	"runtime"
	"sync"
	"testing"
)

// Spin keeps one CPU busy until ctx ends: a busy host the test causes
// itself, for tests of the host-CPU guard (waiting for the machine to be
// busy of its own took minutes on an idle one).
func Spin(ctx context.Context) {
	for n := 0; ctx.Err() == nil; n++ {
		for i := 0; i < 1<<16; i++ {
			n ^= i
		}
	}
}

// BusyCPUs keeps every CPU busy (Spin) until t ends.
func BusyCPUs(t testing.TB) {
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Go(func() { Spin(ctx) })
	}
	t.Cleanup(func() { stop(); wg.Wait() })
}
