package assess

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// cpuBound names the component (app, proxy) whose cgroup was throttled
// for more than a quarter of the level, the most throttled: its CPU
// limit, not a client holding a worker, held /fast back. "" for none.
func cpuBound(h Held) (comp string, throttled float64) {
	for _, c := range []struct {
		name string
		thr  *float64
	}{{"app", h.AppThrottledS}, {"proxy", h.ProxyThrottledS}} {
		if c.thr != nil && h.LevelS > 0 && *c.thr > h.LevelS/4 && *c.thr > throttled {
			comp, throttled = c.name, *c.thr
		}
	}
	return comp, throttled
}

// heldBy takes the peaks of the samples within lv's time.
func heldBy(samples []recorder.ResourceSample, lv *Level) Held {
	var h Held
	if lv == nil {
		return h
	}
	in := slices.DeleteFunc(slices.Clone(samples), func(s recorder.ResourceSample) bool { return s.TS < lv.StartS || s.TS > lv.EndS })
	peak := func(comp string, get func(recorder.ResourceSample) recorder.Maybe) *float64 {
		if m := recorder.PeakOf(in, comp, get); m.Valid {
			return &m.Value
		}
		return nil
	}
	h.AppEstablished = peak("app", func(s recorder.ResourceSample) recorder.Maybe { return s.Established })
	h.AppQuietClients = peak("app", func(s recorder.ResourceSample) recorder.Maybe { return s.QuietClients })
	h.AppSendQueueBytes = peak("app", func(s recorder.ResourceSample) recorder.Maybe { return s.SendQueueBytes })
	h.ProxyEstablished = peak("proxy", func(s recorder.ResourceSample) recorder.Maybe { return s.Established })
	h.ProxyTempFiles = peak("proxy", func(s recorder.ResourceSample) recorder.Maybe { return s.TempFiles })
	h.ProxyTempBytes = peak("proxy", func(s recorder.ResourceSample) recorder.Maybe { return s.TempLogicalBytes })
	h.LevelS = lv.EndS - lv.StartS
	h.AppCPUS = growth(in, "app", func(s recorder.ResourceSample) recorder.Maybe { return s.CPUSeconds })
	h.AppThrottledS = growth(in, "app", func(s recorder.ResourceSample) recorder.Maybe { return s.ThrottledS })
	h.ProxyCPUS = growth(in, "proxy", func(s recorder.ResourceSample) recorder.Maybe { return s.CPUSeconds })
	h.ProxyThrottledS = growth(in, "proxy", func(s recorder.ResourceSample) recorder.Maybe { return s.ThrottledS })
	h.Summary = h.summary()
	return h
}

// summary says what h saw, a part a measured value: the counts that are
// 0 and the CPU figures of a level without length are left out.
func (h Held) summary() string {
	positive := func(v float64) bool { return v > 0 }
	timed := func(float64) bool { return h.LevelS > 0 }
	throttled := func(v float64) string { return fmt.Sprintf("throttled %.2f s", v) }
	var parts []string
	for _, p := range []struct {
		v    *float64
		when func(float64) bool // nil: whenever measured
		text func(float64) string
	}{
		{h.AppEstablished, nil, func(v float64) string { return fmt.Sprintf("app %.0f connections", v) }},
		{h.AppQuietClients, positive, func(v float64) string { return fmt.Sprintf("%.0f silent 10s+", v) }},
		{h.AppSendQueueBytes, nil, func(v float64) string { return "send queues " + mibs(v) }},
		{h.ProxyTempFiles, nil, func(v float64) string { return fmt.Sprintf("proxy temp files %.0f", v) }},
		{h.ProxyTempBytes, positive, mibs},
		{h.AppCPUS, timed, func(v float64) string { return fmt.Sprintf("app CPU %.2f s in %.1f s", v, h.LevelS) }},
		{h.AppThrottledS, positive, throttled},
		{h.ProxyCPUS, timed, func(v float64) string { return fmt.Sprintf("proxy CPU %.2f s", v) }},
		{h.ProxyThrottledS, positive, throttled},
	} {
		if p.v != nil && (p.when == nil || p.when(*p.v)) {
			parts = append(parts, p.text(*p.v))
		}
	}
	return strings.Join(parts, ", ")
}

