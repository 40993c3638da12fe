package report

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

func TestWriteSlowClient(t *testing.T) {
	dir := t.TempDir()
	fx := fixture{reps: 3, failed: map[string]bool{"direct-sync-2-s2-r3": true}}
	runs := fx.write(t, dir)
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	if rep.HTML != filepath.Join(dir, "report.html") || !slices.Equal(rep.Experiments, []string{"slow-client"}) {
		t.Errorf("report %s, experiments %v", rep.HTML, rep.Experiments)
	}
	wantNames := []string{"fast-p95", "send-vs-receive", "app-memory", "timeseries-direct-sync-2-s2", "timeseries-direct-gthread-1x4-s2",
		"timeseries-proxy-buffering-off-sync-2-s2", "timeseries-proxy-buffering-on-sync-2-s2"}
	if got := figureNames(rep); !slices.Equal(got, wantNames) {
		t.Fatalf("figures %v, want %v", got, wantNames)
	}
	if len(rep.Notes) != 0 {
		t.Errorf("notes %q, want none", rep.Notes)
	}
	stats := checkFiles(t, rep)
	checkHTML(t, rep)

	// fast-p95: one series per route and server; one circle per condition.
	p95 := figureByName(t, rep, "fast-p95")
	if p95.Series != 4 || !slices.Equal(p95.Points, []int{3, 1, 3, 3}) {
		t.Errorf("fast-p95: %d series with %v points, want 4 with [3 1 3 3]", p95.Series, p95.Points)
	}
	if got := stats["fast-p95"].arcs; got != 10 {
		t.Errorf("fast-p95.svg has %d circles, want 10 (one per condition)", got)
	}
	if !strings.Contains(p95.Caption, "nearest-rank 95th percentile of a run's 72 /fast latencies") ||
		!strings.Contains(p95.Caption, "line = min to max") || !strings.Contains(p95.Caption, "2 to 3 per condition") {
		t.Errorf("fast-p95 caption: %s", p95.Caption)
	}

	// send-vs-receive: 7 conditions with downloads, 2 bars each, a point
	// per download of the ok runs.
	sr := figureByName(t, rep, "send-vs-receive")
	all, withApp := expectedDownloads(fx)
	if want := []int{7, 7, withApp, all}; !slices.Equal(sr.Points, want) {
		t.Errorf("send-vs-receive points %v, want %v", sr.Points, want)
	}
	st := stats["send-vs-receive"]
	if want := withApp + all + 2; st.arcs != want { // + the two legend glyphs
		t.Errorf("send-vs-receive.svg has %d circles, want %d", st.arcs, want)
	}
	for i, fill := range []string{hexColor(lighter(ColorAt(1))), hexColor(lighter(ColorAt(0)))} {
		if got := st.fills[fill]; got != 7+1 { // + the legend thumbnail
			t.Errorf("send-vs-receive.svg bar series %d: %d paths filled %s, want 8", i, got, fill)
		}
	}
	if !strings.Contains(sr.Caption, fmt.Sprintf("%d downloads have no app_send_s", all-withApp)) {
		t.Errorf("send-vs-receive caption: %s", sr.Caption)
	}

	// app-memory: a series per route and server with two reader counts
	// (gthread 1x4 has one); a circle per ok run with slow readers, the
	// failed run left out and counted.
	mem := figureByName(t, rep, "app-memory")
	if mem.Series != 3 || !slices.Equal(mem.Points, []int{5, 6, 6}) {
		t.Errorf("app-memory: %d series with %v points, want 3 with [5 6 6]", mem.Series, mem.Points)
	}
	if got := stats["app-memory"].arcs; got != 17+3 { // + the legend glyphs
		t.Errorf("app-memory.svg has %d circles, want 20", got)
	}
	for _, want := range []string{"1 runs failed or aborted for other reasons are left out",
		"1 route and server combinations with fewer than two slow-reader counts"} {
		if !strings.Contains(mem.Caption, want) {
			t.Errorf("app-memory caption lacks %q: %s", want, mem.Caption)
		}
	}

	// Time series: the median-p95 ok run; no proxy on the direct route.
	direct := figureByName(t, rep, "timeseries-direct-sync-2-s2")
	var ok []recorder.Run
	for _, r := range runs {
		if r.Route == "direct" && r.Server == "sync-2" && r.SlowClients == 2 && r.Status == recorder.RunOK {
			ok = append(ok, r)
		}
	}
	slices.SortFunc(ok, func(a, b recorder.Run) int { return cmpFloat(a.P95MS.Value, b.P95MS.Value) })
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
	if got := stats[direct.Name].arcs; got != 71 {
		t.Errorf("%s.svg has %d circles, want 71 /fast latencies", direct.Name, got)
	}
	on := figureByName(t, rep, "timeseries-proxy-buffering-on-sync-2-s2")
	if on.Panels != 4 || on.Series != 7 || strings.Contains(on.Caption, "Left out") {
		t.Errorf("buffering-on time series: %d panels, %d series, caption %s", on.Panels, on.Series, on.Caption)
	}

	// Writing again replaces the report.
	if _, err := Write(dir, allSections); err != nil {
		t.Fatalf("second Write: %v", err)
	}
}

