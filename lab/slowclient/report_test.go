package slowclient

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
	"github.com/slowlab/slowlab/report/reporttest"
)

// writeReport writes dir's report with the section alone, checks that it
// drew and that reporttest.Check holds its files and page, and returns it.
func writeReport(t testing.TB, dir string) *report.Report {
	t.Helper()
	rep, err := report.Write(dir, []report.Section{Section})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Experiments, []string{Name}) {
		t.Errorf("experiments %v, want %s", rep.Experiments, Name)
	}
	if err := reporttest.Check(rep); err != nil {
		t.Error(err)
	}
	return rep
}

// svgStats is what each SVG figure of rep holds.
func svgStats(t *testing.T, rep *report.Report) map[string]reporttest.SVGCount {
	t.Helper()
	stats := map[string]reporttest.SVGCount{}
	for _, f := range rep.Figures {
		if len(f.Files) != 2 {
			t.Fatalf("%s: files %v, want a PNG and an SVG", f.Name, f.Files)
		}
		data, err := os.ReadFile(filepath.Join(rep.Dir, filepath.FromSlash(f.Files[1])))
		if err != nil {
			t.Fatal(err)
		}
		stats[f.Name] = reporttest.ParseSVG(t, data)
	}
	return stats
}

func figureNames(rep *report.Report) []string {
	var names []string
	for _, f := range rep.Figures {
		names = append(names, f.Name)
	}
	return names
}

// expectedDownloads counts the fixture's downloads of ok runs: all of
// them, and those with an app_send_s.
func expectedDownloads(fx fixture) (all, withApp int) {
	for _, c := range fixtureConditions() {
		for rep := 1; rep <= fx.reps; rep++ {
			if fx.failed[runID(c, rep)] {
				continue
			}
			all += c.slow
			withApp += c.slow
			if rep == 1 && c.slow >= 2 {
				withApp-- // client 1 of rep 1 has no app_send_s
			}
		}
	}
	return all, withApp
}

