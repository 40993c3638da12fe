package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/recorder"
)

// SlowClient is the slow-client section, which slow-client's registration in lab carries.
var SlowClient = Section{Name: "slow-client", Marker: recorder.FileName[recorder.Run](), build: buildSlowClient}

// slowClient is a slow-client results directory as read. A nil slice of
// an optional file means the file is not there.
type slowClient struct {
	runs       []recorder.Run
	conditions []recorder.Condition
	larges     []recorder.LargeResponse
	requests   []recorder.Request
	samples    []recorder.ResourceSample
	missing    []string // optional files that are not there
}

// readOptional reads dir's file of row type T; present is false when the
// file does not exist.
func readOptional[T recorder.Row[T]](dir string) (rows []T, present bool, err error) {
	path := filepath.Join(dir, recorder.FileName[T]())
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	rows, err = recorder.ReadFile[T](path)
	if err != nil {
		return nil, true, err
	}
	if rows == nil {
		rows = []T{}
	}
	return rows, true, nil
}

func loadSlowClient(dir string) (*slowClient, error) {
	d := &slowClient{}
	var err error
	d.runs, err = recorder.ReadFile[recorder.Run](filepath.Join(dir, recorder.FileName[recorder.Run]()))
	if err != nil {
		return nil, err
	}
	var present bool
	note := func(name string) {
		if !present {
			d.missing = append(d.missing, name)
		}
	}
	if d.conditions, present, err = readOptional[recorder.Condition](dir); err != nil {
		return nil, err
	}
	note(recorder.FileName[recorder.Condition]())
	if d.larges, present, err = readOptional[recorder.LargeResponse](dir); err != nil {
		return nil, err
	}
	note(recorder.FileName[recorder.LargeResponse]())
	if d.requests, present, err = readOptional[recorder.Request](dir); err != nil {
		return nil, err
	}
	note(recorder.FileName[recorder.Request]())
	if d.samples, present, err = readOptional[recorder.ResourceSample](dir); err != nil {
		return nil, err
	}
	note(recorder.FileName[recorder.ResourceSample]())
	return d, nil
}

// condKey is a slow-client condition.
type condKey struct {
	route, server string
	slow          int
}

func (k condKey) label() string {
	return fmt.Sprintf("%s, %s, %d slow", k.route, k.server, k.slow)
}

func (k condKey) name() string { return Slug(fmt.Sprintf("%s-%s-s%d", k.route, k.server, k.slow)) }

func keyOf(r recorder.Run) condKey { return condKey{r.Route, r.Server, r.SlowClients} }

// routeRank orders routes as docs/experiments.md lists them; others follow.
var routeRank = map[string]int{"direct": 0, "proxy-buffering-off": 1, "proxy-buffering-on": 2}

