package slowclient

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/lab/pathmodel/holds"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// runsFile is the runs' summaries, whose presence marks the results
// directory as the experiment's.
var runsFile = recorder.FileName[recorder.Run]()

// Section is the slow-client section of the report, which the
// registration carries: /fast p95 per condition, the conditions table,
// the app's send time against the clients' receive time, the app's memory
// against slow readers, a time series per route and server, and every
// run.
var Section = report.NewSection(Name, runsFile, buildSection)

// results is a results directory as the section reads it. A nil slice of
// an optional file means the file is not there.
type results struct {
	runs       []recorder.Run
	conditions []recorder.Condition
	larges     []recorder.LargeResponse
	requests   []recorder.Request
	samples    []recorder.ResourceSample
	missing    []string // optional files that are not there
}

func readResults(dir string) (*results, error) {
	d := &results{}
	var errs [5]error
	d.runs, errs[0] = recorder.ReadFile[recorder.Run](filepath.Join(dir, runsFile))
	d.conditions, errs[1] = readOptional[recorder.Condition](dir, &d.missing)
	d.larges, errs[2] = readOptional[recorder.LargeResponse](dir, &d.missing)
	d.requests, errs[3] = readOptional[recorder.Request](dir, &d.missing)
	d.samples, errs[4] = readOptional[recorder.ResourceSample](dir, &d.missing)
	if err := cmp.Or(errs[:]...); err != nil {
		return nil, err // the first file's, in this order
	}
	return d, nil
}

// readOptional reads dir's file of row type T (recorder.ReadOptional),
// adding its name to missing when it is not there.
func readOptional[T recorder.Row[T]](dir string, missing *[]string) ([]T, error) {
	rows, present, err := recorder.ReadOptional[T](dir)
	if !present {
		*missing = append(*missing, recorder.FileName[T]())
	}
	return rows, err
}

// condKey is a condition of the matrix as runs.csv names it.
type condKey struct {
	route, server string
	slow          int
}

func (k condKey) label() string {
	return fmt.Sprintf("%s, %s, %d slow", k.route, k.server, k.slow)
}

func keyOf(r recorder.Run) condKey { return condKey{r.Route, r.Server, r.SlowClients} }

// okRunsByCondition groups the ok runs by condition and returns the
// conditions in report order: by route as stack.Routes lists them (others
// after), then server in order of first appearance, then number of slow
// clients.
func okRunsByCondition(runs []recorder.Run) ([]condKey, map[condKey][]recorder.Run) {
	groups := map[condKey][]recorder.Run{}
	var keys []condKey
	for _, g := range recorder.GroupRuns(runs, keyOf) {
		if len(g.OK) > 0 {
			k := keyOf(g.OK[0])
			keys, groups[k] = append(keys, k), g.OK
		}
	}
	// A server's place is its first run's, whatever that run's status.
	first := func(server string) int {
		return slices.IndexFunc(runs, func(r recorder.Run) bool { return r.Server == server })
	}
	slices.SortFunc(keys, func(a, b condKey) int {
		return cmp.Or(CompareRoutes(a.route, b.route), cmp.Compare(first(a.server), first(b.server)), cmp.Compare(a.slow, b.slow))
	})
	return keys, groups
}

// CompareRoutes orders routes as docs/experiments.md lists them
// (stack.Routes), others after them by name.
func CompareRoutes(a, b string) int {
	rank := func(r string) int {
		if i := slices.Index(stack.Routes, stack.Route(r)); i >= 0 {
			return i
		}
		return len(stack.Routes)
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b))
}

func buildSection(dir string) (*report.Part, error) {
	d, err := readResults(dir)
	if err != nil {
		return nil, err
	}
	p := report.NewPart(Name, "Slow downloads of /large against fast /fast requests served by the same workers, "+
		"directly and behind a proxy with buffering off or on (docs/experiments.md section 1). "+
		"Only runs with status ok enter the figures and the conditions table, as in conditions.csv.")
	if len(d.missing) > 0 {
		p.Skip("Not present in the results directory: %s; what needs them is left out.", strings.Join(d.missing, ", "))
	}
	keys, groups := okRunsByCondition(d.runs)
	if len(keys) == 0 {
		p.Skip("runs.csv has no run with status ok (%s): no figures.", report.Count(len(d.runs), "run"))
	}

	if f, why := p95Figure(keys, groups); f != nil {
		p.AddDrawing(f)
	} else if len(keys) > 0 {
		p.Skip("/fast p95 figure left out: %s.", why)
	}
	// The conditions table: conditions.csv's rows, or the same summary
	// computed from runs.csv when conditions.csv is not there.
	conds, ct := d.conditions, conditionsTable
	if conds == nil {
		conds = recorder.SummarizeConditions(d.runs)
		ct.Caption = "Conditions, computed from runs.csv because conditions.csv is not present: " +
			strings.TrimPrefix(ct.Caption, "Conditions (conditions.csv): ")
	}
	report.AddTable(p, &ct, conditionRows(conds, d.runs))
	holds.Note(p, dir, Name)
	if d.larges != nil && len(keys) > 0 {
		if f, why := sendReceiveFigure(keys, groups, d.larges); f != nil {
			p.AddDrawing(f)
		} else {
			p.Skip("app_send_s vs client_receive_s figure left out: %s.", why)
		}
	}
	if f, why := memoryFigure(d.runs); f != nil {
		p.AddDrawing(f)
	} else if len(keys) > 0 {
		p.Skip("App memory against slow readers left out: %s.", why)
	}
	for _, ts := range timeSeries(keys, groups, d) {
		if ts.fig != nil {
			p.AddDrawing(ts.fig)
		} else {
			p.Skip("Time series of %s left out: %s.", ts.key.label(), ts.why)
		}
	}
	notOK := 0
	for _, r := range d.runs {
		if r.Status != recorder.RunOK {
			notOK++
		}
	}
	t := runsTable
	t.Details = fmt.Sprintf("All %d runs (runs.csv), %d not ok", len(d.runs), notOK)
	report.AddTable(p, &t, d.runs)
	return p, nil
}