// TestReport reports a synthetic results directory of the published
// matrix (fixture) with a failed run: every figure, with its points,
// circles, bars and caption.
func TestReport(t *testing.T) {
	dir := t.TempDir()
	fx := fixture{reps: 3, failed: map[string]bool{"direct-sync-2-s2-r3": true}}
	runs := fx.write(t, dir)
	rep := writeReport(t, dir)
	if rep.HTML != filepath.Join(dir, "report.html") {
		t.Errorf("report %s", rep.HTML)
	}
	wantNames := []string{"fast-p95", "send-vs-receive", "app-memory", "timeseries-direct-sync-2-s2", "timeseries-direct-gthread-1x4-s2",
		"timeseries-proxy-buffering-off-sync-2-s2", "timeseries-proxy-buffering-on-sync-2-s2"}
	if got := figureNames(rep); !slices.Equal(got, wantNames) {
		t.Fatalf("figures %v, want %v", got, wantNames)
	}
	if len(rep.Notes) != 0 {
		t.Errorf("notes %q, want none", rep.Notes)
	}
	stats := svgStats(t, rep)

	// fast-p95: one series per route and server; one circle per condition.
	p95 := labtest.Figure(t, rep, "fast-p95")
	if p95.Series != 4 || !slices.Equal(p95.Points, []int{3, 1, 3, 3}) {
		t.Errorf("fast-p95: %d series with %v points, want 4 with [3 1 3 3]", p95.Series, p95.Points)
	}
	if got := stats["fast-p95"].Arcs; got != 10 {
		t.Errorf("fast-p95.svg has %d circles, want 10 (one per condition)", got)
	}
	if !strings.Contains(p95.Caption, "nearest-rank 95th percentile of a run's 71 to 72 /fast latencies") || // one run has a failed request
		!strings.Contains(p95.Caption, "line = min to max") || !strings.Contains(p95.Caption, "2 to 3 per condition") {
		t.Errorf("fast-p95 caption: %s", p95.Caption)
	}

	// send-vs-receive: 7 conditions with downloads, 2 bars each, a point
	// per download of the ok runs.
	sr := labtest.Figure(t, rep, "send-vs-receive")
	all, withApp := expectedDownloads(fx)
	if want := []int{7, 7, withApp, all}; !slices.Equal(sr.Points, want) {
		t.Errorf("send-vs-receive points %v, want %v", sr.Points, want)
	}
	st := stats["send-vs-receive"]
	if want := withApp + all + 2; st.Arcs != want { // + the two legend glyphs
		t.Errorf("send-vs-receive.svg has %d circles, want %d", st.Arcs, want)
	}
	barFill := func(i int) string {
		return reporttest.HexColor(report.NewBars(nil, nil, 0, true, report.ColorAt(i)).Fill)
	}
	for i, fill := range []string{barFill(1), barFill(0)} {
		if got := st.Fills[fill]; got != 7+1 { // + the legend thumbnail
			t.Errorf("send-vs-receive.svg bar series %d: %d paths filled %s, want 8", i, got, fill)
		}
	}
	if !strings.Contains(sr.Caption, fmt.Sprintf("%d downloads have no app_send_s", all-withApp)) {
		t.Errorf("send-vs-receive caption: %s", sr.Caption)
	}

	// app-memory: a series per route and server with two reader counts
	// (gthread 1x4 has one); a circle per ok run with slow readers, the
	// failed run left out and counted.
	mem := labtest.Figure(t, rep, "app-memory")
	if mem.Series != 3 || !slices.Equal(mem.Points, []int{5, 6, 6}) {
		t.Errorf("app-memory: %d series with %v points, want 3 with [5 6 6]", mem.Series, mem.Points)
	}
	if got := stats["app-memory"].Arcs; got != 17+3 { // + the legend glyphs
		t.Errorf("app-memory.svg has %d circles, want 20", got)
	}
	for _, want := range []string{"1 runs failed or aborted for other reasons are left out",
		"1 route and server combinations with fewer than two slow-reader counts"} {
		if !strings.Contains(mem.Caption, want) {
			t.Errorf("app-memory caption lacks %q: %s", want, mem.Caption)
		}
	}

	// Time series: the median-p95 ok run; no proxy on the direct route.
	direct := labtest.Figure(t, rep, "timeseries-direct-sync-2-s2")
	var ok []recorder.Run
	for _, r := range runs {
		if r.Route == "direct" && r.Server == "sync-2" && r.SlowClients == 2 && r.Status == recorder.RunOK {
			ok = append(ok, r)
		}
	}
	slices.SortFunc(ok, func(a, b recorder.Run) int { return cmp.Compare(a.P95MS.Value, b.P95MS.Value) })
	if want := ok[0].RunID; !strings.Contains(direct.Title, want) { // lower middle of two
		t.Errorf("direct time series %q, want run %s", direct.Title, want)
	}
	if direct.Panels != 3 || !slices.Equal(direct.Points, []int{71, 49, 49, 48, 48}) {
		t.Errorf("direct time series: %d panels, points %v", direct.Panels, direct.Points)
	}
	if !strings.Contains(direct.Caption, "Left out for lack of data: proxy temp files") ||
		!strings.Contains(direct.Caption, "the direct route has no proxy") ||
		!strings.Contains(direct.Caption, "1 failed requests") {
		t.Errorf("direct time series caption: %s", direct.Caption)
	}
	if got := stats[direct.Name].Arcs; got != 71 {
		t.Errorf("%s.svg has %d circles, want 71 /fast latencies", direct.Name, got)
	}
	on := labtest.Figure(t, rep, "timeseries-proxy-buffering-on-sync-2-s2")
	if on.Panels != 4 || on.Series != 7 || strings.Contains(on.Caption, "Left out") {
		t.Errorf("buffering-on time series: %d panels, %d series, caption %s", on.Panels, on.Series, on.Caption)
	}

	// Writing again replaces the report.
	if _, err := report.Write(dir, []report.Section{Section}); err != nil {
		t.Fatalf("second Write: %v", err)
	}
}

