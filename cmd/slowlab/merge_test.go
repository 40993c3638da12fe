package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/appserver/appservertest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/loadgendir"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// shardArgs is one shard's `slowlab loadgen` command line: 40 requests
// at 20/s beside two slow readers (16 MiB/s), the load TestMergeShardsAsProcesses
// runs sharded and whole.
func shardArgs(target, out, shard string, extra ...string) []string {
	return append([]string{"loadgen", "--target", target + "/fast", "--rate", "20", "--duration", "2s", "--start-offset", "250ms",
		"--slow", "2", "--read-rate", "16m", "--rcvbuf", "8k", "--timeout", "30s", "--shard", shard, "--out", out, "--run-id", "m"}, extra...)
}

// TestMergeShardsAsProcesses: four `slowlab loadgen --shard I/4`
// processes started together by an HTTP start barrier, against the
// embedded sync-2 app with two slow readers, merge (`slowlab merge`) into
// the schedule one process sends, every request once in schedule order,
// each row naming its shard; and into the same slow-client shape: the
// slow readers (shards 0 and 1 hold one each) hold both workers, so /fast
// waits seconds in the merged run as in the one-process run of the same
// load. `slowlab report` draws the merged directory.
func TestMergeShardsAsProcesses(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it runs load generator processes")
	o := appserver.DefaultOptions()
	// 64 MiB at 16 MiB/s: whatever the socket buffers take at once (up to
	// 16 MiB), the slow readers hold the workers for at least 3 s, past the
	// end of the /fast schedule.
	o.LargeSize = 64 << 20
	target, _ := appservertest.Serve(t, o)
	barrier := httptest.NewServer(&loadgen.StartBarrier{Shards: 4})
	defer barrier.Close()
	dirs := make([]string, 4)
	var wg sync.WaitGroup
	for i := range dirs {
		dirs[i] = t.TempDir()
		cmd := exec.Command(os.Args[0], shardArgs(target, dirs[i], fmt.Sprintf("%d/4", i), "--start-barrier", barrier.URL)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := cmd.Wait(); err != nil {
				t.Errorf("shard %d: %v: %s", i, err, stderr.String())
			}
		})
	}
	wg.Wait()
	merged := filepath.Join(t.TempDir(), "merged")
	if code, out, errs := runCmd(t, append([]string{"merge", "--out", merged}, dirs...)...); code != 0 {
		t.Fatalf("merge: exit %d: %s%s", code, out, errs)
	} else {
		t.Log(strings.TrimSpace(out))
	}
	whole := t.TempDir()
	if code, _, errs := runCmd(t, shardArgs(target, whole, "0/1")...); code != 0 {
		t.Fatalf("one process: exit %d: %s", code, errs)
	}

	rows := readRows[recorder.Request](t, merged)
	one := readRows[recorder.Request](t, whole)
	slices.SortFunc(one, func(a, b recorder.Request) int { return a.Seq - b.Seq })
	if len(rows) != 40 || len(one) != 40 {
		t.Fatalf("%d merged requests and %d from one process, want 40 each", len(rows), len(one))
	}
	for i, r := range rows {
		if r.Seq != i || r.Shard != i%4 || math.Abs(r.ScheduledS-one[i].ScheduledS) > 1e-6 {
			t.Errorf("merged row %d: seq %d shard %d scheduled %v s; want seq %d, shard %d, scheduled %v s as one process", i, r.Seq, r.Shard, r.ScheduledS,
				i, i%4, one[i].ScheduledS)
		}
	}
	runs := readRows[recorder.Run](t, merged)
	oneRun := recorder.SummarizeRun(recorder.RunMeta{}, one, readRows[recorder.LargeResponse](t, whole))
	if len(runs) != 1 {
		t.Fatalf("merged runs.csv: %d rows", len(runs))
	}
	run := runs[0]
	t.Logf("merged: %d/%d ok, p50 %v p95 %v ms; one process: %d/%d ok, p50 %v p95 %v ms", run.FastOK, run.FastPlanned, run.P50MS, run.P95MS,
		oneRun.FastOK, oneRun.FastTotal, oneRun.P50MS, oneRun.P95MS)
	if want := recorder.SummarizeRun(recorder.RunMeta{}, rows, nil); run.P95MS != want.P95MS || run.P50MS != want.P50MS || run.FastOK != want.FastOK {
		t.Errorf("merged runs.csv p50 %v p95 %v ok %d, but its rows give %v, %v, %d", run.P50MS, run.P95MS, run.FastOK, want.P50MS, want.P95MS, want.FastOK)
	}
	if run.FastPlanned != 40 || run.FastSent != 40 || run.SlowClients != 2 || len(readRows[recorder.LargeResponse](t, merged)) != 2 {
		t.Errorf("merged run %+v: want 40 planned and sent, 2 slow readers", run)
	}
	if run.P95MS.Value < 1000 || oneRun.P95MS.Value < 1000 {
		t.Errorf("/fast p95 %v ms merged and %v ms in one process: want both starved (seconds) behind the slow readers", run.P95MS, oneRun.P95MS)
	}
	if code, _, errs := runCmd(t, "report", merged); code != 0 {
		t.Errorf("report on the merged directory: exit %d: %s", code, errs)
	}
}

