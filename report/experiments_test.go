package report

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// writeLongPoll writes groups.csv as the issue gives its columns.
func writeLongPoll(t *testing.T, dir string) {
	t.Helper()
	groups := "run_id,server,hold,probe_concurrency,seconds,elapsed_s,ok,failed,p50_ms,p95_ms,max_ms,throughput_rps,slots,free_slots,max_worker_held,full_worker_s,probes_over_1s,held_samples,waves,full_waves,worker_slots,full_samples\n" +
		"sync-2.hold0.probes20.rep1,sync-2,0,20,60,60,60000,0,18.5,22.1,40.2,1000.5,2,2,0,0,0,1200,,,1,\n" +
		"sync-2.hold2.probes20.rep1,sync-2,2,20,60,60,38,0,29800,30010,30050,0.63,2,0,1,59.5,38,1200,2,1,1,\n" +
		"gthread-2x16.hold0.probes20.rep1,gthread-2x16,0,20,60,60,59000,0,19,25,48,980,32,32,0,0,0,1200,,,16,\n" +
		"gthread-2x16.hold20.probes20.rep1,gthread-2x16,20,20,60,60,58000,2,19.5,26,2100,970,32,12,16,1.25,20,1200,2,1,16,\n" +
		"gthread-2x16.hold20.probes8.rep1,gthread-2x16,20,8,60,60,30000,0,9.1,12,,500,32,12,,,0,0,,,16,\n" + // max and held not measured
		"node-2.hold20.probes20.rep1,node-2,20,20,60,60,59000,0,3,5,10,983.3,,,11,,0,1200,,,,\n" // an event loop: slots unbounded
	if err := os.WriteFile(filepath.Join(dir, groupsFile), []byte(groups), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWriteLongPoll(t *testing.T) {
	dir := t.TempDir()
	writeLongPoll(t, dir)
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Experiments, []string{"long-poll"}) {
		t.Errorf("experiments %v", rep.Experiments)
	}
	checkFiles(t, rep)
	checkHTML(t, rep)
	lp := figureByName(t, rep, "longpoll-latency")
	if lp.Series != 3 || !slices.Equal(lp.Points, []int{6, 6, 5}) {
		t.Errorf("longpoll-latency: %d series, points %v; want p50, p95, max with 6, 6, 5", lp.Series, lp.Points)
	}
	b, _ := os.ReadFile(rep.HTML)
	page := html.UnescapeString(string(b))
	for _, want := range []string{"<td>20 + 20 = 40 > 32 slots: 8 wait</td>", "<td>16 of 16 slots, full for 1.2 s</td>",
		"<td>1 of 1 slots, full for 59.5 s</td>", "slots not bounded by the server", ">unbounded</td>", "<td>11</td>", "<td>not measured</td>", "<td>20 + 8 = 28 ≤ 32 slots: none wait</td>",
		"<td>2 + 20 = 22 > 2 slots: 20 wait</td>", "0.630"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// Repeated long-poll runs of one condition are told apart in the figure,
// and a run whose worker filled up says so.
func TestLongPollRepsLabelled(t *testing.T) {
	dir := t.TempDir()
	groups := "run_id,server,hold,probe_concurrency,seconds,elapsed_s,ok,failed,p50_ms,p95_ms,max_ms,throughput_rps,slots,free_slots,max_worker_held,full_worker_s,probes_over_1s,held_samples,waves,full_waves,worker_slots,full_samples\n" +
		"gthread-2x16.hold20.probes20.rep1,gthread-2x16,20,20,40,40,290000,0,2.4,5.3,61.8,7332.2,32,12,14,0,0,1200,2,0,16,\n" +
		"gthread-2x16.hold20.probes20.rep2,gthread-2x16,20,20,40,40,187295,0,2.6,6.0,30003.7,4682.4,32,12,16,12,20,1200,2,1,16,\n"
	if err := os.WriteFile(filepath.Join(dir, groupsFile), []byte(groups), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "figures", figureByName(t, rep, "longpoll-latency").Name+".svg"))
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
func TestLongPollRepsCompared(t *testing.T) {
	dir := t.TempDir()
	head := "run_id,server,hold,probe_concurrency,seconds,elapsed_s,ok,failed,p50_ms,p95_ms,max_ms,throughput_rps,slots,free_slots,max_worker_held,full_worker_s,probes_over_1s,held_samples,waves,full_waves,worker_slots,full_samples\n"
	var rows strings.Builder
	for rep := 1; rep <= 4; rep++ {
		full, over := "0", "0"
		if rep <= 3 {
			full, over = "12", "20"
		}
		fmt.Fprintf(&rows, "gthread-2x16.hold20.probes20.rep%d,gthread-2x16,20,20,40,40,1000,0,2,5,60,25,32,12,16,%s,%s,400,2,%d,16,\n", rep, full, over, map[bool]int{true: 1}[full != "0"])
		fmt.Fprintf(&rows, "gthread-2x16.hold20.probes8.rep%d,gthread-2x16,20,8,40,40,1000,0,2,5,60,25,32,12,10,0,0,400,2,0,16,\n", rep)
	}
	if err := os.WriteFile(filepath.Join(dir, groupsFile), []byte(head+rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, allSections); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, HTMLFile))
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