// okRunsByCondition groups the ok runs by condition and returns the
// conditions in report order: by route, then server in order of first
// appearance, then number of slow clients.
func okRunsByCondition(runs []recorder.Run) ([]condKey, map[condKey][]recorder.Run) {
	groups := map[condKey][]recorder.Run{}
	serverOrder := map[string]int{}
	var keys []condKey
	for _, r := range runs {
		if _, seen := serverOrder[r.Server]; !seen {
			serverOrder[r.Server] = len(serverOrder)
		}
		if r.Status != recorder.RunOK {
			continue
		}
		k := keyOf(r)
		if _, seen := groups[k]; !seen {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	rank := func(route string) int {
		if r, ok := routeRank[route]; ok {
			return r
		}
		return len(routeRank)
	}
	slices.SortStableFunc(keys, func(a, b condKey) int {
		if c := rank(a.route) - rank(b.route); c != 0 {
			return c
		}
		if c := strings.Compare(a.route, b.route); c != 0 {
			return c
		}
		if c := serverOrder[a.server] - serverOrder[b.server]; c != 0 {
			return c
		}
		return a.slow - b.slow
	})
	return keys, groups
}

func buildSlowClient(dir string) (*section, error) {
	d, err := loadSlowClient(dir)
	if err != nil {
		return nil, err
	}
	s := &section{id: "slow-client", title: "slow-client",
		intro: "Slow downloads of /large against fast /fast requests served by the same workers, " +
			"directly and behind a proxy with buffering off or on (docs/experiments.md section 1). " +
			"Only runs with status ok enter the figures and the conditions table, as in conditions.csv."}
	if len(d.missing) > 0 {
		s.skip("Not present in the results directory: %s; what needs them is left out.", strings.Join(d.missing, ", "))
	}
	keys, groups := okRunsByCondition(d.runs)
	if len(keys) == 0 {
		s.skip("runs.csv has no run with status ok (%d runs): no figures.", len(d.runs))
	}

	if f, why := p95Figure(keys, groups); f != nil {
		s.addFigure(f)
	} else if len(keys) > 0 {
		s.skip("/fast p95 figure left out: %s.", why)
	}
	s.addTable(conditionsTable(d))
	if d.larges != nil && len(keys) > 0 {
		if f, why := sendReceiveFigure(keys, groups, d.larges); f != nil {
			s.addFigure(f)
		} else {
			s.skip("app_send_s vs client_receive_s figure left out: %s.", why)
		}
	}
	if f, why := memoryFigure(d.runs); f != nil {
		s.addFigure(f)
	} else if len(keys) > 0 {
		s.skip("App memory against slow readers left out: %s.", why)
	}
	if len(keys) > 0 {
		for _, ts := range timeSeries(keys, groups, d) {
			if ts.fig != nil {
				s.addFigure(ts.fig)
			} else {
				s.skip("Time series of %s left out: %s.", ts.key.label(), ts.why)
			}
		}
	}
	s.addTable(runsTable(d.runs))
	return s, nil
}

// conditionsTable is conditions.csv, or the same summary computed from
// runs.csv when conditions.csv is not there.
func conditionsTable(d *slowClient) *table {
	conds := d.conditions
	t := &table{Caption: "Conditions (conditions.csv): p50 and p95 are medians over the condition's ok runs " +
		"of each run's nearest-rank percentile of its /fast latencies; p95 min and max are the extremes over " +
		"those runs; app_send_s and client_receive_s are medians over runs of each run's median download; " +
		"temp peak is the largest total of the proxy's temp files seen in any of the runs; app and proxy memory are " +
		"the most their cgroup held in any of the runs (page cache included), or their peak RSS without a cgroup."}
	if conds == nil {
		conds = recorder.SummarizeConditions(d.runs)
		t.Caption = "Conditions, computed from runs.csv because conditions.csv is not present: " +
			strings.TrimPrefix(t.Caption, "Conditions (conditions.csv): ")
	}
	t.Head = []string{"route", "server", "slow clients", "runs", "p50 (ms)", "p95 (ms)", "p95 min (ms)",
		"p95 max (ms)", "app_send (s)", "client_receive (s)", "temp peak (MiB)", "app memory (MiB)", "proxy memory (MiB)"}
	for _, c := range conds {
		t.Rows = append(t.Rows, []Cell{Text(c.Route), Text(c.Server), Int(c.SlowClients), Int(c.Runs),
			Opt(c.P50MS, Sig), Opt(c.P95MS, Sig), Opt(c.P95MinMS, Sig), Opt(c.P95MaxMS, Sig),
			Opt(c.AppSendS, seconds), Opt(c.ClientReceiveS, seconds), Opt(c.TempPeakMiB, mib),
			Opt(c.AppMemoryPeakMiB, mib), Opt(c.ProxyMemoryPeakMiB, mib)})
	}
	return t
}

// runsTable lists every run, whatever its status, folded.
func runsTable(runs []recorder.Run) *table {
	notOK := 0
	for _, r := range runs {
		if r.Status != recorder.RunOK {
			notOK++
		}
	}
	t := &table{
		Details: fmt.Sprintf("All %d runs (runs.csv), %d not ok", len(runs), notOK),
		Caption: "Every run with its status; percentiles are nearest-rank over the run's ok /fast responses; " +
			"CPU is the component's average cores over the run.",
		Head: []string{"run", "rep", "status", "reason", "/fast ok", "p50 (ms)", "p95 (ms)", "max (ms)",
			"max lag (ms)", "app_send (s)", "client_receive (s)", "temp peak (MiB)", "app CPU", "proxy CPU"},
	}
	for _, r := range runs {
		t.Rows = append(t.Rows, []Cell{Text(r.RunID), Int(r.Rep), Text(r.Status), Text(r.Reason),
			Text(fmt.Sprintf("%d/%d", r.FastOK, r.FastTotal)),
			Opt(r.P50MS, Sig), Opt(r.P95MS, Sig), Opt(r.MaxMS, Sig), Opt(r.MaxScheduleLagMS, Sig),
			Opt(r.AppSendS, seconds), Opt(r.ClientReceiveS, seconds), Opt(r.TempPeakMiB, mib),
			Opt(r.Components[0].CPUCores, cores), Opt(r.Components[1].CPUCores, cores)})
	}
	return t
}

func cores(v float64) Cell { return Fixed(v, 3) }

// countRange describes how many of something each item had: "72" when
// all had the same, else "70 to 72".
func countRange(counts []int) string {
	if len(counts) == 0 {
		return "0"
	}
	lo, hi := slices.Min(counts), slices.Max(counts)
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}
