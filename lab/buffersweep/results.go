package buffersweep

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/slowlab/slowlab/lab/slowclient"
	"github.com/slowlab/slowlab/report"
)

// sweepDir is a buffer-sweep results directory as the report reads it:
// its cells in report order (kernel in order of first appearance, then
// condition as in slow-client, then size, then rate), one row per cell.
type sweepDir struct {
	dir     string
	cells   []Cell
	kernels []string    // labels, in order of first appearance in sweep.csv
	conds   []condition // route, server and slow clients, in report order
	sizes   []int64     // every size in sweep.csv, ascending
	rates   []int64     // every rate in sweep.csv, ascending
	repeats int         // rows of sweep.csv that repeat an earlier cell, replaced by it
}

// condition is a slow-client condition: the route, server and slow
// clients of a cell's runs.
type condition struct {
	route, server string
	slow          int
}

func (k condition) label() string {
	return fmt.Sprintf("%s, %s, %d slow", k.route, k.server, k.slow)
}

// gridKey is what tells one cell of the grid from another.
type gridKey struct {
	kernel     string
	cond       condition
	size, rate int64
}

func (c Cell) condition() condition { return condition{c.Route, c.Server, c.SlowClients} }
func (c Cell) gridKey() gridKey     { return gridKey{c.Kernel, c.condition(), c.SizeBytes, c.RateBps} }

// newSweepDir orders rows for the report. A cell that appears twice (a
// resumed sweep that ran it again) keeps its last row.
func newSweepDir(dir string, rows []Cell) *sweepDir {
	sw := &sweepDir{dir: dir}
	var servers []string // in order of first appearance
	last := map[gridKey]int{}
	for i, c := range rows {
		if !slices.Contains(sw.kernels, c.Kernel) {
			sw.kernels = append(sw.kernels, c.Kernel)
		}
		if !slices.Contains(servers, c.Server) {
			servers = append(servers, c.Server)
		}
		if _, seen := last[c.gridKey()]; seen {
			sw.repeats++
		}
		last[c.gridKey()] = i
	}
	for i, c := range rows {
		if last[c.gridKey()] != i {
			continue
		}
		sw.cells = append(sw.cells, c)
		if !slices.Contains(sw.conds, c.condition()) {
			sw.conds = append(sw.conds, c.condition())
		}
		sw.sizes, sw.rates = append(sw.sizes, c.SizeBytes), append(sw.rates, c.RateBps)
	}
	slices.Sort(sw.sizes)
	slices.Sort(sw.rates)
	sw.sizes, sw.rates = slices.Compact(sw.sizes), slices.Compact(sw.rates)
	cmpCond := func(a, b condition) int {
		return cmp.Or(slowclient.CompareRoutes(a.route, b.route), cmp.Compare(slices.Index(servers, a.server), slices.Index(servers, b.server)), cmp.Compare(a.slow, b.slow))
	}
	slices.SortStableFunc(sw.conds, cmpCond)
	slices.SortStableFunc(sw.cells, func(a, b Cell) int {
		return cmp.Or(cmp.Compare(slices.Index(sw.kernels, a.Kernel), slices.Index(sw.kernels, b.Kernel)), cmpCond(a.condition(), b.condition()),
			cmp.Compare(a.SizeBytes, b.SizeBytes), cmp.Compare(a.RateBps, b.RateBps))
	})
	return sw
}

// of returns the cells of kernel and condition k, in report order.
func (sw *sweepDir) of(kernel string, k condition) []Cell {
	return slices.DeleteFunc(slices.Clone(sw.cells), func(c Cell) bool { return c.Kernel != kernel || c.condition() != k })
}

// condsOf returns the conditions kernel has cells of, in report order.
func (sw *sweepDir) condsOf(kernel string) []condition {
	return slices.DeleteFunc(slices.Clone(sw.conds), func(k condition) bool { return len(sw.of(kernel, k)) == 0 })
}

// mem returns kernel's tcp_wmem and tcp_rmem as sweep.csv has them: the
// first of its cells' that is recorded.
func (sw *sweepDir) mem(kernel string) (wmem, rmem string) {
	for _, c := range sw.cells {
		if c.Kernel == kernel {
			wmem, rmem = cmp.Or(wmem, c.TCPWmem), cmp.Or(rmem, c.TCPRmem)
		}
	}
	return wmem, rmem
}

// cellDir is the absolute (or working-directory relative) path of a
// cell's results directory; sweep.csv gives it relative to the sweep's.
func (sw *sweepDir) cellDir(c Cell) string {
	if filepath.IsAbs(c.Dir) {
		return c.Dir
	}
	return filepath.Join(sw.dir, filepath.FromSlash(c.Dir))
}

// missingCells names the cells of the grid (every size x rate of each
// kernel and condition that has any) that sweep.csv does not have: what an
// interrupted sweep has not run yet.
func (sw *sweepDir) missingCells() []string {
	have := map[gridKey]bool{}
	for _, c := range sw.cells {
		have[c.gridKey()] = true
	}
	var out []string
	for _, kernel := range sw.kernels {
		for _, k := range sw.condsOf(kernel) {
			for _, size := range sw.sizes {
				for _, rate := range sw.rates {
					if !have[gridKey{kernel, k, size, rate}] {
						out = append(out, fmt.Sprintf("%s %s at %s (kernel %s)", k.route, report.SizeText(size), rateText(rate), kernel))
					}
				}
			}
		}
	}
	return out
}

// rateText formats a read rate in MiB/s: "0.5 MiB/s".
func rateText(bps int64) string { return report.MiBText(bps) + " MiB/s" }
