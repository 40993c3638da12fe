package buffersweep

import (
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
	"github.com/slowlab/slowlab/report/reporttest"
)

// The buffer-sweep fixture (testdata) is a sweep of 2 routes
// (direct, proxy-buffering-off) x 2 sizes (8, 16 MiB) x 2 rates (1, 2
// MiB/s) under the host's kernel settings, as sweep.csv, environment.json
// and scenario.yaml at the top, and two cell directories, size16m-rate2m
// and size16m-rate1m, each with runs.csv, environment.json and a small
// hops.csv of both routes' runs (conserved exactly: the stacked hops add
// up to app_written at every sample). proxy-buffering-off 8 MiB at 2 MiB/s
// has no ok run, and 8 MiB at 1 MiB/s fits in its path (size ≤
// capacity). In size16m-rate2m the direct route's first run failed (a
// try 2 followed) and it has a second repetition.

// copySweep copies the fixture into a new directory, since Write writes
// figures/ and report.html into the results directory (the fuzzer's
// other seeds beside it are read by no section).
func copySweep(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeReport writes dir's report with every registered section (this
// package's and slow-client's, which its cells import).
func writeReport(dir string) (*report.Report, error) { return report.Write(dir, lab.ReportSections()) }

// checkReport checks rep with reporttest.Check and returns what each SVG
// figure holds.
func checkReport(t *testing.T, rep *report.Report) map[string]reporttest.SVGCount {
	t.Helper()
	if err := reporttest.Check(rep); err != nil {
		t.Error(err)
	}
	stats := map[string]reporttest.SVGCount{}
	for _, f := range rep.Figures {
		if len(f.Files) == 2 {
			data, err := os.ReadFile(filepath.Join(rep.Dir, filepath.FromSlash(f.Files[1])))
			if err != nil {
				t.Fatal(err)
			}
			if stats[f.Name], err = reporttest.CountSVG(data); err != nil {
				t.Fatal(err)
			}
		}
	}
	return stats
}

// environmentRows are the name/value rows of report.html's environment
// table.
func environmentRows(t *testing.T, rep *report.Report) map[string]string {
	t.Helper()
	rows := map[string]string{}
	for _, r := range labtest.SectionRows(t, rep, "environment") {
		if name, value, ok := strings.Cut(r, " | "); ok && !strings.Contains(value, " | ") {
			rows[name] = value
		}
	}
	return rows
}

func hexColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}

// editSweep rewrites dir's sweep.csv without the rows that contain any of
// drop and with extra rows appended.
func editSweep(t *testing.T, dir string, drop []string, extra ...string) {
	t.Helper()
	path := filepath.Join(dir, sweepFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	dropped := 0
	for i, l := range lines {
		if i > 0 && slices.ContainsFunc(drop, func(d string) bool { return strings.Contains(l, d) }) {
			dropped++
			continue
		}
		out = append(out, l)
	}
	if dropped != len(drop) {
		t.Fatalf("dropped %d rows of sweep.csv, want %d", dropped, len(drop))
	}
	out = append(out, extra...)
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func svgText(t *testing.T, rep *report.Report, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rep.Dir, report.FiguresDir, name+".svg"))
	if err != nil {
		t.Fatal(err)
	}
	return html.UnescapeString(string(b))
}