// TestFigureLabels checks that every panel of every figure has a title and
// axis labels, and that value axes name their unit.
func TestFigureLabels(t *testing.T) {
	dir := t.TempDir()
	fixture{reps: 2}.write(t, dir)
	var figs []*figure
	for _, build := range []func(string) (*section, error){buildSlowClient} {
		s, err := build(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range s.blocks {
			if b.figure != nil {
				figs = append(figs, b.figure)
			}
		}
	}
	if len(figs) != 7 {
		t.Fatalf("%d figures, want 7", len(figs))
	}
	units := []string{"(ms", "(s)", "MiB", "cores"}
	for _, f := range figs {
		for i, p := range f.panels {
			x, y := p.X.Label.Text, p.Y.Label.Text
			if p.Title.Text == "" || x == "" || y == "" {
				t.Errorf("%s panel %d: title %q, x %q, y %q", f.name, i, p.Title.Text, x, y)
			}
			if !slices.ContainsFunc(units, func(u string) bool { return strings.Contains(x+" "+y, u) }) {
				t.Errorf("%s panel %d: no unit in axis labels %q, %q", f.name, i, x, y)
			}
		}
	}
}

func TestWriteMissingOptionalFiles(t *testing.T) {
	dir := t.TempDir()
	fixture{reps: 2, skip: map[string]bool{"large-responses.csv": true, "resource-samples.csv": true,
		"conditions.csv": true, "environment.json": true}}.write(t, dir)
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
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
	checkFiles(t, rep)
	checkHTML(t, rep)
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
	f, why := memoryFigure(runs)
	if f == nil {
		t.Fatal(why)
	}
	if f.series[0].name != "direct, sync-2" || f.series[0].points != 4 {
		t.Errorf("series %+v, want direct, sync-2 first with 4 points (3 ok, 1 OOM-killed)", f.series)
	}
	if !strings.Contains(f.caption, "1 runs OOM-killed.") || strings.Contains(f.caption, "other reasons") {
		t.Errorf("caption: %s", f.caption)
	}
	if err := os.MkdirAll(filepath.Join(dir, "figures"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := f.write(dir); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "figures", "app-memory.svg"))
	if err != nil || !bytes.Contains(svg, []byte("direct, sync-2, OOM-killed")) {
		t.Errorf("app-memory.svg lacks the legend entry for OOM-killed runs (%v)", err)
	}
	// The app's peak grows with readers on the direct route: the median
	// line rises from 1 to 2 slow readers.
	ok := collectMemory(runs)[0].ok
	if got := medianLine(ok); len(got) != 2 || got[1].Y <= got[0].Y+8 {
		t.Errorf("direct sync-2 median line %v: want a rise of about 16 MiB from 1 to 2 readers", got)
	}
}

func TestWriteWithoutResourceValues(t *testing.T) {
	dir := t.TempDir()
	fixture{reps: 1, noResources: true}.write(t, dir)
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	ts := figureByName(t, rep, "timeseries-proxy-buffering-on-sync-2-s2")
	for _, want := range []string{"proxy temp files (no temp_logical_bytes samples for component proxy)",
		"app memory (no memory_bytes or rss_bytes samples for component app)", "CPU (fewer than two cpu_seconds"} {
		if ts.Panels != 1 || !strings.Contains(ts.Caption, want) {
			t.Errorf("%d panels; caption lacks %q: %s", ts.Panels, want, ts.Caption)
		}
	}
	checkFiles(t, rep)
}

func TestWriteErrors(t *testing.T) {
	valid := func(t *testing.T) string {
		dir := t.TempDir()
		fixture{reps: 1}.write(t, dir)
		return dir
	}
	replace := func(t *testing.T, dir, name, old, new string) {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%s has no %q", name, old)
		}
		if err := os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		setup  func(t *testing.T) string
		want   []string
		target error
	}{
		{"missing directory", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") },
			[]string{"results directory", "no such file"}, fs.ErrNotExist},
		{"file, not directory", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "f")
			os.WriteFile(p, nil, 0o644)
			return p
		}, []string{"not a directory"}, nil},
		{"no results", func(t *testing.T) string { return t.TempDir() },
			[]string{"no results files: none of " + strings.Join(allMarkers(), ", ") + " is present"}, ErrNoResults},
		{"runs.csv header", func(t *testing.T) string {
			dir := valid(t)
			replace(t, dir, "runs.csv", "p95_ms", "p96_ms")
			return dir
		}, []string{"runs.csv", `header column 14: want "p95_ms", got "p96_ms"`}, recorder.ErrHeader},
		{"requests.csv cell", func(t *testing.T) string {
			dir := valid(t)
			replace(t, dir, "requests.csv", ",200,12,", ",ok,12,")
			return dir
		}, []string{"requests.csv", "line 2, column 13 (status)"}, recorder.ErrNotInteger},
		{"environment.json", func(t *testing.T) string {
			dir := valid(t)
			os.WriteFile(filepath.Join(dir, "environment.json"), []byte(`{"cpus": "four"}`), 0o644)
			return dir
		}, []string{"environment.json", "cpus"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t)
			rep, err := Write(dir, allSections)
			if err == nil {
				t.Fatalf("Write = %+v, want an error", rep)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error has more than one line: %q", msg)
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("error %v is not %v", err, tt.target)
			}
			if _, err := os.Stat(filepath.Join(dir, "report.html")); err == nil {
				t.Error("report.html written despite the error")
			}
		})
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

