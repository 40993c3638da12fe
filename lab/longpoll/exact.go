package longpoll

import (
	"bufio"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/recorder"
)

// okProbe is ProbeSummary.Add's rule: a probe that succeeded.
func okProbe(p Probe) bool { return p.Error == "" && p.Status >= 200 && p.Status < 400 }

// exactPercentiles makes g's p50 and p95 the exact nearest-rank values
// of the run's successful probes as path (probes.csv) holds them, what a
// reader recomputes from the file; the histogram's are within 1/2048 of
// them, which at a 30 s latency is 15 ms, over the printed precision.
// It keeps no more than the latencies near each estimate: those within
// twice the histogram's error of it, and counts the rest below. Where the
// file does not hold the probes the histogram counted (a row not
// written), g keeps the histogram's values. It reads the rows from
// offset from on (the file's size when the run began), so a session's
// later runs do not read its earlier runs' probes again.
func exactPercentiles(path string, from int64, runID string, g *Group) error {
	type band struct {
		p      float64
		est    recorder.Maybe
		lo, hi float64
		below  int
		in     []float64
		set    *recorder.Maybe
	}
	bands := []*band{{p: 50, est: g.P50MS, set: &g.P50MS}, {p: 95, est: g.P95MS, set: &g.P95MS}}
	for _, b := range bands {
		slack := b.est.Value/1024 + 0.001 // the histogram's error twice, and the file's rounding
		b.lo, b.hi = b.est.Value-slack, b.est.Value+slack
	}
	n := 0
	err := eachProbeFrom(path, from, func(p Probe) {
		if p.RunID != runID || !okProbe(p) {
			return
		}
		n++
		for _, b := range bands {
			switch {
			case p.LatencyMS < b.lo:
				b.below++
			case p.LatencyMS <= b.hi:
				b.in = append(b.in, p.LatencyMS)
			}
		}
	})
	if err != nil || n != g.OK {
		return err
	}
	for _, b := range bands {
		rank := recorder.Rank(n, b.p) - b.below
		if !b.est.Valid || rank < 1 || rank > len(b.in) {
			continue
		}
		slices.Sort(b.in)
		*b.set = recorder.Some(b.in[rank-1])
	}
	return nil
}

// eachProbeFrom calls fn with every row of the probes file at path from
// byte offset from on (the header's end at least), read under its header.
func eachProbeFrom(path string, from int64, fn func(Probe)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	header, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return err
	}
	from = max(from, int64(len(header)))
	body := io.NewSectionReader(f, from, math.MaxInt64-from)
	rr, err := recorder.NewReader[Probe](io.MultiReader(strings.NewReader(header), body))
	if err != nil {
		return err
	}
	for {
		p, err := rr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		fn(p)
	}
}

// fileSize is the size of the file at path, 0 when it cannot be read.
func fileSize(path string) int64 {
	if fi, err := os.Stat(path); err == nil {
		return fi.Size()
	}
	return 0
}
