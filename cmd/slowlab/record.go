package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/slowlab/slowlab/internal/cliflag"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

func init() {
	register(command{
		name:    "record",
		summary: "sample per-component resources from /metrics or the Prometheus API into resource-samples.csv",
		run:     runRecord,
	})
}

// recordFlags are the command line of `slowlab record`.
type recordFlags struct {
	scrape      []string
	prometheus  string
	interval    time.Duration
	timeout     time.Duration
	duration    time.Duration
	start, end  string
	step        time.Duration
	out         string
	runID       string
	selector    string
	allowRemote bool
}

// Flags that belong to one mode only.
var (
	scrapeOnlyFlags = []string{"interval", "timeout", "duration"}
	promOnlyFlags   = []string{"selector", "start", "end", "step"}
)

func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("record",
		"--scrape URL [--scrape URL]... [--interval 200ms] [--duration D] --out DIR [--run-id ID]\n"+
			"       slowlab record --prometheus URL (--run-id ID | --selector '{LABEL=\"VALUE\",...}' [--run-id ID]) --start TIME --end TIME [--step 200ms] --out DIR\n\n"+
			"With --prometheus, only the run's own series are read: --run-id ID selects {run_id=\"ID\"}, the label the lab's\n"+
			"Prometheus targets file (--prometheus-targets) puts on each run's targets. --selector replaces that matcher, for\n"+
			"a Prometheus that labels runs differently; --run-id then only names the rows' run_id, and defaults to the\n"+
			"selector's run_id=\"...\" value. One of them is required: without it every run's and every other exporter's\n"+
			"series with the same group names would be summed.\n\n"+
			"Each sample is a row per component, the exporter's groups named app, proxy and loadgen (the lab's names);\n"+
			"other groups are not recorded: name yours so, or record says that no sample had them.", stdout)
	var f recordFlags
	fs.Var(cliflag.Strings(&f.scrape), "scrape", "`URL` of a /metrics endpoint to sample, repeatable (the exporter's, e.g. http://127.0.0.1:9817/metrics, first)")
	fs.StringVar(&f.prometheus, "prometheus", "", "`URL` of a Prometheus server to read the run back from with query_range, e.g. http://127.0.0.1:9090")
	fs.DurationVar(&f.interval, "interval", recorder.DefaultInterval, "scrape mode: time between samples, anchored to the start (no drift)")
	fs.DurationVar(&f.timeout, "timeout", 0, "scrape mode: a scrape slower than this is an error row (default: --interval)")
	fs.DurationVar(&f.duration, "duration", 0, "scrape mode: stop after this long (default: until interrupted)")
	fs.StringVar(&f.start, "start", "", "Prometheus mode: start of the run, RFC 3339 (e.g. 2026-01-02T15:04:05Z)")
	fs.StringVar(&f.end, "end", "", "Prometheus mode: end of the run, RFC 3339")
	fs.DurationVar(&f.step, "step", recorder.DefaultInterval, "Prometheus mode: time between rows")
	fs.StringVar(&f.out, "out", "", "`dir`ectory to write resource-samples.csv to (required; an existing file is not overwritten)")
	fs.StringVar(&f.runID, "run-id", "", "`ID` in the run_id column; with --prometheus and no --selector it also selects the run's series, {run_id=\"ID\"} (default in scrape mode: record-<UTC timestamp>)")
	fs.StringVar(&f.selector, "selector", "", "Prometheus mode: label matchers `{LABEL=\"VALUE\",...}` that select the run's series instead of {run_id=\"ID\"}, "+
		"e.g. '{job=\"slowlab-exporter\",instance=\"127.0.0.1:9817\"}' (PromQL, no metric name); --run-id then only names the rows")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow URLs that are not loopback addresses")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })

	switch {
	case len(f.scrape) == 0 && f.prometheus == "":
		return usagef("--scrape or --prometheus is required, e.g. --scrape http://127.0.0.1:9817/metrics")
	case len(f.scrape) > 0 && f.prometheus != "":
		return usagef("--scrape and --prometheus: give one, not both")
	}
	if f.out == "" {
		return usagef("--out is required: the directory to write resource-samples.csv to")
	}
	if f.prometheus != "" {
		q, err := f.promQuery(set)
		if err != nil {
			return err
		}
		if err := parsedOnly(ctx); err != nil {
			return err
		}
		return recordFromPrometheus(ctx, q, f.out, stdout)
	}
	s, err := f.sampler(set)
	if err != nil {
		return err
	}
	if err := parsedOnly(ctx); err != nil {
		return err
	}
	return recordScrapes(ctx, s, f.duration, f.out, stdout, stderr)
}

