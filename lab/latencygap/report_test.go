package latencygap

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"image/color"
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

// TestReport reports testdata/gap.csv alone (four conditions, the last
// without its last-byte timing): the times figure with a bar per
// condition and series, its bars counted in the SVG, the conditions
// table, and notes for the phases and the path's columns, whose files
// are missing.
func TestReport(t *testing.T) {
	rep := labtest.Report(t, Section, gapFile)
	labtest.AxesHaveUnits(t, rep, "(ms", "(s)", "MiB", "cores")
	gap := labtest.Figure(t, rep, "latency-gap")
	if gap.Series != 3 || !slices.Equal(gap.Points, []int{4, 4, 4}) {
		t.Errorf("latency-gap: %d series, points %v", gap.Series, gap.Points)
	}
	svg := readFigure(t, rep, gap)
	for i := range 3 {
		fill := "fill:" + hexColor(report.NewBars(nil, nil, 0, false, report.ColorAt(i)).Fill)
		if got := strings.Count(svg, fill); got != 4+1 {
			t.Errorf("latency-gap.svg series %d: %d bars (%s), want 4 + legend", i, got, fill)
		}
	}
	b, _ := os.ReadFile(rep.HTML)
	page := html.UnescapeString(string(b))
	for _, want := range []string{"<td class=\"num\">99.9</td>", "netem", "100 KiB"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	notes := strings.Join(rep.Notes, " ")
	for _, want := range []string{"no " + requestFile, "No " + pathFile} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", rep.Notes, want)
		}
	}
}

// TestReportConditions: gap.csv rows with TLS and processing time, and
// their requests in gap-requests.csv, give the new-connection phases (a
// stacked bar per condition and phase) and the blind-against-work curve
// (the plain condition at three processing times; the TLS one has a
// single time and draws no line); the table joins each row's
// gap-path.csv row by run id (valid, or not measured without one).
func TestReportConditions(t *testing.T) {
	dir := t.TempDir()
	plain := Settings{TLS: TLSNone, DelayUpMS: 25, DelayDownMS: 25, WorkKind: WorkSleep}
	tls13, work := plain, func(ms float64) Settings { s := plain; s.WorkMS = ms; return s }
	tls13.TLS = TLS13
	conds := []struct {
		s            Settings
		server, hs   float64
		total, blind float64
	}{{plain, 0.1, 0, 101, 99.9}, {tls13, 0.1, 51.3, 152, 99.9}, {work(10), 10.1, 0, 111, 90.9}, {work(50), 50.1, 0, 151, 66.8}}
	gaps, err := recorder.CreateFile[Gap](dir)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := recorder.CreateFile[Request](dir)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := recorder.CreateFile[Path](dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range conds {
		id := fmt.Sprint("run", i)
		g := Gap{SizeBytes: 1024, ConfiguredRTTMS: 50, RTTMS: recorder.Some(50.1), ServerMS: recorder.Some(c.server),
			ClientKeepaliveMS: recorder.Some(51), ClientNewMS: recorder.Some(c.total), ServerBlindPct: recorder.Some(c.blind), Runs: 3,
			DelayMethod: "tun", Settings: c.s, RunID: id}
		if c.hs > 0 {
			g.HandshakeMS, g.ResumedPct = recorder.Some(c.hs), recorder.Some(0)
		}
		if err := gaps.Write(g); err != nil {
			t.Fatal(err)
		}
		for seq := range 3 {
			r := Request{SizeBytes: 1024, ConfiguredRTTMS: 50, DelayMethod: "tun", Mode: ModeNew, Seq: seq, NewConn: true,
				ConnectMS: 50, TTFBMS: 100 + c.hs + c.server, TotalMS: c.total, Status: 200, Bytes: 1024, Settings: c.s, RunID: id}
			if c.hs > 0 {
				r.HandshakeMS = recorder.Some(c.hs)
			}
			if err := reqs.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if i < 2 { // the first path faithful, the second not, none for the others
			p := Path{SizeBytes: 1024, ConfiguredRTTMS: 50, RTTMS: recorder.Some(50.1), DelayMethod: "tun", MTU: 1500, Valid: i == 0,
				LatenessP99MS: recorder.Some(0.25 + 2*float64(i)), Settings: c.s, RunID: id}
			if err := paths.Write(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := errors.Join(gaps.Close(), reqs.Close(), paths.Close()); err != nil {
		t.Fatal(err)
	}
	rep, err := report.Write(dir, []report.Section{Section})
	if err != nil {
		t.Fatal(err)
	}
	if err := reporttest.Check(rep); err != nil {
		t.Error(err)
	}
	phases := labtest.Figure(t, rep, "latency-gap-phases")
	if phases.Series != 5 || !slices.Equal(phases.Points, []int{4, 4, 4, 4, 4}) {
		t.Errorf("latency-gap-phases: %d series, points %v; want 5 phases (DNS lookup first) of 4 conditions", phases.Series, phases.Points)
	}
	blind := labtest.Figure(t, rep, "latency-gap-blind-by-work")
	if blind.Series != 1 || !slices.Equal(blind.Points, []int{3}) {
		t.Errorf("latency-gap-blind-by-work: %d series, points %v; want the plain condition at 3 processing times", blind.Series, blind.Points)
	}
	b, _ := os.ReadFile(rep.HTML)
	page := html.UnescapeString(string(b))
	// The TLS mode, the processing time and the handshake, in the table's
	// cells as the CLI prints them; the path's lateness and validity.
	for _, want := range []string{"<td>1.3</td>", `<td class="num">10</td>`, ">51.30<", ">2.250<", "<td>yes</td>", "<td>NO</td>",
		`<td class="num" title="not measured">–</td></tr>`} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(strings.Join(rep.Notes, " "), pathFile) {
		t.Errorf("notes %q name %s, which is there", rep.Notes, pathFile)
	}
	// Every figure has a title and names a unit on an axis.
	for _, f := range rep.Figures {
		svg := readFigure(t, rep, f)
		if !strings.Contains(svg, ">"+f.Title+"<") || !strings.Contains(svg, "(ms") {
			t.Errorf("%s.svg: no title %q or no axis in ms", f.Name, f.Title)
		}
	}
}

// TestReportErrors: a gap.csv cell that does not parse fails the report
// with one line naming the file, the line and the column, and no
// report.html is written.
func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", gapFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("0.05")) {
		t.Fatalf("%s has no 0.05", gapFile)
	}
	if err := os.WriteFile(filepath.Join(dir, gapFile), bytes.Replace(b, []byte("0.05"), []byte("fast"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := report.Write(dir, []report.Section{Section})
	if err == nil {
		t.Fatalf("Write = %+v, want an error", rep)
	}
	msg := err.Error()
	for _, want := range []string{"gap.csv", `line 2, column 4 (server_ms): "fast": want a finite decimal number`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error has more than one line: %q", msg)
	}
	if _, err := os.Stat(filepath.Join(dir, report.HTMLFile)); err == nil {
		t.Error("report.html written despite the error")
	}
}

// readFigure is f's SVG, unescaped.
func readFigure(t *testing.T, rep *report.Report, f report.Figure) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rep.Dir, filepath.FromSlash(f.Files[1])))
	if err != nil {
		t.Fatal(err)
	}
	return html.UnescapeString(string(b))
}

func hexColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}