// TestFigureLabels checks that every panel of every figure has a title and
// axis labels, and that value axes name their unit.
func TestFigureLabels(t *testing.T) {
	d, err := readResults(writeFixture(t, fixture{reps: 2}))
	if err != nil {
		t.Fatal(err)
	}
	keys, groups := okRunsByCondition(d.runs)
	var figs []*report.Drawing
	add := func(f *report.Drawing, why string) {
		if f == nil {
			t.Fatalf("a figure left out: %s", why)
		}
		figs = append(figs, f)
	}
	add(p95Figure(keys, groups))
	add(sendReceiveFigure(keys, groups, d.larges))
	add(memoryFigure(d.runs))
	for _, ts := range timeSeries(keys, groups, d) {
		add(ts.fig, ts.why)
	}
	if len(figs) != 7 {
		t.Fatalf("%d figures, want 7", len(figs))
	}
	units := []string{"(ms", "(s)", "MiB", "cores"}
	for _, f := range figs {
		for i, p := range f.Panels() {
			axes := p.X.Label.Text + " " + p.Y.Label.Text
			hasUnit := slices.ContainsFunc(units, func(u string) bool { return strings.Contains(axes, u) })
			if p.Title.Text == "" || p.X.Label.Text == "" || p.Y.Label.Text == "" || !hasUnit {
				t.Errorf("%s panel %d: title %q, axes %q: want a title, both axis labels and a unit", f.Title(), i, p.Title.Text, axes)
			}
		}
	}
}

// writeFixture writes fx into a new directory and returns it.
func writeFixture(t *testing.T, fx fixture) string {
	t.Helper()
	dir := t.TempDir()
	fx.write(t, dir)
	return dir
}

// Without its optional files the section draws what runs.csv alone
// gives, computes the conditions table, and says what it left out.
func TestReportMissingOptionalFiles(t *testing.T) {
	dir := writeFixture(t, fixture{reps: 2, skip: map[string]bool{"large-responses.csv": true, "resource-samples.csv": true,
		"conditions.csv": true, "environment.json": true}})
	rep := writeReport(t, dir)
	if got := figureNames(rep); slices.Contains(got, "send-vs-receive") || len(got) != 6 {
		t.Errorf("figures %v: want fast-p95, app-memory (from runs.csv) and 4 time series", got)
	}
	notes := strings.Join(rep.Notes, "\n")
	for _, want := range []string{"environment.json is not present",
		"Not present in the results directory: conditions.csv, large-responses.csv, resource-samples.csv"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
	for _, f := range rep.Figures {
		if strings.HasPrefix(f.Name, "timeseries-") && (f.Panels != 1 || !strings.Contains(f.Caption, "resource-samples.csv is not present")) {
			t.Errorf("%s: %d panels, caption %s", f.Name, f.Panels, f.Caption)
		}
	}
	page, _ := os.ReadFile(rep.HTML)
	if !bytes.Contains(page, []byte("computed from runs.csv because conditions.csv is not present")) {
		t.Error("report.html does not say the conditions table was computed")
	}
}

// An OOM-killed run is drawn, as a cross at the limit it hit, though it
// failed; the app's memory growing with slow readers is what it shows.
func TestMemoryFigureMarksOOMKills(t *testing.T) {
	dir := t.TempDir()
	runs := fixture{reps: 2, oom: map[string]bool{"direct-sync-2-s2-r2": true}}.write(t, dir)
	series := collectMemory(runs)
	f := labtest.Figure(t, writeReport(t, dir), "app-memory")
	if series[0].name != "direct, sync-2" || f.Points[0] != 4 || len(series[0].oom) != 1 {
		t.Errorf("first series %q with %v points (%d OOM-killed), want direct, sync-2 with 4 (3 ok, 1 OOM-killed)",
			series[0].name, f.Points, len(series[0].oom))
	}
	if !strings.Contains(f.Caption, "1 runs OOM-killed.") || strings.Contains(f.Caption, "other reasons") {
		t.Errorf("caption: %s", f.Caption)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "figures", "app-memory.svg"))
	if err != nil || !bytes.Contains(svg, []byte("direct, sync-2, OOM-killed")) {
		t.Errorf("app-memory.svg lacks the legend entry for OOM-killed runs (%v)", err)
	}
	// The app's peak grows with readers on the direct route: the median
	// line rises from 1 to 2 slow readers.
	if got := medianLine(series[0].ok); len(got) != 2 || got[1].Y <= got[0].Y+8 {
		t.Errorf("direct sync-2 median line %v: want a rise of about 16 MiB from 1 to 2 readers", got)
	}
}

