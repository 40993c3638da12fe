package recorder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"
)

// maxStepsPerQuery keeps each query_range under Prometheus's limit of
// 11,000 points per series; longer ranges are queried in pieces. A
// variable so tests can make the pieces small.
var maxStepsPerQuery = 10_000

// ErrNoPromSamples is the Error of rows for a step in which Prometheus
// has no sample of any component: the exporter was down or not scraped.
var ErrNoPromSamples = errors.New("prometheus has no samples in this step")

// QueryRange reads resource-samples.csv rows for the Components from the
// Prometheus HTTP API at promURL, for the steps start, start+step, ...
// up to end. TS is the step's time relative to start.
//
// Each cell is the last sample Prometheus scraped in the step ending at TS
// (last_over_time over one step), summed over the component's series like
// SamplesFromFamilies does, so the value was measured up to one step
// before TS. A step without a fresh sample leaves the cell None instead of
// repeating an older value, which plain query_range would do for five
// minutes; with step shorter than Prometheus's scrape interval some steps
// are therefore empty. Steps in which no component has any sample yield
// rows with every value None and Error ErrNoPromSamples.
func QueryRange(ctx context.Context, promURL, runID string, start, end time.Time, step time.Duration) ([]ResourceSample, error) {
	if step < time.Millisecond {
		return nil, fmt.Errorf("prometheus query: step %v: want 1ms or more", step)
	}
	if end.Before(start) {
		return nil, fmt.Errorf("prometheus query: end %s is before start %s", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	client, err := api.NewClient(api.Config{Address: promURL})
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
		results, err := queryColumns(ctx, prom, r, components)
		if err != nil {
			return nil, err
		}
		for i, m := range results {
			for _, ss := range m {
				c := indexOf(components, string(ss.Metric[groupLabel]))
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
func queryColumns(ctx context.Context, prom v1.API, r v1.Range, components []string) ([]model.Matrix, error) {
	quoted := make([]string, len(components))
	for i, c := range components {
		quoted[i] = regexp.QuoteMeta(c)
	}
	groups := strings.Join(quoted, "|")
	results := make([]model.Matrix, len(resourceColumns))
	g, gctx := errgroup.WithContext(ctx)
	for i, col := range resourceColumns {
		g.Go(func() error {
			q := columnQuery(col, groups, r.Step)
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
// has ("or" keeps the left side's groups).
func columnQuery(col resourceColumn, groupRegex string, step time.Duration) string {
	parts := make([]string, len(col.metrics))
	for i, m := range col.metrics {
		parts[i] = fmt.Sprintf("sum by (%s) (last_over_time(%s{%s=~%q}[%s]))",
			groupLabel, m, groupLabel, groupRegex, model.Duration(step))
	}
	return strings.Join(parts, " or ")
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