func containsAll(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// TestReport reports the fixture: its section alone, the three figures,
// the kernel table and every cell.
func TestReport(t *testing.T) {
	dir := copySweep(t)
	rep, err := writeReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Experiments, []string{"buffer-sweep"}) {
		t.Errorf("experiments %v, want buffer-sweep (the cell directories' runs.csv are not the sweep's)", rep.Experiments)
	}
	wantNames := []string{"buffer-sweep-p95-host", "buffer-sweep-send-predicted", "buffer-sweep-hops"}
	if got := labtest.FigureNames(rep); !slices.Equal(got, wantNames) {
		t.Fatalf("figures %v, want %v", got, wantNames)
	}
	if len(rep.Notes) != 0 {
		t.Errorf("notes %q, want none", rep.Notes)
	}
	stats := checkReport(t, rep) // checks report.html's references too
	env := environmentRows(t, rep)
	page, err := os.ReadFile(rep.HTML)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Figures {
		for _, rel := range f.Files {
			if st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err != nil || st.Size() == 0 {
				t.Errorf("%s: missing or empty (%v)", rel, err)
			}
		}
		for _, want := range []string{`src="figures/` + f.Name + `.png"`, `href="figures/` + f.Name + `.svg"`} {
			if !strings.Contains(string(page), want) {
				t.Errorf("report.html lacks %s", want)
			}
		}
	}

	// The environment table is the sweep's own session.
	for name, want := range map[string]string{"experiment": "buffer-sweep", "stack": "real", "network namespace": "host",
		"net.ipv4.tcp_wmem": "4096 16384 4194304 (min 4 KiB, default 16 KiB, max 4 MiB)"} {
		if env[name] != want {
			t.Errorf("environment row %q = %q, want %q", name, env[name], want)
		}
	}

	// Heatmap: a panel per route; each cell with a p95 filled with its
	// decade's colour (+ the legend's swatch in each panel), annotated.
	hm := labtest.Figure(t, rep, "buffer-sweep-p95-host")
	if hm.Panels != 2 || !slices.Equal(hm.Points, []int{4, 3}) {
		t.Errorf("heatmap: %d panels, points %v; want 2 panels, 4 and 3 cells with a p95", hm.Panels, hm.Points)
	}
	fills := stats["buffer-sweep-p95-host"].Fills
	for _, tt := range []struct {
		name  string
		fill  string
		cells int
	}{
		{"< 10 ms", hexColor(p95Bins[0].fill), 1},   // buffering off, 8 MiB at 1 MiB/s
		{"1–10 s", hexColor(p95Bins[3].fill), 5},    // 5480, 2690, 5966, 8700, 3755 ms
		{"≥ 10 s", hexColor(p95Bins[4].fill), 1},    // 13400 ms
		{"10–100 ms", hexColor(p95Bins[1].fill), 0}, // none
		{"no p95", hexColor(noP95Fill), 1},          // buffering off, 8 MiB at 2 MiB/s
	} {
		if got := fills[tt.fill]; got != tt.cells+2 {
			t.Errorf("heatmap: %d paths filled %s (%s), want %d cells + 2 legend swatches", got, tt.fill, tt.name, tt.cells)
		}
	}
	containsAll(t, "heatmap SVG", svgText(t, rep, hm.Name), ">13400<", ">5966<", ">2.10<", ">0/1 runs ok<",
		"direct, sync-2, 2 slow clients", "proxy-buffering-off, sync-2, 2 slow clients", "slow read rate (MiB/s)")
	containsAll(t, "heatmap caption", hm.Caption, "median over the cell's ok runs", "coloured by decade",
		"tcp_wmem 4096 16384 4194304", "1 cells ran but have no p95", "Blank: not in sweep.csv")

	// Predicted against observed: direct's 4 cells and buffering off's 2
	// with size > capacity filled, its 8 MiB at 1 MiB/s hollow, its cell
	// without values not drawn.
	pr := labtest.Figure(t, rep, "buffer-sweep-send-predicted")
	if !slices.Equal(pr.Points, []int{4, 2, 1}) {
		t.Errorf("send-predicted points %v, want [4 2 1]", pr.Points)
	}
	if got := stats[pr.Name].Arcs; got != 4+1 {
		t.Errorf("send-predicted.svg has %d circles, want direct's 4 + its legend glyph", got)
	}
	containsAll(t, "send-predicted caption", pr.Caption, "max(0, size − C) / R", "predicted before the run from configuration only",
		"Filled: size > C", "hollow: size ≤ C", "Not drawn, no observed or no predicted send time: proxy-buffering-off 8 MiB at 2 MiB/s (kernel host)")
	containsAll(t, "send-predicted SVG", svgText(t, rep, pr.Name), "direct, size > predicted capacity",
		"proxy-buffering-off, size ≤ predicted capacity", "measured = predicted", "±20%")

	// Hop bytes: the 16 MiB at 2 MiB/s cell of each route, its first ok
	// run, download 0; direct stacks client_read, client_recv_queue and
	// app_send_queue, buffering off adds the proxy's hops but its temp
	// file, at 0 throughout; app_written over both.
	hp := labtest.Figure(t, rep, "buffer-sweep-hops")
	points := 0
	for _, n := range hp.Points {
		points += n
	}
	if hp.Panels != 2 || hp.Series != 4+7 || points != 11*9 {
		t.Errorf("hops: %d panels, %d series, points %v; want 2 panels, 4 + 7 series of 9 samples", hp.Panels, hp.Series, hp.Points)
	}
	containsAll(t, "hops caption", hp.Caption,
		"direct: the cell 16 MiB at 2 MiB/s (kernel host, directory size16m-rate2m), run direct.sync-2.slow2.rep1.try2, 9 samples every 1000 ms",
		"proxy-buffering-off: the cell 16 MiB at 2 MiB/s (kernel host, directory size16m-rate2m), run proxy-buffering-off.sync-2.slow2.rep1,",
		"proxy_memory and proxy_temp_file of proxy-buffering-off are derived", "taken off app_send_queue and proxy_client_send_queue",
		"At 0 throughout, not drawn: proxy-buffering-off: proxy_temp_file.")
	containsAll(t, "hops SVG", svgText(t, rep, hp.Name), "app_written (line)", "proxy_client_send_queue<", "client_read<")
	if strings.Contains(svgText(t, rep, hp.Name), "proxy_temp_file") {
		t.Error("hops SVG draws proxy_temp_file, which is 0 throughout")
	}

	// Tables: the kernel's settings, then every cell.
	rows := labtest.SectionRows(t, rep, "buffer-sweep")
	for _, want := range []string{
		"host | 8 | 4096 16384 4194304 (min 4 KiB, default 16 KiB, max 4 MiB) | 212992 (208 KiB) | 4294967295 (no limit) | " +
			"4096 131072 6291456 (min 4 KiB, default 128 KiB, max 6 MiB) | 212992 (208 KiB) | 1 (on) | 65536 | host | " +
			"sweep.csv, size16m-rate1m/environment.json",
		"host | direct | sync-2 | 2 | 16m | 2m | 2/2 | 5966.4 | 4.02 | 2.50 | -38 | 5.99 | 6.59 | 10 | yes | 8.002 | size16m-rate2m",
		"host | proxy-buffering-off | sync-2 | 2 | 8m | 1m | 1/1 | 2.1 | 8.16 | 8.00 | – | 0.00 | 0.04 | – | no | 8.003 | size8m-rate1m",
		"host | proxy-buffering-off | sync-2 | 2 | 8m | 2m | 0/1 | – | 8.16 | – | – | 0.00 | – | – | no | – | size8m-rate2m",
	} {
		if !slices.Contains(rows, want) {
			t.Errorf("buffer-sweep tables lack the row\n%s\nrows:\n%s", want, strings.Join(rows, "\n"))
		}
	}
	if len(rows) != 1+8 {
		t.Errorf("%d table rows, want 1 kernel + 8 cells", len(rows))
	}

	// Every panel has a title and axis labels with units.
	cells, err := recorder.ReadFile[Cell](filepath.Join(dir, sweepFile))
	if err != nil {
		t.Fatal(err)
	}
	drawn, err := addFigures(report.NewPart(Name, ""), newSweepDir(dir, cells))
	if err != nil || len(drawn) != len(wantNames) {
		t.Fatalf("%d figures drawn (%v), want %d", len(drawn), err, len(wantNames))
	}
	for j, d := range drawn {
		for i, p := range d.Panels() {
			x, y := p.X.Label.Text, p.Y.Label.Text
			if p.Title.Text == "" || !strings.Contains(x, "(") || !strings.Contains(y, "(") {
				t.Errorf("%s panel %d: title %q, x %q, y %q", wantNames[j], i, p.Title.Text, x, y)
			}
		}
	}
}

