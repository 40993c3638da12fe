package assess

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeStack answers a search's levels as a stack would: degraded from
// degradeAt clients on (0: never), short from shortAt on (0: never),
// invalid for the first invalid tries of every level; flip, when set,
// overrides a window's outcome by its number (from 1).
type fakeStack struct {
	degradeAt, shortAt, invalid int
	flip                        func(window, n int) (status string, ok bool)
	tries                       map[int]int
	windows                     int
}

func (f *fakeStack) level(_ context.Context, n int, _ bool) (Level, error) {
	if f.tries == nil {
		f.tries = map[int]int{}
	}
	f.tries[n]++
	f.windows++
	lv := Level{Clients: n, StartS: float64(f.windows), Connected: n, Status: statusHeld, FastSent: 25, FastOK: 25}
	switch {
	case f.tries[n] <= f.invalid:
		lv.Status, lv.Invalid = statusInvalid, "the load generator's cgroup was throttled 0.050 s"
	case f.shortAt > 0 && n >= f.shortAt:
		lv.Status, lv.Connected = statusShort, f.shortAt-1
	case f.degradeAt > 0 && n >= f.degradeAt:
		lv.Status, lv.Degraded, lv.FastOK, lv.FastFail = statusDegraded, "25 of 25 /fast requests failed", 0, 25
	}
	if f.flip != nil {
		if st, ok := f.flip(f.windows, n); ok {
			lv.Status = st
			if st == statusHeld {
				lv.Degraded, lv.FastOK, lv.FastFail = "", 25, 0
			}
		}
	}
	return lv, nil
}

// searchOn runs the threshold search of probe p up to maxClients on f.
func searchOn(t *testing.T, f *fakeStack, p Probe, maxClients int) Verdict {
	t.Helper()
	return searchRecovering(t, f, p, maxClients, func(context.Context) (bool, string) { return true, "" })
}

// searchRecovering is searchOn with the wait for /fast to come back given.
func searchRecovering(t *testing.T, f *fakeStack, p Probe, maxClients int, recovered func(context.Context) (bool, string)) Verdict {
	t.Helper()
	return searchDying(t, f, p, maxClients, recovered, nil)
}

// searchDying is searchRecovering with the check for a dead stack given.
func searchDying(t *testing.T, f *fakeStack, p Probe, maxClients int, recovered func(context.Context) (bool, string), died func() error) Verdict {
	t.Helper()
	c := Default()
	c.MaxClients, c.Budget = maxClients, 0
	v := Verdict{Probe: string(p), MaxClients: maxClients}
	s := &search{cfg: c, v: &v, probe: p, deadline: time.Now().Add(time.Hour), hold: time.Second,
		level: f.level, recovered: recovered, died: died, logf: t.Logf}
	s.run(context.Background())
	finish(&v)
	return v
}

func clients(v Verdict) string {
	var out []string
	for _, lv := range v.Levels {
		out = append(out, fmt.Sprintf("%d%c", lv.Clients, lv.Status[0]))
	}
	return strings.Join(out, " ")
}

// TestSearchFindsTheExactThreshold: powers of two, then bisection, then
// the boundary confirmed on both sides; the threshold is the exact count
// wherever it lies, not the power of two above it.
func TestSearchFindsTheExactThreshold(t *testing.T) {
	for _, tc := range []struct {
		degradeAt, max int
		levels         string
	}{
		{2, 64, "1h 2d 1h 2d"},
		{3, 64, "1h 2h 4d 3d 2h 3d"},
		{1, 64, "1d 1d"},
		{65, 1024, "1h 2h 4h 8h 16h 32h 64h 128d 96d 80d 72d 68d 66d 65d 64h 65d"},
		{0, 8, "1h 2h 4h 8h"},
		{0, 6, "1h 2h 4h 6h"},
	} {
		v := searchOn(t, &fakeStack{degradeAt: tc.degradeAt}, ProbeIdle, tc.max)
		if got := clients(v); got != tc.levels {
			t.Errorf("degrading at %d, up to %d: levels %s, want %s", tc.degradeAt, tc.max, got, tc.levels)
		}
		switch {
		case tc.degradeAt == 0:
			if v.ClientsToDegrade != nil || v.HeldInPlace != tc.max || v.Sure != "held" || !strings.HasPrefix(v.Stopped, "not degraded") {
				t.Errorf("never degrading, up to %d: %+v", tc.max, v)
			}
		case v.ClientsToDegrade == nil || *v.ClientsToDegrade != tc.degradeAt || v.HeldInPlace != tc.degradeAt-1 || v.Sure != "confirmed":
			t.Errorf("degrading at %d: threshold %v, held in place %d, %s; want %d, %d, confirmed", tc.degradeAt, v.ClientsToDegrade, v.HeldInPlace, v.Sure, tc.degradeAt, tc.degradeAt-1)
		case v.Windows != 4 && tc.degradeAt > 1:
			t.Errorf("degrading at %d: %d windows, want 4 (two each side)", tc.degradeAt, v.Windows)
		}
	}
}