func readRows[T recorder.Row[T]](t *testing.T, dir string) []T {
	t.Helper()
	rows, err := recorder.ReadFile[T](filepath.Join(dir, recorder.FileName[T]()))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestMergeRefuses: shards of different loads, a shard missing or given
// twice, shards not started together, and a request or a slow reader
// (8 of them, two a shard) missing, repeated or in the wrong shard's file
// are each refused with what is wrong, and the merge leaves no results
// behind; the untouched shards merge.
func TestMergeRefuses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer srv.Close()
	barrier := httptest.NewServer(&loadgen.StartBarrier{Shards: 4})
	defer barrier.Close()
	good := make([]string, 4)
	var wg sync.WaitGroup
	for i := range good {
		good[i] = t.TempDir()
		wg.Go(func() {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), []string{"loadgen", "--target", srv.URL + "/fast", "--rate", "40", "--duration", "1s", "--shard", fmt.Sprintf("%d/4", i),
				"--slow", "8", "--start-barrier", barrier.URL, "--out", good[i], "--run-id", "r"}, &stdout, &stderr); code != 0 {
				t.Errorf("shard %d: exit %d: %s", i, code, stderr.String())
			}
		})
	}
	wg.Wait()
	edit := func(t *testing.T, dir, file string, change func(string) string) {
		path := filepath.Join(dir, file)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(change(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// lineIn returns the line of a shard's file whose sixth column (the
	// seq of requests.csv, the client of large-responses.csv) is n.
	lineIn := func(t *testing.T, dir, file string, n int) string {
		b, _ := os.ReadFile(filepath.Join(dir, file))
		for l := range strings.Lines(string(b)) {
			if strings.HasPrefix(l, fmt.Sprintf("r,,,0,0,%d,", n)) {
				return l
			}
		}
		t.Fatalf("no row %d in %s of %s", n, file, dir)
		return ""
	}
	line := func(t *testing.T, dir string, seq int) string { return lineIn(t, dir, "requests.csv", seq) }
	const larges = "large-responses.csv"
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, dirs []string) []string
		err     string
	}{
		{"another load", func(t *testing.T, d []string) []string {
			edit(t, d[2], "loadgen.json", func(s string) string { return strings.Replace(s, `"rate": 40`, `"rate": 50`, 1) })
			return d
		}, `rate "50", but`},
		{"shard twice", func(t *testing.T, d []string) []string { return []string{d[0], d[1], d[2], d[2]} }, "are both shard 2 of 4"},
		{"shard missing", func(t *testing.T, d []string) []string { return d[:3] }, "3 directories for 4 shards: shard [3] missing"},
		{"not started together", func(t *testing.T, d []string) []string {
			for _, dir := range d {
				edit(t, dir, "loadgen.json", func(s string) string {
					i := strings.Index(s, `"start_at": "`)
					j := strings.Index(s[i+13:], `"`)
					return s[:i] + `"start_at": ""` + s[i+13+j+1:]
				})
			}
			return d
		}, "not started together"},
		{"request missing", func(t *testing.T, d []string) []string {
			l := line(t, d[1], 17)
			edit(t, d[1], "requests.csv", func(s string) string { return strings.Replace(s, l, "", 1) })
			return d
		}, "seq 17 (shard 1) is missing"},
		{"request twice", func(t *testing.T, d []string) []string {
			l := line(t, d[3], 23)
			edit(t, d[3], "requests.csv", func(s string) string { return s + l })
			return d
		}, "seq 23 (shard 3) is there twice"},
		{"request in another shard", func(t *testing.T, d []string) []string {
			l := line(t, d[0], 8)
			edit(t, d[0], "requests.csv", func(s string) string { return strings.Replace(s, l, "", 1) })
			edit(t, d[1], "requests.csv", func(s string) string { return s + l })
			return d
		}, "seq 8 shard 0: not a request of shard 1 of 4"},
		{"slow reader missing", func(t *testing.T, d []string) []string {
			l := lineIn(t, d[1], larges, 5)
			edit(t, d[1], larges, func(s string) string { return strings.Replace(s, l, "", 1) })
			return d
		}, "large-responses.csv: slow reader 5 (shard 1) is missing"},
		{"slow reader twice", func(t *testing.T, d []string) []string {
			l := lineIn(t, d[3], larges, 7)
			edit(t, d[3], larges, func(s string) string { return s + l })
			return d
		}, "large-responses.csv: slow reader 7 (shard 3) is there twice"},
		{"slow reader in another shard", func(t *testing.T, d []string) []string {
			l := lineIn(t, d[0], larges, 4)
			edit(t, d[0], larges, func(s string) string { return strings.Replace(s, l, "", 1) })
			edit(t, d[1], larges, func(s string) string { return s + l })
			return d
		}, "run r slow reader 4: not a slow reader of shard 1 of 4 of run r"},
		{"slow reader beyond the load", func(t *testing.T, d []string) []string {
			l := lineIn(t, d[2], larges, 6)
			edit(t, d[2], larges, func(s string) string { return s + strings.Replace(l, "r,,,0,0,6,", "r,,,0,0,10,", 1) })
			return d
		}, "run r slow reader 10: not a slow reader of shard 2 of 4 of run r, which has 8 in all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dirs := make([]string, 4)
			for i, g := range good {
				dirs[i] = t.TempDir()
				if err := os.CopyFS(dirs[i], os.DirFS(g)); err != nil {
					t.Fatal(err)
				}
			}
			out := t.TempDir()
			code, _, errs := runCmd(t, append([]string{"merge", "--out", out}, tc.corrupt(t, dirs)...)...)
			if code == 0 || !strings.Contains(errs, tc.err) {
				t.Errorf("merge: exit %d: %q, want an error with %q", code, errs, tc.err)
			}
			if left, _ := os.ReadDir(out); len(left) != 0 {
				t.Errorf("a refused merge left %d files in --out", len(left))
			}
		})
	}
	out := t.TempDir()
	if code, _, errs := runCmd(t, append([]string{"merge", "--out", out}, good...)...); code != 0 || len(readRows[recorder.Request](t, out)) != 40 {
		t.Fatalf("the good shards: exit %d: %s", code, errs)
	}
	for i, l := range readRows[recorder.LargeResponse](t, out) {
		if l.Client != i || i >= 8 {
			t.Errorf("merged large-responses.csv row %d: client %d, want slow readers 0 to 7 once each", i, l.Client)
		}
	}
	if code, _, errs := runCmd(t, append([]string{"merge", "--out", out}, good...)...); code != 2 || !strings.Contains(errs, "holds requests.csv already") {
		t.Errorf("merge into a merged directory: exit %d: %s", code, errs)
	}
	// The merged directory and a shard's are the load generator's: the
	// report draws them with its section alone (the merged one's runs.csv
	// is no slow-client session's).
	checkManifest(t, out, "merge", loadgendir.Name, "large-responses.csv:csv:", "loadgen.json:json:1.0", "requests.csv:csv:", "runs.csv:csv:")
	for _, dir := range []string{out, good[1]} {
		if code, _, errs := runCmd(t, "report", dir); code != 0 {
			t.Errorf("report %s: exit %d: %s", dir, code, errs)
		} else if ids := sections(t, dir); !slices.Equal(ids, []string{loadgendir.Name}) {
			t.Errorf("report %s: sections %v, want the load generator's", dir, ids)
		}
	}
}