// Stacking counts every byte once: the *_delivered parts come off their
// send queues, so the stack's top is app_written at every sample.
func TestStackHops(t *testing.T) {
	rows, err := recorder.ReadFile[recorder.Hop](filepath.Join("testdata", "size16m-rate2m", "hops.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"direct.sync-2.slow2.rep1.try2", "proxy-buffering-off.sync-2.slow2.rep1"} {
		var mine []recorder.Hop
		for _, r := range rows {
			if r.RunID == run && r.Download == 0 {
				mine = append(mine, r)
			}
		}
		st := stackHops(mine)
		if len(st.ts) != 9 || len(st.written) != 9 {
			t.Fatalf("%s: %d samples, %d app_written, want 9", run, len(st.ts), len(st.written))
		}
		var names []string
		for _, l := range st.layers {
			names = append(names, l.hop)
		}
		want := []string{"client_read", "client_recv_queue", "app_send_queue"}
		if strings.HasPrefix(run, "proxy") {
			want = []string{"client_read", "client_recv_queue", "proxy_client_send_queue", "proxy_temp_file",
				"proxy_memory", "proxy_upstream_recv_queue", "app_send_queue"}
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s: layers %v, want %v", run, names, want)
		}
		for i := range st.ts {
			total := 0.0
			for _, l := range st.layers {
				total += l.mib[i]
			}
			if d := total - st.written[i].Y; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s at %g s: stack %.4f MiB, app_written %.4f MiB", run, st.ts[i], total, st.written[i].Y)
			}
		}
		// At 1 s a send queue holds bytes its receiver already has:
		// app_send_queue 1.75 MiB of which 0.25 delivered (direct),
		// proxy_client_send_queue 3.125 MiB of which 0.125 (buffering off).
		hop, want1 := "app_send_queue", 1.5
		if strings.HasPrefix(run, "proxy") {
			hop, want1 = "proxy_client_send_queue", 3.0
		}
		for _, l := range st.layers {
			if l.hop == hop && l.mib[1] != want1 {
				t.Errorf("%s: %s at 1 s = %g MiB, want %g (the delivered part taken off)", run, hop, l.mib[1], want1)
			}
		}
	}
}