// growth is how much a counter of comp grew over samples: its last valid
// value less its first (nil with fewer than two).
func growth(samples []recorder.ResourceSample, comp string, get func(recorder.ResourceSample) recorder.Maybe) *float64 {
	var vs []float64
	for _, s := range samples {
		if s.Component == comp {
			vs = recorder.AppendValid(vs, get(s))
		}
	}
	if len(vs) < 2 {
		return nil
	}
	d := vs[len(vs)-1] - vs[0]
	return &d
}

func mibs(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// fixFor is the fix of probe p on route, and the page whose measurement
// shows it works.
func fixFor(p Probe, route stack.Route, held Held) (fix, doc string) {
	if comp, thr := cpuBound(held); comp != "" {
		return fmt.Sprintf("none for slow clients: the %s's cgroup was throttled %.1f s of the level's %.1f s, so its CPU limit held /fast back while it moved the clients' responses; give it more CPU (or bound concurrent large requests)",
			comp, thr, held.LevelS), ""
	}
	if fix := ownedRouteFix(p, route); fix != "" {
		return fix, "docs/proxies.md"
	}
	switch p {
	case ProbeSlowReaders:
		if route.Buffering() && held.ProxyTempFiles != nil && *held.ProxyTempFiles > 0 {
			return fmt.Sprintf("none for the app: the proxy spooled the responses to %.0f temp files (%s) and /fast, through the same proxy, waited on that work; give the proxy more CPU or faster temp storage, or bound concurrent large downloads (raise proxy_max_temp_file_size only for responses larger than it)",
				*held.ProxyTempFiles, mibs(*held.ProxyTempBytes)), "docs/temp-cliff.md"
		}
		if route.Buffering() {
			return "the proxy did not take the responses off the app: check proxy_buffering and proxy_max_temp_file_size (a response over it is not buffered, so its reader holds the worker again)", "docs/temp-cliff.md"
		}
		return "a buffering proxy in front (NGINX proxy_buffering on): it reads the response at the app's speed and holds it for the reader", "docs/slow-client.md"
	case ProbeSlowUploads:
		return "proxy_request_buffering on (NGINX's default) in front: the proxy reads the whole body before the app sees it", "docs/slow-upload.md"
	case ProbeIdle:
		return "a proxy in front (it holds idle connections without a worker; client_header_timeout ends them), or a worker model that waits for requests without a worker (gevent, Uvicorn, Node)", "docs/idle-connections.md"
	case ProbeSlowloris:
		return "a proxy in front with a short client_header_timeout (NGINX: 60s by default), or an async worker model", "docs/idle-connections.md"
	case ProbeStalled:
		return "a buffering proxy in front, with send_timeout bounding a client that reads nothing", "docs/stalled-reader.md"
	case ProbeHeldStreams:
		return "serve held streams from an async worker model (gevent, Uvicorn, Node) or a pool of their own", "docs/long-poll.md"
	case ProbeH2SlowStreams, ProbeH2OneConn:
		if route.Buffering() {
			return fixFor(ProbeSlowReaders, route, held)
		}
		return "proxy_buffering on at the HTTP/2 front: it reads each stream's response at the app's speed and holds it for the stream's reader (without it, every slow stream holds an app worker through its own upstream connection, however few client connections carry them)", "docs/h2-slow-client.md"
	}
	return "", ""
}

// Result is an assessment: what it ran on and a verdict per probe
// (assessment.json), where it is written and the --fail-on bounds.
type Result struct {
	Assessment
	Dir    string
	bounds []Bound
}

// AllFailed implements lab.Result: no probe measured a level.
func (r *Result) AllFailed() bool {
	return !slices.ContainsFunc(r.Verdicts, func(v Verdict) bool { return len(v.Levels) > 0 })
}

// Print implements lab.Result: the verdict table (one word a value:
// "-" where a probe did not degrade), then what held the stack at each
// probe's last level and the fixes.
func (r *Result) Print(w io.Writer) {
	fmt.Fprintf(w, "assessed: %s %s on the %s stack, %.0f s (budget %.0f s)\n\n", r.Server, r.Route, r.Stack, r.TookS, r.BudgetS)
	verdictsTable.WriteText(w, r.Verdicts)
	fmt.Fprintln(w)
	if r.Shard != "" {
		fmt.Fprintf(w, "as shard %s of an assessment started at %s (shard 0 measures /fast and gives the verdicts)\n", r.Shard, r.StartAt)
	}
	for _, v := range r.Verdicts {
		switch {
		case strings.HasPrefix(v.Stopped, "failed") || strings.HasPrefix(v.Stopped, "not recovered") || strings.HasPrefix(v.Stopped, "budget") ||
			strings.HasPrefix(v.Stopped, "late") || strings.HasPrefix(v.Stopped, "shard ") || strings.HasPrefix(v.Stopped, "invalid") ||
			strings.HasPrefix(v.Stopped, "short"):
			fmt.Fprintf(w, "%s: %s\n", v.Probe, v.Stopped)
		case v.Held.Summary != "":
			fmt.Fprintf(w, "%s, at %s: %s%s\n", v.Probe, report.Count(v.LastLevel().Clients, "client"), v.Held.Summary, ends(v))
		}
	}
	for _, v := range r.Verdicts {
		if v.Absorbs != nil {
			fmt.Fprintf(w, "%s: %s\n", v.Probe, absorbsNote(*v.Absorbs))
		}
	}
	for _, v := range r.Verdicts {
		switch {
		case v.Fix != "" && v.FixDoc != "":
			fmt.Fprintf(w, "\nfix %s: %s (%s)", v.Probe, v.Fix, v.FixDoc)
		case v.Fix != "":
			fmt.Fprintf(w, "\nfix %s: %s", v.Probe, v.Fix)
		}
	}
	fmt.Fprintln(w)
	broken, unjudged := r.Judge()
	for _, b := range broken {
		fmt.Fprintf(w, "fail-on: broken: %s\n", b)
	}
	for _, b := range unjudged {
		fmt.Fprintf(w, "fail-on: not judged: %s\n", b)
	}
}

// ends says how the last level's connections ended, and for the
// connection probes how long the server kept them, for the stalled
// readers whether /fast came back while they were held.
func ends(v Verdict) string {
	lv := v.LastLevel()
	if lv == nil || len(lv.Ends) == 0 {
		return ""
	}
	var parts []string
	for _, how := range slices.Sorted(maps.Keys(lv.Ends)) {
		parts = append(parts, fmt.Sprintf("%s %d", how, lv.Ends[how]))
	}
	out := "; clients ended " + strings.Join(parts, ", ")
	if lv.HeldMaxS != nil {
		out += fmt.Sprintf(" (kept %.1f s median, %.1f s at most)", *lv.HeldP50S, *lv.HeldMaxS)
	}
	for _, line := range slices.Sorted(maps.Keys(lv.FirstLines)) {
		out += fmt.Sprintf("; %d got %q", lv.FirstLines[line], line)
	}
	if Probe(v.Probe) == ProbeStalled && lv.Degraded != "" {
		out += "; " + fastBack(lv)
	}
	return out
}

// fastBack says whether /fast came back while a degraded level's stalled
// readers were held.
func fastBack(lv *Level) string {
	if lv.FastBackS == nil {
		return "/fast did not come back while they were held: nothing let go of them"
	}
	return fmt.Sprintf("/fast came back %.1f s after the window with every one of them still connected: %s", *lv.FastBackS, freedBy)
}

// freedBy is what lets go of stalled readers still connected when /fast
// comes back.
const freedBy = "they no longer held it (a worker timeout, a proxy's send_timeout, or a proxy done buffering their responses)"

// stoppedWord is why the probe stopped, in one word.
func stoppedWord(v Verdict) string {
	word, _, _ := strings.Cut(v.Stopped, ":")
	switch {
	case strings.HasPrefix(word, "not degraded"):
		return "max"
	case word == "":
		return "-"
	}
	return strings.ReplaceAll(word, " ", "-")
}