func TestLogTicks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var ls []string
		for _, tk := range (logTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				ls = append(ls, tk.Label)
			}
		}
		return ls
	}
	for _, tt := range []struct {
		lo, hi float64
		want   []string
	}{
		{1.2, 4, []string{"2"}},
		{0.8, 4, []string{"1", "2"}},
		{1, 1000, []string{"1", "2", "5", "10", "20", "50", "100", "200", "500", "1000"}},
		{1, 30000, []string{"1", "10", "100", "1000", "10000"}},
		{0.05, 0.3, []string{"0.05", "0.1", "0.2"}},
	} {
		if got := labels(tt.lo, tt.hi); !slices.Equal(got, tt.want) {
			t.Errorf("logTicks(%v, %v) labels %v, want %v", tt.lo, tt.hi, got, tt.want)
		}
	}
	if got := (logTicks{}).Ticks(0, 10); got != nil {
		t.Errorf("logTicks(0, 10) = %v, want none", got)
	}
}

func TestLinearTicks(t *testing.T) {
	for _, tt := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 9.6, []string{"0", "2", "4", "6", "8"}},
		{0, 66, []string{"0", "20", "40", "60"}},
		{0, 0.23, []string{"0", "0.05", "0.1", "0.15", "0.2"}},
		{-0.6, 6.4, []string{"0", "2", "4", "6"}},
	} {
		var got []string
		for _, tk := range (linearTicks{}).Ticks(tt.lo, tt.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("linearTicks(%v, %v) labels %v, want %v", tt.lo, tt.hi, got, tt.want)
		}
	}
}

// A Section that is not one of report's (a zero one) is an error naming
// it, not a panic.
func TestWriteForeignSection(t *testing.T) {
	dir := t.TempDir()
	if _, err := Write(dir, []Section{SlowClient, {Name: "stub"}}); err == nil || !strings.Contains(err.Error(), `report section "stub": not one of report's sections`) {
		t.Errorf("Write with a zero section: %v", err)
	}
}

// allMarkers are allSections' markers, each once, in order.
func allMarkers() []string {
	var m []string
	for _, s := range allSections {
		if !slices.Contains(m, s.Marker) {
			m = append(m, s.Marker)
		}
	}
	return m
}