func TestPickHopCell(t *testing.T) {
	const mi = 1 << 20
	cell := func(size, rate int64) Cell { return Cell{SizeBytes: size, RateBps: rate} }
	grid := func(sizes, rates []int64) []Cell {
		var cs []Cell
		for _, s := range sizes {
			for _, r := range rates {
				cs = append(cs, cell(s, r))
			}
		}
		return cs
	}
	for _, tt := range []struct {
		name          string
		cells         []Cell
		size, rate    int64
		preferred, ok bool
	}{
		{"published grid", grid([]int64{4 * mi, 8 * mi, 16 * mi, 32 * mi}, []int64{mi / 2, mi, 2 * mi, 4 * mi}), 16 * mi, 2 * mi, true, true},
		{"no 16 MiB: lower middle of 4 rates", grid([]int64{4 * mi, 8 * mi, 32 * mi}, []int64{mi / 2, mi, 2 * mi, 4 * mi}), 32 * mi, mi, false, true},
		{"odd count: the middle rate", grid([]int64{4 * mi, 8 * mi}, []int64{mi, 2 * mi, 4 * mi}), 8 * mi, 2 * mi, false, true},
		{"interrupted: the median rate's largest size run so far", []Cell{cell(4*mi, mi), cell(8*mi, mi), cell(4*mi, 2*mi)}, 8 * mi, mi, false, true},
		{"no cells", nil, 0, 0, false, false},
	} {
		c, preferred, ok := pickHopCell(tt.cells)
		if ok != tt.ok || preferred != tt.preferred || c.SizeBytes != tt.size || c.RateBps != tt.rate {
			t.Errorf("%s: %d at %d/s (preferred %v, ok %v), want %d at %d/s (%v, %v)", tt.name, c.SizeBytes, c.RateBps,
				preferred, ok, tt.size, tt.rate, tt.preferred, tt.ok)
		}
	}
}

