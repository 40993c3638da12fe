package longpoll

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
	"github.com/slowlab/slowlab/report/reporttest"
)

// TestReport reports testdata/groups.csv (groups.csv as the issue gives
// its columns): the probe latency figure with a point per measured
// latency, its axes labelled with their unit, and the runs table with
// the CLI's header, the slot arithmetic, the busiest worker's slots and
// the elapsed time in its cells' titles, an event loop's slots
// unbounded.
func TestReport(t *testing.T) {
	rep := labtest.Report(t, Section, groupFile)
	labtest.AxesHaveUnits(t, rep, "(ms", "(s)", "MiB", "cores")
	lp := labtest.Figure(t, rep, "longpoll-latency")
	if lp.Series != 3 || !slices.Equal(lp.Points, []int{6, 6, 5}) {
		t.Errorf("longpoll-latency: %d series, points %v; want p50, p95, max with 6, 6, 5", lp.Series, lp.Points)
	}
	svg, err := os.ReadFile(filepath.Join(rep.Dir, filepath.FromSlash(lp.Files[1])))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">Probe latency per long-poll condition<", ">probe latency (ms, log scale)<", ">condition<"} {
		if !strings.Contains(html.UnescapeString(string(svg)), want) {
			t.Errorf("longpoll-latency.svg lacks its title or an axis label with its unit: %q", want)
		}
	}
	b, _ := os.ReadFile(rep.HTML)
	page := html.UnescapeString(string(b))
	for _, want := range []string{"<th>worker_held</th>", "<th>full_waves</th>",
		`title="20 + 20 = 40 > 32 slots: 8 wait">12</td>`, `title="16 of 16 slots, full for 1.2 s">16</td>`,
		`title="1 of 1 slots, full for 59.5 s">1</td>`, "slots not bounded by the server", ">unbounded</td>", `<td class="num">11</td>`,
		`title="not measured">–</td>`, `title="20 + 8 = 28 ≤ 32 slots: none wait">12</td>`,
		`title="2 + 20 = 22 > 2 slots: 20 wait">0</td>`, `title="over 60.0 s elapsed">0.6</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestTableDeclaredOnce: the report's runs table has the header the CLI
// prints.
func TestTableDeclaredOnce(t *testing.T) {
	var text strings.Builder
	(&Result{}).Print(&text)
	header := strings.Fields(strings.SplitN(text.String(), "\n", 2)[0])
	if !slices.Equal(header, groupsTable.Head()) {
		t.Errorf("printed header %v, declared %v", header, groupsTable.Head())
	}
	want := []string{"server", "hold", "probes", "ok", "failed", "p50_ms", "p95_ms", "max_ms", "req/s", "slots", "free", "worker_held", "full_s", ">1s", "full_waves"}
	if !slices.Equal(header, want) {
		t.Errorf("printed header %v, want the CLI's %v", header, want)
	}
}

// writeGroups writes groups (groups.csv's text) into a fresh results
// directory and reports it with Section alone, checked with reporttest.Check.
func writeGroups(t *testing.T, groups string) *report.Report {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, groupFile), []byte(groups), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := report.Write(dir, []report.Section{Section})
	if err != nil {
		t.Fatal(err)
	}
	if err := reporttest.Check(rep); err != nil {
		t.Error(err)
	}
	return rep
}

const groupsHeader = "run_id,server,hold,probe_concurrency,seconds,elapsed_s,ok,failed,p50_ms,p95_ms,max_ms,throughput_rps,slots,free_slots,max_worker_held,full_worker_s,probes_over_1s,held_samples,waves,full_waves,worker_slots,full_samples\n"

// Repeated long-poll runs of one condition are told apart in the figure,
// and a run whose worker filled up says so.
func TestRepsLabelled(t *testing.T) {
	rep := writeGroups(t, groupsHeader+
		"gthread-2x16.hold20.probes20.rep1,gthread-2x16,20,20,40,40,290000,0,2.4,5.3,61.8,7332.2,32,12,14,0,0,1200,2,0,16,\n"+
		"gthread-2x16.hold20.probes20.rep2,gthread-2x16,20,20,40,40,187295,0,2.6,6.0,30003.7,4682.4,32,12,16,12,20,1200,2,1,16,\n")
	svg, err := os.ReadFile(filepath.Join(rep.Dir, "figures", labtest.Figure(t, rep, "longpoll-latency").Name+".svg"))
	if err != nil {
		t.Fatal(err)
	}
	text := html.UnescapeString(string(svg))
	for _, want := range []string{"20 probes, rep 1, 12 of 32 slots free<", "20 probes, rep 2, 12 of 32 slots free, a worker full 12.0 s<"} {
		if !strings.Contains(text, want) {
			t.Errorf("longpoll-latency.svg lacks the label %q", want)
		}
	}
}

// Repeated conditions get a summary over their runs with Fisher's exact
// test between conditions that differ only in probes, and the sampling
// interval in the caption is computed from the runs' sample counts.
func TestRepsCompared(t *testing.T) {
	var rows strings.Builder
	for rep := 1; rep <= 4; rep++ {
		full, over := "0", "0"
		if rep <= 3 {
			full, over = "12", "20"
		}
		fmt.Fprintf(&rows, "gthread-2x16.hold20.probes20.rep%d,gthread-2x16,20,20,40,40,1000,0,2,5,60,25,32,12,16,%s,%s,400,2,%d,16,\n", rep, full, over, map[bool]int{true: 1}[full != "0"])
		fmt.Fprintf(&rows, "gthread-2x16.hold20.probes8.rep%d,gthread-2x16,20,8,40,40,1000,0,2,5,60,25,32,12,10,0,0,400,2,0,16,\n", rep)
	}
	rep := writeGroups(t, groupsHeader+rows.String())
	b, err := os.ReadFile(rep.HTML)
	if err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(string(b))
	// 3 of 4 runs against 0 of 4: Fisher's exact p = 0.143.
	for _, want := range []string{"Fisher's exact test", "3 of 4", "0 of 4", "0.143", "sampled about every 100 ms, 3200 samples over 320 s", "3 of 8"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// A groups.csv whose header lacks a column is an error naming the file
// and the column, on one line, and no report is written.
func TestReportHeaderError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, groupFile), []byte("run_id,server,hold\nr1,sync-2,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := report.Write(dir, []report.Section{Section})
	if err == nil {
		t.Fatalf("Write = %+v, want an error", rep)
	}
	msg := err.Error()
	for _, w := range []string{"groups.csv", `column 4 "probe_concurrency" is missing`} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error has more than one line: %q", msg)
	}
	if !errors.Is(err, recorder.ErrHeader) {
		t.Errorf("error %v is not %v", err, recorder.ErrHeader)
	}
	if _, err := os.Stat(filepath.Join(dir, report.HTMLFile)); err == nil {
		t.Error("report.html written despite the error")
	}
}

// A run that measured no probe latency has no row in the figure, so the
// one run of its condition that did is not told apart by its rep; a run
// that measured some of its latencies is drawn with those.
func TestUnmeasuredRunLeftOut(t *testing.T) {
	rep := writeGroups(t, groupsHeader+
		"sync-2.hold2.probes20.rep1,sync-2,2,20,40,40,0,20,,,,0,2,0,1,59.5,20,1200,2,2,1,\n"+
		"sync-2.hold2.probes20.rep2,sync-2,2,20,40,40,3,17,900.5,,30003.7,0.1,2,0,1,59.5,20,1200,2,2,1,\n")
	fig := labtest.Figure(t, rep, "longpoll-latency")
	if !slices.Equal(fig.Points, []int{1, 0, 1}) {
		t.Errorf("points %v, want p50 and max of the second run only", fig.Points)
	}
	svg, err := os.ReadFile(filepath.Join(rep.Dir, filepath.FromSlash(fig.Files[1])))
	if err != nil {
		t.Fatal(err)
	}
	if text := html.UnescapeString(string(svg)); !strings.Contains(text, ">sync-2, 2 held, 20 probes, 0 of 2 slots free, a worker full 59.5 s<") {
		t.Errorf("longpoll-latency.svg lacks the drawn run's label without its rep")
	}
}
