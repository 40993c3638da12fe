package loadgen

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// ClosedLoop runs Workers probe workers from Start for Duration; each sends
// its next request as soon as its previous one finished. Unlike OpenLoop it
// measures what a fixed population of impatient clients gets: throughput
// collapses when the server stalls. A request started inside the window
// runs to completion (or its timeout). No result is kept: each goes to
// OnResult as it ends, so the loop's memory does not grow with how many
// requests it sends (thousands a second against a fast server).
type ClosedLoop struct {
	Client   *Client
	URL      string
	Workers  int
	Start    time.Time
	Duration time.Duration
	RunID    string
	Role     string // RoleProbe unless set
	Metrics  *Metrics
	// OnResult is called once per request from a single goroutine, in
	// completion order; it is where a caller writes each result's row
	// and adds it to its running summaries. Result.Worker says which
	// worker sent it.
	OnResult func(Result)
}

// Run sends until the window closes or ctx ends and returns how many
// requests it sent, after OnResult has seen every one of them.
func (c *ClosedLoop) Run(ctx context.Context) int {
	role := c.Role
	if role == "" {
		role = RoleProbe
	}
	lbl := c.Metrics.with(c.RunID, role)
	attrs := c.Client.spanAttrs(c.URL, c.RunID, role)
	end := c.Start.Add(c.Duration)
	var sent atomic.Int64
	results, collected := collect(c.OnResult, true)
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
				sent.Add(1)
				results <- r
			}
		})
	}
	wg.Wait()
	close(results)
	collected()
	return int(sent.Load())
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
