package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The shards of a schedule are the schedule: for every count, each hit
// is in exactly one shard, at its own offset, and the shards' Hits add up.
func TestShardPacerPartitionsTheSchedule(t *testing.T) {
	whole := ConstantPacer{Interval: 10 * time.Millisecond, Duration: 1005 * time.Millisecond} // 101 hits
	for count := 1; count <= 7; count++ {
		seen := map[int]time.Duration{}
		total := 0
		for index := range count {
			p := ShardPacer{Pacer: whole, Index: index, Count: count}
			total += p.Hits()
			for hit := 0; ; hit++ {
				off, ok := p.Due(hit)
				if !ok {
					break
				}
				g := p.Global(hit)
				if _, dup := seen[g]; dup {
					t.Fatalf("%d shards: hit %d in two shards", count, g)
				}
				seen[g] = off
			}
		}
		if len(seen) != whole.Hits() || total != whole.Hits() {
			t.Errorf("%d shards: %d hits seen, Hits add up to %d, want %d", count, len(seen), total, whole.Hits())
		}
		for g, off := range seen {
			if want, _ := whole.Due(g); off != want {
				t.Errorf("%d shards: hit %d at %v, want %v", count, g, off, want)
			}
		}
	}
	for _, bad := range []string{"", "1", "4/4", "-1/4", "0/0", "a/4", "0/10001"} {
		if _, _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	if i, n, err := ParseShard("3/4"); err != nil || i != 3 || n != 4 {
		t.Errorf("ParseShard(3/4) = %d, %d, %v", i, n, err)
	}
}

// Four open loops, each a shard, started at one instant against one
// server, send the one schedule: every hit once, numbered and due as the
// whole schedule numbers and times it.
func TestShardedOpenLoopsSendTheSchedule(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	whole, err := RatePacer(1000, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(50 * time.Millisecond)
	var mu sync.Mutex
	var all []Result
	var wg sync.WaitGroup
	for index := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := NewClient(ClientOptions{Timeout: time.Minute})
			defer c.Close()
			o := &OpenLoop{Client: c, URL: srv.URL, Pacer: ShardPacer{Pacer: whole, Index: index, Count: 4}, Start: start, Metrics: NewMetrics(prometheus.NewRegistry())}
			res := o.Run(context.Background())
			mu.Lock()
			all = append(all, res...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(all) != whole.Hits() {
		t.Fatalf("%d results from 4 shards, want the schedule's %d", len(all), whole.Hits())
	}
	seen := map[int]bool{}
	for _, r := range all {
		due, _ := whole.Due(r.Seq)
		if seen[r.Seq] || !r.ScheduledAt.Equal(start.Add(due)) || r.Err != nil || r.Status != 200 {
			t.Errorf("hit %d (seen before %t): due %v, want %v; %v %d", r.Seq, seen[r.Seq], r.ScheduledAt.Sub(start), due, r.Err, r.Status)
		}
		seen[r.Seq] = true
	}
}
