package assess

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// TestAssessShards: two shards assess one embedded sync-2 app (started by
// the test, assessed as an external stack) with idle connections, each
// holding every other client of a level; shard 1 is given no --app, as
// a shard on another machine, which cannot see the app's processes. Two idle connections hold both
// workers; at the level of 2 each shard holds one, so shard 0, which
// measures /fast, sees it degrade at 2 with only one connection of its
// own: the other worker was held by shard 1's. Shard 1 holds its share of
// every level (0, 1, 2) up to the maximum, each level starting no earlier
// than its slot on the clock both derived from start_at. Each slot
// settles 1 s, not the published 3 (slotSettle): the idle clients leave
// this app when closed, and shard 0's check that /fast came back before
// the next level still has 2 s (a level's clients are cancelled 6.75 s
// into its slot at the latest, the next starts at 8.75 s).
func TestAssessShards(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.NothingLeft(t)
	running := labtest.StartOwn(t, stack.NameEmbedded, stack.RouteDirect, "sync-2", 0)
	start := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	results := make([]*Result, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range results {
		c := quick("sync-2", stack.RouteDirect, 4, ProbeIdle)
		c.slotSettle = time.Second
		c.ext = extFlags{fast: "http://" + running.AppAddr() + "/fast", app: []string{"tree:" + fmt.Sprint(running.PIDs()["app"])}}
		if i == 1 { // as from another machine: the app's processes unseen
			c.ext.app = nil
		}
		c.Shard, c.StartAt = fmt.Sprintf("%d/2", i), start
		if err := c.ApplyExternal(); err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		env, err := lab.Options{Out: t.TempDir()}.Env(c, labtest.LogWriter{T: t})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Run(context.Background(), env)
			errs[i] = err
			if res, ok := r.(*Result); ok {
				results[i] = res
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || results[i] == nil || len(results[i].Verdicts) != 1 {
			t.Fatalf("shard %d: %v, %+v", i, err, results[i])
		}
	}
	c := quick("sync-2", stack.RouteDirect, 4, ProbeIdle)
	c.slotSettle = time.Second
	levelAt := []time.Duration{c.slotLen(ProbeIdle, false)} // the first level's slot, from the probe's
	for _, n := range []int{1, 2} {
		levelAt = append(levelAt, levelAt[len(levelAt)-1]+c.slotLen(ProbeIdle, n == 4))
	}
	m, o := results[0].Verdicts[0], results[1].Verdicts[0]
	if m.Held.AppEstablished == nil || *m.Held.AppEstablished < 2 || o.Held.AppEstablished != nil {
		t.Errorf("the app's connections at the last level: shard 0 saw %v, shard 1 %v: want both shards' 2 seen by shard 0, nothing by the shard that cannot see the app",
			deref64(m.Held.AppEstablished), deref64(o.Held.AppEstablished))
	}
	for i, v := range []Verdict{m, o} {
		for k, lv := range v.Levels {
			t.Logf("shard %d: %d clients, %v of them its own, in place %v, start %.2f s, /fast %d/%d ok p95 %.1f ms %s, ends %v",
				i, lv.Clients, deref(lv.ShardClients), lv.Placed, lv.StartS, lv.FastOK, lv.FastSent, lv.P95MS, lv.Degraded, lv.Ends)
			if lv.StartS < levelAt[k].Seconds() {
				t.Errorf("shard %d: level %d started %.2f s into the probe, before its slot at %s", i, lv.Clients, lv.StartS, levelAt[k])
			}
		}
		if results[i].Shard != fmt.Sprintf("%d/2", i) || results[i].StartAt != start {
			t.Errorf("shard %d: assessment.json says shard %q start_at %q", i, results[i].Shard, results[i].StartAt)
		}
	}
	if m.ClientsToDegrade == nil || *m.ClientsToDegrade != 2 || len(m.Levels) != 2 || deref(m.Levels[1].ShardClients) != 1 {
		t.Errorf("shard 0: %s, levels %d: want degraded at 2 with one connection of its own", m.Stopped, len(m.Levels))
	}
	if m.BaselineP95MS <= 0 || m.Levels[0].FastSent == 0 {
		t.Errorf("shard 0: baseline p95 %v, /fast at level 1 sent %d: want /fast measured", m.BaselineP95MS, m.Levels[0].FastSent)
	}
	var shares []int
	for _, lv := range o.Levels {
		shares = append(shares, deref(lv.ShardClients))
		if lv.FastSent != 0 || lv.Degraded != "" {
			t.Errorf("shard 1: level %d sent %d /fast requests, degraded %q: want none, shard 0 measures", lv.Clients, lv.FastSent, lv.Degraded)
		}
	}
	if fmt.Sprint(shares) != "[0 1 2]" || o.ClientsToDegrade != nil || !strings.HasPrefix(o.Stopped, "shard 1/2: held its share") {
		t.Errorf("shard 1: shares %v, degraded at %v, stopped %q: want 0, 1, 2 to the maximum and no verdict", shares, o.ClientsToDegrade, o.Stopped)
	}
	// Combined, the pair gives what one process holding every client gives
	// on sync-2 (TestAssessEmbedded: 2), each shard's clock measured against
	// the app's Date within the tolerance of the other's.
	for i, r := range results {
		rec := r.ShardRecord
		if rec == nil || rec.ClockOffsetMS == nil || *rec.ClockErrorMS > msf(ClockTolerance) {
			t.Fatalf("shard %d: record %+v: want its clock measured", i, rec)
		}
		t.Logf("shard %d: clock offset %.1f ms ± %.1f, settings %s", i, *rec.ClockOffsetMS, *rec.ClockErrorMS, short(rec.SettingsHash))
	}
	comb, err := Combine([]string{results[1].Dir, results[0].Dir}, "idle<2")
	if err != nil {
		t.Fatal(err)
	}
	cv := comb.Verdicts[0]
	if cv.ClientsToDegrade == nil || *cv.ClientsToDegrade != 2 || cv.HeldInPlace != 1 {
		t.Errorf("combined: %s, threshold %v, held in place %d: want 2 and 1, as one process", cv.Stopped, cv.ClientsToDegrade, cv.HeldInPlace)
	}
	if broken, unjudged := comb.Judge(); len(broken)+len(unjudged) != 0 {
		t.Errorf("combined, idle<2: broken %v, not judged %v", broken, unjudged)
	}
}

func deref64(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// TestShardRefusals: a shard of several wants an external stack, a start
// instant in RFC 3339 and a clock within the budget; start_at alone, or
// with one shard, is refused; and a start instant already past is refused
// before any load.
func TestShardRefusals(t *testing.T) {
	ext := func(shard, at string) *Config {
		c := quick("sync-2", stack.RouteDirect, 4, ProbeIdle)
		c.ext = extFlags{fast: "http://127.0.0.1:1/fast", app: []string{"tree:" + fmt.Sprint(os.Getpid())}}
		if err := c.ApplyExternal(); err != nil {
			t.Fatal(err)
		}
		c.Shard, c.StartAt = shard, at
		return c
	}
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	managed := quick("sync-2", stack.RouteDirect, 4, ProbeIdle)
	managed.Shard, managed.StartAt = "0/2", soon
	short := ext("0/2", soon)
	short.Budget = lab.Duration(30 * time.Second)
	for _, tc := range []struct {
		c    *Config
		want string
	}{
		{managed, "shard 0/2: only against an external stack"},
		{ext("2/2", soon), `shard "2/2": want I/N`},
		{ext("0/2", ""), "shard 0/2: give start_at"},
		{ext("0/2", "tomorrow"), `start_at "tomorrow": want RFC 3339`},
		{ext("", soon), "start_at: only with shard I/N"},
		{ext("0/1", soon), "start_at: only with shard I/N, N more than 1"},
		// 4 slots (the baseline's, levels 1, 2, 4) of 10.75 s: 1 s to
		// place, quick's 250 ms offset and 500 ms window, 5 s of /fast
		// timeout, 1 s, and 3 s to settle.
		{short, "shard 0/2: the shards' clock takes 43s"},
	} {
		if err := tc.c.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("shard %q start_at %q: %v, want %q", tc.c.Shard, tc.c.StartAt, err, tc.want)
		}
	}
	if err := ext("1/2", soon).Validate(); err != nil {
		t.Errorf("a valid shard refused: %v", err)
	}
	past := ext("1/2", time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano))
	env, err := lab.Options{Out: t.TempDir()}.Env(past, labtest.LogWriter{T: t})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := past.Run(context.Background(), env); err == nil || !strings.Contains(err.Error(), "was") || !strings.Contains(err.Error(), "start every shard before it") {
		t.Errorf("start_at in the past: %v, want it refused", err)
	}
}

// TestShardWaitBeforeTheSlot: shard 0 waits for /fast before its slot as
// the unsharded probe does before its baseline (beforeBaseline). A stack
// whose /fast takes 700 ms passes the wait and has its baseline measured
// (the shard wanted /fast under 500 ms and stopped "not recovered"),
// here then stopped by the shards' clock, whose 5 s /fast timeout the
// 14 s that baseline wants would overrun; one that answers the target
// check 2xx and then only 503 fails with the unsharded run's message.
func TestShardWaitBeforeTheSlot(t *testing.T) {
	slowlabtest.EndToEnd(t, "sharded assessments of seconds against a test server")
	var answered atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			if answered.Swap(true) {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			return
		}
		select {
		case <-time.After(700 * time.Millisecond):
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	sharded := func(path string) Verdict {
		c := quick("sync-2", stack.RouteDirect, 1, ProbeIdle)
		c.ext = extFlags{fast: srv.URL + path}
		c.Shard, c.StartAt = "0/2", time.Now().Add(4*time.Second).UTC().Format(time.RFC3339Nano)
		env := externalEnv(t, c)
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		res, err := c.Run(context.Background(), env)
		if err != nil || len(res.(*Result).Verdicts) != 1 {
			t.Fatalf("%s: %v, %+v", path, err, res)
		}
		v := res.(*Result).Verdicts[0]
		t.Logf("%s: %q, baseline p95 %.1f ms", path, v.Stopped, v.BaselineP95MS)
		return v
	}
	if v := sharded("/fast"); v.BaselineP95MS < 700 || !strings.HasPrefix(v.Stopped, "failed: the baseline /fast p95 ") ||
		!strings.HasSuffix(v.Stopped, " timeout, over the shards' clock's 5s") {
		t.Errorf("700 ms: %q, baseline p95 %.1f ms; want the baseline measured and over the clock's timeout", v.Stopped, v.BaselineP95MS)
	}
	v := sharded("/down")
	unsharded := (&run{cfg: Default(), env: &lab.Env{}, fastTimeout: 5 * time.Second, t: targets{fast: srv.URL + "/down"}}).
		beforeBaseline(context.Background(), 0, time.Second)
	bound := regexp.MustCompile(` in ([0-9.]+m?s) before `).FindStringSubmatch(v.Stopped)
	if bound == nil || v.Stopped != strings.Replace(unsharded, " in 1s ", " in "+bound[1]+" ", 1) || !strings.HasPrefix(v.Stopped, "failed: /fast did not answer 2xx") {
		t.Errorf("never 2xx: %q; want the unsharded run's %q (its bound the time to the slot)", v.Stopped, unsharded)
	}
}