// TestSearchMajority: a window that contradicts the first at a boundary
// level gets a third, and the majority decides; a boundary the majority
// overturns is searched again from what the search knows.
func TestSearchMajority(t *testing.T) {
	// Degrading from 4; the confirmations at 3 degrade (windows 5 and 6),
	// so the boundary moves down to 2|3.
	f := &fakeStack{degradeAt: 4, flip: func(w, n int) (string, bool) {
		if n == 3 && w > 4 {
			return statusDegraded, true
		}
		return "", false
	}}
	v := searchOn(t, f, ProbeIdle, 64)
	if got := clients(v); got != "1h 2h 4d 3h 3d 3d 2h" {
		t.Errorf("levels %s, want 1h 2h 4d 3h 3d 3d 2h", got)
	}
	if v.ClientsToDegrade == nil || *v.ClientsToDegrade != 3 || v.Sure != "majority" || v.HeldInPlace != 2 {
		t.Errorf("levels %s: threshold %v, %s, held in place %d; want 3, majority, 2", clients(v), v.ClientsToDegrade, v.Sure, v.HeldInPlace)
	}
	// Never degrading, but the first window at the top (window 3) does
	// once, on a busy machine: outvoted, the stack held every level.
	f = &fakeStack{flip: func(w, n int) (string, bool) {
		if w == 3 {
			return statusDegraded, true
		}
		return "", false
	}}
	v = searchOn(t, f, ProbeIdle, 4)
	if v.ClientsToDegrade != nil || v.HeldInPlace != 4 || v.Sure != "held" || !strings.HasPrefix(v.Stopped, "not degraded") {
		t.Errorf("levels %s: threshold %v, held in place %d, %s, %q; want none, 4 held", clients(v), v.ClientsToDegrade, v.HeldInPlace, v.Sure, v.Stopped)
	}
	// A stack that flaps at every level from 2 on: the rounds run out and
	// the verdict says so.
	f = &fakeStack{degradeAt: 2, flip: func(w, n int) (string, bool) {
		if n >= 2 && w%2 == 0 {
			return statusHeld, true
		}
		return "", false
	}}
	v = searchOn(t, f, ProbeIdle, 64)
	t.Logf("flapping: levels %s, threshold %v, %s", clients(v), v.ClientsToDegrade, v.Sure)
	if len(v.Levels) > 40 {
		t.Errorf("flapping: %d windows, want the rounds bounded", len(v.Levels))
	}
}

// TestSearchRepeatsInvalidLevels: an invalid window is run again, never
// a verdict; invalid at every try stops the probe without one.
func TestSearchRepeatsInvalidLevels(t *testing.T) {
	v := searchOn(t, &fakeStack{degradeAt: 2, invalid: 1}, ProbeIdle, 64)
	if v.ClientsToDegrade == nil || *v.ClientsToDegrade != 2 || v.Sure != "confirmed" {
		t.Errorf("one invalid try a level: levels %s, threshold %v, %s; want 2 confirmed", clients(v), v.ClientsToDegrade, v.Sure)
	}
	if got := clients(v); !strings.HasPrefix(got, "1i 1h 2i 2d") {
		t.Errorf("levels %s, want each level invalid once, then run again", got)
	}
	v = searchOn(t, &fakeStack{degradeAt: 2, invalid: maxTries}, ProbeIdle, 64)
	r := &Result{Assessment: Assessment{Verdicts: []Verdict{v}}}
	r.bounds, _ = ParseFailOn("idle<1")
	broken, unjudged := r.Judge()
	if v.ClientsToDegrade != nil || !strings.HasPrefix(v.Stopped, "invalid") || len(r.Unmade()) != 1 || len(broken) != 0 || len(unjudged) != 0 {
		t.Errorf("invalid at every try: %+v, unmade %v, broken %v, unjudged %v; want no threshold, stopped invalid, one unmade", v, r.Unmade(), broken, unjudged)
	}
}

