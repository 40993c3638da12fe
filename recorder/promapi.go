package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/slowlab/slowlab/internal/bounded"
	"golang.org/x/sync/errgroup"
)

// maxStepsPerQuery keeps each query_range under Prometheus's limit of
// 11,000 points per series; longer ranges are queried in pieces. A
// variable so tests can make the pieces small.
var maxStepsPerQuery = 10_000

// maxQueryBytes bounds one query_range response body: a piece of
// maxStepsPerQuery steps of a few components is a few MiB. A variable so
// tests can make it small.
var maxQueryBytes int64 = 64 << 20

// boundedBodies is a RoundTripper whose response bodies fail past
// maxQueryBytes (client_golang's client reads a body whole, unbounded).
type boundedBodies struct{ http.RoundTripper }

func (b boundedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.RoundTripper.RoundTrip(req)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{&bounded.Body{R: resp.Body, Left: maxQueryBytes, Err: fmt.Errorf("response body over %d bytes", maxQueryBytes)}, resp.Body}
	}
	return resp, err
}

// ErrNoPromSamples is the Error of rows for a step in which Prometheus
// has no sample of any component: the exporter was down or not scraped.
var ErrNoPromSamples = errors.New("prometheus has no samples in this step")

// ErrNoSelector is QueryRange's error for a Selector that selects no run:
// the components' group names are the same in every run and every
// exporter, so without it their series would all be summed.
var ErrNoSelector = errors.New("prometheus query: no selector: without label matchers that pick one run, " +
	"the series of every run and every other exporter with the same group names would be summed")

// RunLabel is the label that tells one run's series from another's in
// Prometheus: lab's file_sd targets file puts run_id=<run ID> on every
// target group of a run (exporter, target, proxy).
const RunLabel = "run_id"

// Selector is the label matchers that pick one run's series in Prometheus,
// such as {run_id="r1"} or {job="slowlab-exporter",instance="127.0.0.1:9817"}:
// a PromQL vector selector without a metric name. QueryRange adds the
// metric names and the components' group label to it. The zero Selector
// selects nothing and QueryRange refuses it; make one with RunSelector or
// ParseSelector.
type Selector struct {
	matchers []*labels.Matcher
}

// RunSelector selects the series labelled run_id=runID: the run's targets
// in lab's targets file. An empty runID gives the zero Selector.
func RunSelector(runID string) Selector {
	if runID == "" {
		return Selector{}
	}
	return Selector{[]*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, RunLabel, runID)}}
}

// promql parses selectors; the default options are what Prometheus
// accepts without feature flags.
var promql = parser.NewParser(parser.Options{})

// ParseSelector parses s, label matchers in braces as in a PromQL vector
// selector, such as {job="slowlab-exporter",instance="127.0.0.1:9817"}.
// It refuses any other PromQL, a metric name (the queries name their own
// metrics), and matchers that all match an empty label, which would select
// the series of every run like no selector at all.
func ParseSelector(s string) (Selector, error) {
	ms, err := promql.ParseMetricSelector(s)
	if err != nil {
		return Selector{}, fmt.Errorf("%w; want label matchers in braces, such as {run_id=\"r1\"}", err)
	}
	if i := slices.IndexFunc(ms, func(m *labels.Matcher) bool { return m.Name == model.MetricNameLabel }); i >= 0 {
		return Selector{}, fmt.Errorf("matches the metric name (%s); want label matchers only, such as {run_id=\"r1\"}: the queries name their own metrics", ms[i])
	}
	sel := Selector{ms}
	if !sel.picksSeries() {
		return Selector{}, errors.New("every matcher matches an empty label, so it selects the series of every run and every other exporter; " +
			"want one that needs a value, such as {run_id=\"r1\"}")
	}
	return sel, nil
}

// picksSeries reports whether s has a matcher that an absent label fails,
// the rule Prometheus itself applies to vector selectors.
func (s Selector) picksSeries() bool {
	return slices.ContainsFunc(s.matchers, func(m *labels.Matcher) bool { return !m.Matches("") })
}

// RunID returns the value of s's run_id="..." matcher, if it has one.
func (s Selector) RunID() (string, bool) {
	i := slices.IndexFunc(s.matchers, func(m *labels.Matcher) bool { return m.Name == RunLabel && m.Type == labels.MatchEqual })
	if i < 0 {
		return "", false
	}
	return s.matchers[i].Value, true
}

// String returns s in PromQL, in braces.
func (s Selector) String() string {
	return "{" + s.matchersString() + "}"
}

func (s Selector) matchersString() string {
	parts := make([]string, len(s.matchers))
	for i, m := range s.matchers {
		parts[i] = m.String()
	}
	return strings.Join(parts, ",")
}

