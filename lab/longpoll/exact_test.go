package longpoll

import (
	"path/filepath"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// A run's p50 and p95 are the exact nearest-rank values of its ok
// probes' latencies as probes.csv holds them, not the histogram's bucket
// (15 ms off at 30 s): the long-polls' 28 s probes of a held sync-2 (the
// values of a real run whose histogram printed p50 28026.3, p95 30083.2)
// and a healthy run's milliseconds, beside another run's rows and failed
// probes, which do not count, after rows the file held before the run
// began (here of the same run id), which are not read.
func TestExactPercentiles(t *testing.T) {
	dir := t.TempDir()
	w, err := recorder.CreateFile[Probe](dir)
	if err != nil {
		t.Fatal(err)
	}
	held := []float64{28020.264, 28031.002, 28009.5, 30081.825, 30083.168, 28001.25, 28019.9, 28022.75, 30079.4, 28018.004}
	fast := []float64{4.237, 12.996, 3.5, 4.1, 5.0, 4.3, 4.2, 12.9, 4.25, 4.24, 4.0, 4.4, 4.5, 4.6, 4.7, 4.8, 4.9, 5.1, 5.2, 13.0}
	var sums = map[string]*ProbeSummary{"held": {}, "fast": {}}
	write := func(p Probe) {
		t.Helper()
		if err := w.Write(p); err != nil {
			t.Fatal(err)
		}
		if s := sums[p.RunID]; s != nil {
			s.Add(p)
		}
	}
	for range 3 {
		if err := w.Write(Probe{RunID: "held", Status: 200, LatencyMS: 1}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, probeFile)
	from := fileSize(path)
	for i := range max(len(held), len(fast)) {
		if i < len(held) {
			write(Probe{RunID: "held", Status: 200, LatencyMS: held[i]})
		}
		if i < len(fast) {
			write(Probe{RunID: "fast", Status: 200, LatencyMS: fast[i]})
		}
		write(Probe{RunID: "other", Status: 200, LatencyMS: 1})
		write(Probe{RunID: "held", Status: 0, Error: "timeout", LatencyMS: 1})
	}
	write(Probe{RunID: "fast", Status: 500, LatencyMS: 0.5})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for id, lat := range map[string][]float64{"held": held, "fast": fast} {
		g := sums[id].Group(Group{RunID: id})
		if err := exactPercentiles(path, from, id, &g); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			got recorder.Maybe
			p   float64
		}{{g.P50MS, 50}, {g.P95MS, 95}} {
			if want := recorder.NearestRank(lat, c.p); c.got != recorder.Some(want) {
				t.Errorf("%s: p%v %v ms, want the exact %v", id, c.p, c.got, want)
			}
		}
	}
	// Read from the start, the earlier rows are more than the histogram
	// counted, and a file that lacks the run's probes: the histogram's
	// values are kept.
	for _, id := range []string{"held", "missing"} {
		g := sums["held"].Group(Group{RunID: "held"})
		want, at := g, from
		if id == "held" {
			at = 0
		}
		if err := exactPercentiles(path, at, id, &g); err != nil || g != want {
			t.Errorf("%s from %d: %+v, %v; want %+v", id, at, g, err, want)
		}
	}
}