func TestReportWithoutResourceValues(t *testing.T) {
	rep := writeReport(t, writeFixture(t, fixture{reps: 1, noResources: true}))
	ts := labtest.Figure(t, rep, "timeseries-proxy-buffering-on-sync-2-s2")
	for _, want := range []string{"proxy temp files (no temp_logical_bytes samples for component proxy)",
		"app memory (no memory_bytes or rss_bytes samples for component app)", "CPU (fewer than two cpu_seconds"} {
		if ts.Panels != 1 || !strings.Contains(ts.Caption, want) {
			t.Errorf("%d panels; caption lacks %q: %s", ts.Panels, want, ts.Caption)
		}
	}
}

// A results file that does not parse is an error of one line naming it,
// and no report is written.
func TestReportErrors(t *testing.T) {
	for _, tc := range []struct {
		file, old, new string
		want           []string
		target         error
	}{
		{"runs.csv", "p95_ms", "p96_ms", []string{"runs.csv", `header column 14: want "p95_ms", got "p96_ms"`}, recorder.ErrHeader},
		{"requests.csv", ",200,12,", ",ok,12,", []string{"requests.csv", "line 2, column 13 (status)"}, recorder.ErrNotInteger},
	} {
		dir := writeFixture(t, fixture{reps: 1})
		path := filepath.Join(dir, tc.file)
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(b, []byte(tc.old)) {
			t.Fatalf("%s has no %q (%v)", tc.file, tc.old, err)
		}
		if err := os.WriteFile(path, bytes.Replace(b, []byte(tc.old), []byte(tc.new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := report.Write(dir, []report.Section{Section})
		if err == nil {
			t.Fatalf("%s: Write = %+v, want an error", tc.file, rep)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) || strings.Contains(err.Error(), "\n") || !errors.Is(err, tc.target) {
				t.Errorf("%s: error %q: want one line with %q, wrapping %v", tc.file, err, w, tc.target)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "report.html")); err == nil {
			t.Errorf("%s: report.html written despite the error", tc.file)
		}
	}
}

func TestMedianRun(t *testing.T) {
	run := func(rep int, p95 recorder.Maybe) recorder.Run { return recorder.Run{Rep: rep, P95MS: p95} }
	s, n := recorder.Some, recorder.None()
	tests := []struct {
		runs    []recorder.Run
		wantRep int
		wantN   int
	}{
		{[]recorder.Run{run(1, s(30)), run(2, s(10)), run(3, s(20))}, 3, 3},
		{[]recorder.Run{run(1, s(30)), run(2, s(10))}, 2, 2}, // lower middle
		{[]recorder.Run{run(1, s(5)), run(2, n), run(3, s(5)), run(4, s(9))}, 3, 3},
		{[]recorder.Run{run(1, s(5)), run(2, s(5))}, 1, 2}, // tie: first repetition
	}
	for i, tt := range tests {
		got, n, ok := medianRun(tt.runs)
		if !ok || got.Rep != tt.wantRep || n != tt.wantN {
			t.Errorf("case %d: rep %d of %d (%v), want rep %d of %d", i, got.Rep, n, ok, tt.wantRep, tt.wantN)
		}
	}
	if _, _, ok := medianRun([]recorder.Run{run(1, n)}); ok {
		t.Error("a run without p95 was chosen")
	}
}