// A sweep.csv with no cells, or empty, gives a section with a note.
func TestReportNoCells(t *testing.T) {
	for name, body := range map[string]string{"header only": strings.Join(recorder.Header[Cell](), ",") + "\n", "empty": ""} {
		t.Run(name, func(t *testing.T) {
			dir := copySweep(t)
			if err := os.WriteFile(filepath.Join(dir, sweepFile), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := writeReport(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rep.Experiments, []string{"buffer-sweep"}) || len(rep.Figures) != 0 {
				t.Errorf("experiments %v, figures %v; want buffer-sweep without figures", rep.Experiments, labtest.FigureNames(rep))
			}
			want := "sweep.csv has no cells"
			if name == "empty" {
				want = "sweep.csv is empty"
			}
			page, _ := os.ReadFile(rep.HTML)
			if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], want) || !strings.Contains(html.UnescapeString(string(page)), want) {
				t.Errorf("notes %q, want one saying %q, in report.html too", rep.Notes, want)
			}
			checkReport(t, rep)
			if env := environmentRows(t, rep); env["experiment"] != "buffer-sweep" {
				t.Errorf("environment table: experiment %q", env["experiment"])
			}
		})
	}
}

// An interrupted sweep reports the cells it has: the missing ones blank
// and named, the hop figure falling back to another cell of a route
// without 16 MiB at 2 MiB/s, and a route whose cell directory lacks
// runs.csv left out with a note.
func TestReportInterrupted(t *testing.T) {
	dir := copySweep(t)
	editSweep(t, dir, []string{"proxy-buffering-off,sync-2,2,16777216,2097152", "direct,sync-2,2,8388608,1048576"})
	if err := os.Remove(filepath.Join(dir, "size16m-rate2m", "runs.csv")); err != nil {
		t.Fatal(err)
	}
	rep, err := writeReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep)
	notes := strings.Join(rep.Notes, "\n")
	containsAll(t, "notes", notes,
		"2 cells of the grid are not in sweep.csv (an interrupted sweep?); they are blank in the heatmaps: "+
			"direct 8 MiB at 1 MiB/s (kernel host); proxy-buffering-off 16 MiB at 2 MiB/s (kernel host).",
		"Hop bytes over time: direct, sync-2, 2 slow (16 MiB at 2 MiB/s, directory size16m-rate2m) left out: runs.csv is not present")
	if hm := labtest.Figure(t, rep, "buffer-sweep-p95-host"); !slices.Equal(hm.Points, []int{3, 2}) {
		t.Errorf("heatmap points %v, want [3 2]", hm.Points)
	}
	hp := labtest.Figure(t, rep, "buffer-sweep-hops")
	if hp.Panels != 1 || hp.Series != 7 {
		t.Errorf("hops: %d panels, %d series; want buffering off's only, 7 series", hp.Panels, hp.Series)
	}
	containsAll(t, "hops caption", hp.Caption, "proxy-buffering-off: the cell 16 MiB at 1 MiB/s (kernel host, directory size16m-rate1m), "+
		"the largest size at the median rate, since the route has no cell of 16 MiB at 2 MiB/s, run proxy-buffering-off.sync-2.slow2.rep1, 9 samples every 2000 ms")
	// Drawn alone, the panel carries the figure's title.
	containsAll(t, "hops SVG", svgText(t, rep, hp.Name), "Where one download's bytes are over time, one run per route")
}