// sampler validates the scrape-mode flags.
func (f recordFlags) sampler(set map[string]bool) (*recorder.Sampler, error) {
	if err := onlyWith(set, promOnlyFlags, "--prometheus"); err != nil {
		return nil, err
	}
	for _, raw := range f.scrape {
		if _, err := loadgen.CheckTarget(raw, f.allowRemote); err != nil {
			return nil, usagef("--scrape %s", strings.TrimPrefix(err.Error(), "target "))
		}
	}
	if f.interval <= 0 {
		return nil, usagef("--interval %v: want a positive duration, such as 200ms", f.interval)
	}
	if f.timeout < 0 {
		return nil, usagef("--timeout %v: want a positive duration, or 0 for --interval", f.timeout)
	}
	if f.duration < 0 {
		return nil, usagef("--duration %v: want a positive duration, or 0 to record until interrupted", f.duration)
	}
	runID := f.runID
	if runID == "" {
		runID = "record-" + time.Now().UTC().Format("20060102T150405Z")
	}
	return &recorder.Sampler{URLs: f.scrape, Interval: f.interval, Timeout: f.timeout, RunID: runID}, nil
}

// promQuery is a validated Prometheus-mode command line.
type promQuery struct {
	url, runID string
	sel        recorder.Selector
	start, end time.Time
	step       time.Duration
}

// promQuery validates the Prometheus-mode flags.
func (f recordFlags) promQuery(set map[string]bool) (promQuery, error) {
	q := promQuery{url: f.prometheus, runID: f.runID, step: f.step}
	if err := onlyWith(set, scrapeOnlyFlags, "--scrape"); err != nil {
		return q, err
	}
	if _, err := loadgen.CheckTarget(f.prometheus, f.allowRemote); err != nil {
		return q, usagef("--prometheus %s", strings.TrimPrefix(err.Error(), "target "))
	}
	var err error
	if q.sel, q.runID, err = f.promSelector(); err != nil {
		return q, err
	}
	if q.start, err = rfc3339Flag("start", f.start); err != nil {
		return q, err
	}
	if q.end, err = rfc3339Flag("end", f.end); err != nil {
		return q, err
	}
	if !q.end.After(q.start) {
		return q, usagef("--end %s: must be after --start %s", f.end, f.start)
	}
	if f.step < time.Millisecond {
		return q, usagef("--step %v: want 1ms or more, such as 200ms", f.step)
	}
	return q, nil
}

// promSelector returns the series to read and the rows' run_id: the run
// --run-id names, or --selector's series labelled with --run-id, or with
// the selector's own run_id.
func (f recordFlags) promSelector() (recorder.Selector, string, error) {
	if f.selector == "" {
		if f.runID == "" {
			return recorder.Selector{}, "", usagef("--run-id or --selector is required with --prometheus: without one, " +
				"the series of every run and every other exporter with the same group names would be summed")
		}
		return recorder.RunSelector(f.runID), f.runID, nil
	}
	sel, err := recorder.ParseSelector(f.selector)
	if err != nil {
		return sel, "", usagef("--selector '%s': %v", f.selector, err)
	}
	id, ok := sel.RunID()
	switch {
	case f.runID == "" && !ok:
		return sel, "", usagef("--selector '%s' has no %s=\"...\" matcher: give --run-id for the rows' run_id", f.selector, recorder.RunLabel)
	case f.runID == "":
		return sel, id, nil
	case ok && id != f.runID:
		return sel, "", usagef("--run-id %s and --selector '%s' name different runs: the rows would be labelled with a run they do not come from", f.runID, f.selector)
	}
	return sel, f.runID, nil
}

// onlyWith rejects any of names that was set, as belonging to mode.
func onlyWith(set map[string]bool, names []string, mode string) error {
	for _, n := range names {
		if set[n] {
			return usagef("--%s: only allowed with %s", n, mode)
		}
	}
	return nil
}

func rfc3339Flag(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, usagef("--%s is required with --prometheus, as RFC 3339 such as 2026-01-02T15:04:05Z", name)
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, usagef("--%s %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", name, v)
	}
	return t, nil
}

