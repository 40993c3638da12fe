package loadgen

import (
	"context"
	"sort"
	"sync"
	"time"
)

// ClosedLoop runs Workers probe workers from Start for Duration; each sends
// its next request as soon as its previous one finished. Unlike OpenLoop it
// measures what a fixed population of impatient clients gets: throughput
// collapses when the server stalls. A request started inside the window
// runs to completion (or its timeout).
type ClosedLoop struct {
	Client   *Client
	URL      string
	Workers  int
	Start    time.Time
	Duration time.Duration
	RunID    string
	Role     string // RoleProbe unless set
	Metrics  *Metrics
	// OnResult, if set, is called once per request from a single goroutine.
	OnResult func(Result)
}

// Run sends until the window closes or ctx ends and returns every result,
// ordered by start time. Result.Worker says which worker sent it.
func (c *ClosedLoop) Run(ctx context.Context) []Result {
	role := c.Role
	if role == "" {
		role = RoleProbe
	}
	lbl := c.Metrics.with(c.RunID, role)
	attrs := c.Client.spanAttrs(c.URL, c.RunID, role)
	end := c.Start.Add(c.Duration)
	results, collected := collect(c.OnResult, false)
	if wait := time.Until(c.Start); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < c.Workers; w++ {
		wg.Go(func() {
			for seq := 0; ctx.Err() == nil && time.Now().Before(end); seq++ {
				r := Result{Seq: seq, Worker: w, Start: time.Now()}
				lbl.start()
				c.Client.get(ctx, c.URL, &r, attrs)
				lbl.observe(&r)
				results <- r
			}
		})
	}
	wg.Wait()
	close(results)
	out := collected()
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// collect gathers results from the request goroutines: one goroutine hands
// each to onResult (if set) in arrival order and keeps it (unless discard). Close the
// channel when every sender is done; collected then waits and returns all.
func collect(onResult func(Result), discard bool) (chan<- Result, func() []Result) {
	results := make(chan Result, 64)
	var out []Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		for r := range results {
			if onResult != nil {
				onResult(r)
			}
			if !discard {
				out = append(out, r)
			}
		}
	}()
	return results, func() []Result { <-done; return out }
}

// Holders keeps N requests to URL in flight until ctx ends: each one is
// re-issued as soon as it returns, the way long-poll clients reconnect.
type Holders struct {
	Client  *Client
	URL     string
	N       int
	RunID   string
	Metrics *Metrics
	// OnResult, if set, is called for every finished hold, concurrently
	// from the holders' goroutines.
	OnResult func(Result)
}

// Run holds until ctx ends and returns how many requests were issued.
func (h *Holders) Run(ctx context.Context) int {
	lbl := h.Metrics.with(h.RunID, RoleLongPoll)
	attrs := h.Client.spanAttrs(h.URL, h.RunID, RoleLongPoll)
	var mu sync.Mutex
	issued := 0
	var wg sync.WaitGroup
	for w := 0; w < h.N; w++ {
		wg.Go(func() {
			for seq := 0; ctx.Err() == nil; seq++ {
				r := Result{Seq: seq, Worker: w, Start: time.Now()}
				mu.Lock()
				issued++
				mu.Unlock()
				lbl.start()
				h.Client.get(ctx, h.URL, &r, attrs)
				lbl.observe(&r)
				if h.OnResult != nil {
					h.OnResult(r)
				}
				if r.Err != nil && ctx.Err() == nil {
					// Do not spin on a refusing server.
					select {
					case <-time.After(100 * time.Millisecond):
					case <-ctx.Done():
					}
				}
			}
		})
	}
	wg.Wait()
	return issued
}
