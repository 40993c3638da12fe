package loadgen

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// StartBarrier is an HTTP start barrier for the shards of one load run as
// local processes: each shard GETs it (WaitBarrier) and is answered once
// every one of Shards has arrived, all with one start instant, Lead after
// the last arrival, in RFC 3339. A start time on the command line does the
// same across machines; the barrier spares a local test from guessing how
// long its processes take to start.
type StartBarrier struct {
	Shards int
	Lead   time.Duration // 0: 200 ms

	mu      sync.Mutex
	arrived map[int]bool
	start   time.Time
	ready   chan struct{}
}

// ServeHTTP answers GET ?shard=I once every shard arrived: 200 with the
// start instant; 400 for a shard out of range or one that arrived twice.
func (b *StartBarrier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i, err := strconv.Atoi(r.URL.Query().Get("shard"))
	if err != nil || i < 0 || i >= b.Shards {
		http.Error(w, fmt.Sprintf("shard %q: want 0 to %d", r.URL.Query().Get("shard"), b.Shards-1), http.StatusBadRequest)
		return
	}
	ready, ok := b.arrive(i)
	if !ok {
		http.Error(w, fmt.Sprintf("shard %d arrived twice", i), http.StatusBadRequest)
		return
	}
	select {
	case <-ready:
		fmt.Fprintln(w, b.start.UTC().Format(time.RFC3339Nano))
	case <-r.Context().Done():
	}
}

// arrive counts shard i in; the last one fixes the start.
func (b *StartBarrier) arrive(i int) (<-chan struct{}, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.arrived == nil {
		b.arrived, b.ready = map[int]bool{}, make(chan struct{})
	}
	if b.arrived[i] {
		return nil, false
	}
	b.arrived[i] = true
	if len(b.arrived) == b.Shards {
		lead := b.Lead
		if lead <= 0 {
			lead = 200 * time.Millisecond
		}
		b.start = time.Now().Add(lead)
		close(b.ready)
	}
	return b.ready, true
}

// WaitBarrier arrives at the barrier at url as shard and returns the start
// instant it answers with, after every shard arrived; ctx bounds the wait.
// The url must be loopback unless allowRemote.
func WaitBarrier(ctx context.Context, url string, shard int, allowRemote bool) (time.Time, error) {
	u, err := CheckTarget(url, allowRemote)
	if err != nil {
		return time.Time{}, err
	}
	q := u.Query()
	q.Set("shard", strconv.Itoa(shard))
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return time.Time{}, err
	}
	// Every connection is checked again before connect, as the load's are.
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Control: dialGuard(allowRemote)}).DialContext}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return time.Time{}, fmt.Errorf("start barrier: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if err != nil {
		return time.Time{}, fmt.Errorf("start barrier: %w", err)
	}
	text := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return time.Time{}, fmt.Errorf("start barrier: %s: %s", resp.Status, text)
	}
	start, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return time.Time{}, fmt.Errorf("start barrier: answer %q: not an RFC 3339 instant", text)
	}
	return start, nil
}