// maxErrorsSaid bounds how many distinct scrape errors recordScrapes says
// on stderr; every row keeps its own.
const maxErrorsSaid = 10

// recordScrapes samples until duration has passed (if set) or ctx is done
// (SIGINT), writing every row as it is measured; each distinct scrape
// error is said on stderr the first time it is seen. A recording in which
// not one scrape succeeded measured nothing: its rows are written, and it
// returns an error saying so (exit 1).
func recordScrapes(ctx context.Context, s *recorder.Sampler, duration time.Duration, out string, stdout, stderr io.Writer) error {
	w, err := recorder.CreateFile[recorder.ResourceSample](out)
	if err != nil {
		return err
	}
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	var rows, errRows, scrapes, scrapesOK int
	anyValue := false
	said := map[string]bool{}
	s.OnScrape = func(sc recorder.Scrape) {
		scrapes++
		if sc.Err == nil {
			scrapesOK++
		}
	}
	s.OnSample = func(r recorder.ResourceSample) error {
		rows++
		anyValue = anyValue || measured(r)
		if r.Error != "" {
			errRows++
			if !said[r.Error] && len(said) < maxErrorsSaid {
				said[r.Error] = true
				fmt.Fprintf(stderr, "%s (recording goes on; each row says its error)\n", r.Error)
			}
		}
		return w.Write(r)
	}
	until := "interrupted"
	if duration > 0 {
		until = duration.String() + " or interrupted"
	}
	fmt.Fprintf(stdout, "recording %s every %v into %s until %s\n", strings.Join(s.URLs, ", "), s.Interval, w.Name(), until)
	jitter, runErr := s.Run(ctx)
	if err := w.Close(); runErr == nil {
		runErr = err
	}
	fmt.Fprintf(stdout, "wrote %d rows (%d with errors) to %s\n", rows, errRows, w.Name())
	fmt.Fprintf(stdout, "sampling jitter: %v\n", jitter)
	if !anyValue && errRows < rows {
		fmt.Fprintln(stderr, "slowlab record: "+noComponentNote)
	}
	if runErr == nil && scrapesOK == 0 {
		return noScrapeSucceeded(scrapes, rows, w.Name())
	}
	return runErr
}

// noScrapeSucceeded is the error of a recording that measured nothing:
// every scrape it made failed, or it made none.
func noScrapeSucceeded(scrapes, rows int, file string) error {
	if scrapes == 0 {
		return fmt.Errorf("no scrape succeeded: none finished before the recording ended; %s has %d rows", file, rows)
	}
	return fmt.Errorf("no scrape succeeded: all %d failed; the %d rows in %s each say why", scrapes, rows, file)
}

// noComponentNote says why every row is empty though the scrapes worked:
// the rows are the components, the exporter groups of the lab's names.
var noComponentNote = fmt.Sprintf("no sample had a series of group %s: the rows are empty; resource-samples.csv "+
	"has a row for each exporter group of these names (the lab's), so name the groups you record so", quotedComponents())

func quotedComponents() string {
	q := make([]string, len(recorder.Components))
	for i, c := range recorder.Components {
		q[i] = strconv.Quote(c)
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// measured reports whether any of r's values was measured.
func measured(r recorder.ResourceSample) bool {
	v := reflect.ValueOf(r)
	for i := range v.NumField() {
		if m, ok := v.Field(i).Interface().(recorder.Maybe); ok && m.Valid {
			return true
		}
	}
	return false
}

// recordFromPrometheus reads the run back from Prometheus and writes it.
func recordFromPrometheus(ctx context.Context, q promQuery, out string, stdout io.Writer) error {
	rows, err := recorder.QueryRange(ctx, q.url, q.sel, q.runID, q.start, q.end, q.step)
	if err != nil {
		return err
	}
	w, err := recorder.CreateFile[recorder.ResourceSample](out)
	if err != nil {
		return err
	}
	empty := 0
	for _, r := range rows {
		if r.Error != "" {
			empty++
		}
		if err := w.Write(r); err != nil {
			w.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d rows (%d without samples) of %s from %s to %s\n", len(rows), empty, q.sel, q.url, w.Name())
	if empty == len(rows) {
		fmt.Fprintf(stdout, "no step has samples of %s: check the selector (the lab's targets file labels each run's targets run_id=<run>), "+
			"and that the exporter's groups are named so (only series of group %s are read)\n", q.sel, quotedComponents())
	}
	return nil
}