// QueryRange reads resource-samples.csv rows for the Components from the
// Prometheus HTTP API at promURL, for the steps start, start+step, ...
// up to end. TS is the step's time relative to start, and every row's
// RunID is runID.
//
// Only the series sel selects are read: those of the exporter metrics
// whose group label is one of the Components and whose labels also match
// sel, normally RunSelector(runID), the run's own targets. The zero
// Selector, or one whose matchers all match an empty label, is refused
// (ErrNoSelector says why).
//
// Each cell is the last sample Prometheus scraped in the step ending at TS
// (last_over_time over one step), summed over the component's selected
// series like SamplesFromFamilies does, so the value was measured up to one
// step before TS. A step without a fresh sample leaves the cell None
// instead of repeating an older value, which plain query_range would do for
// five minutes; with step shorter than Prometheus's scrape interval some
// steps are therefore empty. Steps in which no component has any sample
// yield rows with every value None and Error ErrNoPromSamples. Long ranges
// are read in pieces of under 11,000 steps, Prometheus's limit per query.
func QueryRange(ctx context.Context, promURL string, sel Selector, runID string, start, end time.Time, step time.Duration) ([]ResourceSample, error) {
	if !sel.picksSeries() {
		return nil, ErrNoSelector
	}
	if step < time.Millisecond {
		return nil, fmt.Errorf("prometheus query: step %v: want 1ms or more", step)
	}
	if end.Before(start) {
		return nil, fmt.Errorf("prometheus query: end %s is before start %s", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	client, err := api.NewClient(api.Config{Address: promURL, RoundTripper: boundedBodies{api.DefaultRoundTripper}})
	if err != nil {
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	prom := v1.NewAPI(client)
	components := Components[:]
	n := int(end.Sub(start)/step) + 1
	grid := make([][]ResourceSample, n)
	for k := range grid {
		grid[k] = SamplesFromFamilies(runID, (time.Duration(k) * step).Seconds(), components)
	}
	seen := make([]bool, n)
	for first := 0; first < n; first += maxStepsPerQuery {
		last := min(n-1, first+maxStepsPerQuery-1)
		r := v1.Range{Start: start.Add(time.Duration(first) * step), End: start.Add(time.Duration(last) * step), Step: step}
		results, err := queryColumns(ctx, prom, r, sel, components)
		if err != nil {
			return nil, err
		}
		for i, m := range results {
			for _, ss := range m {
				c := slices.Index(components, string(ss.Metric[groupLabel]))
				if c < 0 {
					continue
				}
				for _, p := range ss.Values {
					k := int(math.Round(float64(p.Timestamp.Time().Sub(start)) / float64(step)))
					if k < first || k > last {
						continue
					}
					seen[k] = true
					*resourceColumns[i].cell(&grid[k][c]) = Some(float64(p.Value))
				}
			}
		}
	}
	rows := make([]ResourceSample, 0, n*len(components))
	for k, g := range grid {
		if !seen[k] {
			g = errorRows(runID, g[0].TS, components, ErrNoPromSamples.Error())
		}
		rows = append(rows, g...)
	}
	return rows, nil
}

// queryColumns runs one query_range per resource column, concurrently,
// and returns the matrices in resourceColumns order.
func queryColumns(ctx context.Context, prom v1.API, r v1.Range, sel Selector, components []string) ([]model.Matrix, error) {
	quoted := make([]string, len(components))
	for i, c := range components {
		quoted[i] = regexp.QuoteMeta(c)
	}
	groups := strings.Join(quoted, "|")
	results := make([]model.Matrix, len(resourceColumns))
	g, gctx := errgroup.WithContext(ctx)
	for i, col := range resourceColumns {
		g.Go(func() error {
			q := columnQuery(col, groups, sel, r.Step)
			v, _, _, err := prom.QueryRange(gctx, q, r)
			if err != nil {
				return fmt.Errorf("prometheus query_range for %s (%s): %w", col.name, q, err)
			}
			m, ok := v.(model.Matrix)
			if !ok {
				return fmt.Errorf("prometheus query_range for %s: got a %s, want a matrix", col.name, v.Type())
			}
			results[i] = m
			return nil
		})
	}
	return results, g.Wait()
}

// columnQuery is the PromQL for one column: per group, the last sample
// within the step of the first of the column's metrics that the group
// has ("or" keeps the left side's groups), over the series sel selects
// that have the column's label values (col.only, as SamplesFromFamilies
// counts them).
func columnQuery(col resourceColumn, groupRegex string, sel Selector, step time.Duration) string {
	matchers := fmt.Sprintf("%s=~%q,%s", groupLabel, groupRegex, sel.matchersString())
	for _, name := range slices.Sorted(maps.Keys(col.only)) {
		matchers += fmt.Sprintf(",%s=%q", name, col.only[name])
	}
	parts := make([]string, len(col.metrics))
	for i, m := range col.metrics {
		parts[i] = fmt.Sprintf("sum by (%s) (last_over_time(%s{%s}[%s]))",
			groupLabel, m, matchers, model.Duration(step))
	}
	return strings.Join(parts, " or ")
}