// Several kernel settings: a heatmap each, a row each in the kernel table;
// the hop figure draws the first kernel's cells.
func TestReportKernels(t *testing.T) {
	dir := copySweep(t)
	k := "wmem=16m rmem=default,4096 16384 16777216,4096 131072 6291456,"
	editSweep(t, dir, nil,
		k+"direct,sync-2,2,16777216,2097152,1,1,1.9,0.031,8.001,16777216,0,,1048576,kernel-wmem16m-rmemdefault/size16m-rate2m,16793600,16777216,0,0.031",
		k+"proxy-buffering-off,sync-2,2,16777216,2097152,1,1,2.2,0.035,8.001,16777216,0,,1048576,kernel-wmem16m-rmemdefault/size16m-rate2m,33718272,16777216,0,0.035")
	rep, err := writeReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"buffer-sweep-p95-host", "buffer-sweep-p95-wmem-16m-rmem-default", "buffer-sweep-send-predicted", "buffer-sweep-hops"}
	if got := labtest.FigureNames(rep); !slices.Equal(got, want) {
		t.Fatalf("figures %v, want %v", got, want)
	}
	checkReport(t, rep)
	hm := labtest.Figure(t, rep, "buffer-sweep-p95-wmem-16m-rmem-default")
	if !slices.Equal(hm.Points, []int{1, 1}) || !strings.Contains(hm.Title, "kernel wmem=16m rmem=default") ||
		!strings.Contains(hm.Caption, "tcp_wmem 4096 16384 16777216") {
		t.Errorf("second heatmap: points %v, title %q, caption %s", hm.Points, hm.Title, hm.Caption)
	}
	if pr := labtest.Figure(t, rep, "buffer-sweep-send-predicted"); !slices.Equal(pr.Points, []int{4, 1, 2, 2}) {
		t.Errorf("send-predicted points %v, want direct 4 above + 1 within, buffering off 2 + 2", pr.Points)
	}
	if hp := labtest.Figure(t, rep, "buffer-sweep-hops"); !strings.Contains(hp.Caption, "kernel host") || strings.Contains(hp.Caption, "wmem=16m") {
		t.Errorf("hops caption names another kernel than the first: %s", hp.Caption)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "6 cells of the grid are not in sweep.csv") {
		t.Errorf("notes %q lack the 6 cells the second kernel has not run", rep.Notes)
	}
	rows := labtest.SectionRows(t, rep, "buffer-sweep")
	if !slices.Contains(rows, "wmem=16m rmem=default | 2 | 4096 16384 16777216 (min 4 KiB, default 16 KiB, max 16 MiB) | – | – | "+
		"4096 131072 6291456 (min 4 KiB, default 128 KiB, max 6 MiB) | – | – | – | – | sweep.csv") {
		t.Errorf("kernel table lacks the second kernel's row:\n%s", strings.Join(rows, "\n"))
	}
}

// A results file of a cell that does not parse is an error naming it, as
// for every experiment.
func TestReportErrors(t *testing.T) {
	for _, tt := range []struct {
		name, file, body string
		want             []string
		target           error
	}{
		{"sweep.csv header", sweepFile, "kernel,route\nhost,direct\n", []string{"sweep.csv", "tcp_wmem"}, recorder.ErrHeader},
		{"hops.csv cell", filepath.Join("size16m-rate2m", "hops.csv"), "run_id,t_s,download,hop,bytes,source\nr1,0,zero,app_written,1,sock_diag\n",
			[]string{"hops.csv", "line 2, column 3 (download)"}, recorder.ErrNotInteger},
		{"cell environment.json", filepath.Join("size16m-rate1m", "environment.json"), `{"cpus": "two"}`,
			[]string{"environment.json", "cpus"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := copySweep(t)
			if err := os.WriteFile(filepath.Join(dir, tt.file), []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := writeReport(dir)
			if err == nil {
				t.Fatalf("Write = %+v, want an error", rep)
			}
			containsAll(t, "error", err.Error(), tt.want...)
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("error %v is not %v", err, tt.target)
			}
		})
	}
}

func TestHeatmapNames(t *testing.T) {
	kernels := []string{"host", "wmem=1m rmem=default", "wmem-1m rmem default", ""}
	var got []string
	for i := range kernels {
		got = append(got, heatmapName(kernels, i))
	}
	want := []string{"buffer-sweep-p95-host", "buffer-sweep-p95-wmem-1m-rmem-default", "buffer-sweep-p95-wmem-1m-rmem-default-3",
		"buffer-sweep-p95-kernel-4"}
	if !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
}