// TestSearchRecoveryWaitOfAStarvedInstrument: a wait for /fast that
// failed while the load generator was throttled is an invalid try, never
// "not recovered" (which blames the stack); it is waited again, and a
// wait that failed with the instrument sound stops the probe as not
// recovered.
func TestSearchRecoveryWaitOfAStarvedInstrument(t *testing.T) {
	const starved = "the load generator's cgroup was throttled 12.000 s in the window"
	waits := 0
	v := searchRecovering(t, &fakeStack{degradeAt: 2}, ProbeIdle, 64, func(context.Context) (bool, string) {
		waits++
		return waits%2 == 0, map[bool]string{true: starved, false: ""}[waits%2 == 1]
	})
	if v.ClientsToDegrade == nil || *v.ClientsToDegrade != 2 || v.Sure != "confirmed" {
		t.Errorf("every other wait starved: levels %s, threshold %v, %s (%s); want 2 confirmed", clients(v), v.ClientsToDegrade, v.Sure, v.Stopped)
	}
	v = searchRecovering(t, &fakeStack{degradeAt: 2}, ProbeIdle, 64, func(context.Context) (bool, string) { return false, starved })
	if v.ClientsToDegrade != nil || !strings.HasPrefix(v.Stopped, "invalid") || !strings.Contains(v.Stopped, "waiting for /fast to come back: "+starved) || clients(v) != "1h" {
		t.Errorf("every wait starved: levels %s, threshold %v, %q; want one level, then invalid for the waits", clients(v), v.ClientsToDegrade, v.Stopped)
	}
	v = searchRecovering(t, &fakeStack{degradeAt: 2}, ProbeIdle, 64, func(context.Context) (bool, string) { return false, "" })
	if v.ClientsToDegrade != nil || !strings.HasPrefix(v.Stopped, "not recovered") {
		t.Errorf("the stack not back: threshold %v, %q; want not recovered", v.ClientsToDegrade, v.Stopped)
	}
}

// TestFailOnJudges: a bound passes only where the probe held with N-1
// clients in place and degraded with none fewer; the powers of two of the
// old search passed idle<100 on a stack that degrades at 65.
func TestFailOnJudges(t *testing.T) {
	at65 := searchOn(t, &fakeStack{degradeAt: 65}, ProbeIdle, 1024)
	at3 := searchOn(t, &fakeStack{degradeAt: 3}, ProbeSlowReaders, 64)
	short := searchOn(t, &fakeStack{shortAt: 8}, ProbeSlowloris, 64)
	budget := Verdict{Probe: string(ProbeStalled), Tried: 4, HeldInPlace: 4, Stopped: "budget: 3s left", Sure: "held",
		Levels: []Level{{Clients: 4, Status: statusHeld}}}
	between := Verdict{Probe: string(ProbeHeldStreams), Tried: 8, HeldInPlace: 4, ClientsToDegrade: intp(8), Sure: "between", Stopped: "degraded: x"}
	r := &Result{Assessment: Assessment{Verdicts: []Verdict{at65, at3, short, budget, between}}}
	for _, tc := range []struct {
		bounds           string
		broken, unjudged string
	}{
		{"idle<100", "idle<100: degraded with 65 (confirmed, 4 windows)", ""},
		{"idle<66", "idle<66: degraded with 65", ""},
		{"idle<65", "", ""},
		{"slow-readers<3", "", ""},
		{"slow-readers<4", "slow-readers<4: degraded with 3", ""},
		{"slowloris<4", "", ""},
		{"slowloris<16", "slowloris<16: held in place only up to 4; short: 7 of 8 clients in place", ""},
		{"stalled-readers<5", "", ""},
		{"stalled-readers<8", "", "stalled-readers<8: held in place only up to 4 (budget"},
		{"held-streams<5", "", ""},
		{"held-streams<6", "", "held-streams<6: held up to 4 and degraded at 8: the threshold is between them"},
	} {
		r.bounds, _ = ParseFailOn(tc.bounds)
		broken, unjudged := r.Judge()
		b, u := strings.Join(broken, "\n"), strings.Join(unjudged, "\n")
		if (tc.broken == "") != (b == "") || !strings.Contains(b, tc.broken) || (tc.unjudged == "") != (u == "") || !strings.Contains(u, tc.unjudged) {
			t.Errorf("%s: broken %q, not judged %q; want %q and %q", tc.bounds, b, u, tc.broken, tc.unjudged)
		}
	}
	r.bounds, _ = ParseFailOn("idle<2")
	r.Verdicts = r.Verdicts[1:]
	if _, u := r.Judge(); len(u) != 1 || !strings.Contains(u[0], "idle<2: the probe did not run") {
		t.Errorf("a probe that did not run: %v", u)
	}
}

// TestFailOnOneWindow: a probe whose verdict took one window (the stack
// degraded once, at 1 client, as a sharded run's level runs once) says
// "1 window" in a broken bound, not "1 windows".
func TestFailOnOneWindow(t *testing.T) {
	v := Verdict{Probe: string(ProbeIdle), Tried: 1, Levels: levelsOf(t, "1d")}
	finish(&v)
	r := &Result{Assessment: Assessment{Verdicts: []Verdict{v}}}
	r.bounds, _ = ParseFailOn("idle<2")
	broken, _ := r.Judge()
	want := fmt.Sprintf("idle<2: degraded with 1 (%s, 1 window)", v.Sure)
	if v.Windows != 1 || len(broken) != 1 || broken[0] != want {
		t.Errorf("%d windows: broken %q; want %q", v.Windows, broken, want)
	}
}

// TestSearchStopsWhenTheStackDies: a process of the stack that died in a
// level (Caddy killed at its memory limit by two buffered 16 MiB
// responses) stops the search there, saying which and at what level,
// instead of waiting on /fast ("not recovered") or searching on against a
// stack that is gone; one that died while /fast was awaited says so too.
func TestSearchStopsWhenTheStackDies(t *testing.T) {
	killed := errors.New("proxy: caddy (pid 7) exited during the run: signal: killed (the proxy's cgroup counted 1 OOM kill(s) at its memory limit)")
	for _, tc := range []struct {
		name      string
		recovered bool
		levels    string
	}{
		{"in the level", true, "1h 2d"},
		{"awaiting /fast", false, "1h 2d"},
	} {
		f := &fakeStack{degradeAt: 2}
		awaited := false // /fast awaited after the level of 2
		v := searchDying(t, f, ProbeSlowReaders, 4,
			func(context.Context) (bool, string) {
				awaited = f.tries[2] > 0
				return tc.recovered || !awaited, ""
			},
			func() error {
				// Dead once the level of 2 has run (in the level), or once
				// /fast is awaited after it.
				if f.tries[2] == 0 || (!tc.recovered && !awaited) {
					return nil
				}
				return killed
			})
		if got := clients(v); got != tc.levels {
			t.Errorf("%s: levels %s, want %s", tc.name, got, tc.levels)
		}
		if want := "failed: the stack died at the level of 2 clients: " + killed.Error(); v.Stopped != want {
			t.Errorf("%s: stopped %q, want %q", tc.name, v.Stopped, want)
		}
	}
	// Alive throughout: the search is as without the check.
	v := searchDying(t, &fakeStack{degradeAt: 2}, ProbeIdle, 4, func(context.Context) (bool, string) { return true, "" }, func() error { return nil })
	if got := clients(v); got != "1h 2d 1h 2d" || v.Sure != "confirmed" {
		t.Errorf("alive: levels %s, %s", got, v.Sure)
	}
}

// TestOOMFix: a probe whose stack died with an OOM kill in a cgroup gets
// that component's memory as its fix; one that died otherwise, or that
// stopped for another reason, keeps fixFor's.
func TestOOMFix(t *testing.T) {
	died := stackDiedPrefix + " at the level of 4 clients: proxy: caddy (pid 7) exited during the run: signal: killed"
	if fix := oomFix(died, map[string]int{"app": 0, "proxy": 1}); !strings.Contains(fix, "the proxy was killed at its cgroup's memory limit") {
		t.Errorf("died, proxy OOM-killed: %q", fix)
	}
	for _, tc := range []struct {
		stopped string
		kills   map[string]int
	}{
		{died, map[string]int{"app": 0, "proxy": 0}},
		{died, nil},
		{"not recovered: /fast did not come back within 30s after 2 clients", map[string]int{"proxy": 1}},
		{"degraded: 25 of 25 /fast requests failed", map[string]int{"proxy": 1}},
	} {
		if fix := oomFix(tc.stopped, tc.kills); fix != "" {
			t.Errorf("%q, kills %v: fix %q, want none", tc.stopped, tc.kills, fix)
		}
	}
}
