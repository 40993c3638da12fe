package report

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/slowlab/slowlab/recorder"
)

// sweepFile is buffer-sweep's summary: one row per cell (size x rate x
// route x kernel socket-buffer setting).
var sweepFile = recorder.FileName[recorder.SweepCell]()

// BufferSweep is the buffer-sweep section, which buffer-sweep's registration in lab carries.
var BufferSweep = Section{Name: "buffer-sweep", Marker: sweepFile, build: buildBufferSweep}

// sweep is a buffer-sweep results directory as read: its cells in report
// order (kernel in order of first appearance, then condition: route, then
// server in order of first appearance, then slow clients; then size, then
// rate), one row per cell.
type sweep struct {
	dir     string
	cells   []recorder.SweepCell
	kernels []string  // labels, in order of first appearance in sweep.csv
	keys    []condKey // route, server and slow clients, in report order
	sizes   []int64   // every size in sweep.csv, ascending
	rates   []int64   // every rate in sweep.csv, ascending
	repeats int       // rows of sweep.csv that repeat an earlier cell, replaced by it
}

// sweepCellKey is what tells one cell of the grid from another.
type sweepCellKey struct {
	kernel     string
	key        condKey
	size, rate int64
}

func cellKeyOf(c recorder.SweepCell) sweepCellKey {
	return sweepCellKey{c.Kernel, condKey{c.Route, c.Server, c.SlowClients}, c.SizeBytes, c.RateBps}
}

// newSweep orders rows for the report. A cell that appears twice (a
// resumed sweep that ran it again) keeps its last row.
func newSweep(dir string, rows []recorder.SweepCell) *sweep {
	sw := &sweep{dir: dir}
	kernelOrder, serverOrder := map[string]int{}, map[string]int{}
	last := map[sweepCellKey]int{}
	for i, c := range rows {
		if _, seen := kernelOrder[c.Kernel]; !seen {
			kernelOrder[c.Kernel] = len(sw.kernels)
			sw.kernels = append(sw.kernels, c.Kernel)
		}
		if _, seen := serverOrder[c.Server]; !seen {
			serverOrder[c.Server] = len(serverOrder)
		}
		if _, seen := last[cellKeyOf(c)]; seen {
			sw.repeats++
		}
		last[cellKeyOf(c)] = i
	}
	keySeen := map[condKey]bool{}
	for i, c := range rows {
		if last[cellKeyOf(c)] != i {
			continue
		}
		sw.cells = append(sw.cells, c)
		if k := cellKeyOf(c).key; !keySeen[k] {
			keySeen[k] = true
			sw.keys = append(sw.keys, k)
		}
		if !slices.Contains(sw.sizes, c.SizeBytes) {
			sw.sizes = append(sw.sizes, c.SizeBytes)
		}
		if !slices.Contains(sw.rates, c.RateBps) {
			sw.rates = append(sw.rates, c.RateBps)
		}
	}
	slices.Sort(sw.sizes)
	slices.Sort(sw.rates)
	cmpKey := func(a, b condKey) int {
		return cmp.Or(cmp.Compare(routeOrder(a.route), routeOrder(b.route)), strings.Compare(a.route, b.route),
			cmp.Compare(serverOrder[a.server], serverOrder[b.server]), cmp.Compare(a.slow, b.slow))
	}
	slices.SortStableFunc(sw.keys, cmpKey)
	slices.SortStableFunc(sw.cells, func(a, b recorder.SweepCell) int {
		ka, kb := cellKeyOf(a), cellKeyOf(b)
		return cmp.Or(cmp.Compare(kernelOrder[ka.kernel], kernelOrder[kb.kernel]), cmpKey(ka.key, kb.key),
			cmp.Compare(ka.size, kb.size), cmp.Compare(ka.rate, kb.rate))
	})
	return sw
}

// routeOrder ranks routes as docs/experiments.md lists them; others follow.
func routeOrder(route string) int {
	if r, ok := routeRank[route]; ok {
		return r
	}
	return len(routeRank)
}

// of returns the cells of kernel and condition k, in report order.
func (sw *sweep) of(kernel string, k condKey) []recorder.SweepCell {
	var out []recorder.SweepCell
	for _, c := range sw.cells {
		if c.Kernel == kernel && cellKeyOf(c).key == k {
			out = append(out, c)
		}
	}
	return out
}

// keysOf returns the conditions kernel has cells of, in report order.
func (sw *sweep) keysOf(kernel string) []condKey {
	var out []condKey
	for _, k := range sw.keys {
		if len(sw.of(kernel, k)) > 0 {
			out = append(out, k)
		}
	}
	return out
}

// cellDir is the absolute (or working-directory relative) path of a
// cell's results directory; sweep.csv gives it relative to the sweep's.
func (sw *sweep) cellDir(c recorder.SweepCell) string {
	if filepath.IsAbs(c.Dir) {
		return c.Dir
	}
	return filepath.Join(sw.dir, filepath.FromSlash(c.Dir))
}

// missingCells names the cells of the grid (every size x rate of each
// kernel and condition that has any) that sweep.csv does not have: what an
// interrupted sweep has not run yet.
func (sw *sweep) missingCells() []string {
	have := map[sweepCellKey]bool{}
	for _, c := range sw.cells {
		have[cellKeyOf(c)] = true
	}
	var out []string
	for _, kernel := range sw.kernels {
		for _, k := range sw.keysOf(kernel) {
			for _, size := range sw.sizes {
				for _, rate := range sw.rates {
					if !have[sweepCellKey{kernel, k, size, rate}] {
						out = append(out, fmt.Sprintf("%s %s at %s (kernel %s)", k.route, sizeText(size), rateText(rate), kernel))
					}
				}
			}
		}
	}
	return out
}

// sizeText formats a response size: "16 MiB", "512 KiB".
func sizeText(b int64) string {
	if b >= 1<<20 && b%(1<<20) != 0 {
		return mibNumber(b) + " MiB"
	}
	return size(int(b))
}

// mibNumber writes bytes as a number of MiB: exact when it is a whole
// number of KiB ("0.5", "16"), else three significant digits.
func mibNumber(b int64) string {
	v := float64(b) / (1 << 20)
	if b%1024 == 0 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// rateText formats a read rate in MiB/s: "0.5 MiB/s".
func rateText(bps int64) string { return mibNumber(bps) + " MiB/s" }

func buildBufferSweep(dir string) (*section, error) {
	s := &section{id: "buffer-sweep", title: "buffer-sweep",
		intro: "Slow downloads of each response size read at each rate, on each route, under each kernel " +
			"socket-buffer setting (issue #19's buffer-sweep): where proxy buffering off stops protecting a synchronous " +
			"app. Each size × rate cell is a matrix of runs of slow downloads with its own results directory; " + sweepFile +
			" has one row per cell and route. The path's capacity C, the most bytes of one download the path between " +
			"the app and the client holds, is predicted before each cell runs from configuration only (the namespace's " +
			"tcp_wmem and tcp_rmem, the app's, the proxy's and the client's buffers), and the app's send time from it as " +
			"max(0, size − C) / rate; beside them, what was measured: the most bytes one download had in flight " +
			"(app_written − client_read in the cell's hops.csv) and the app's send time from its send log, medians over " +
			"the cell's downloads. The environment table above is the sweep's own session; the kernel settings each cell " +
			"ran under are in the first table below."}
	path := filepath.Join(dir, sweepFile)
	if st, err := os.Stat(path); err == nil && st.Size() == 0 {
		s.skip("%s is empty (not even its header): the sweep ended before its first cell; no figures or tables.", sweepFile)
		return s, nil
	}
	rows, err := recorder.ReadFile[recorder.SweepCell](path)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		s.skip("%s has no cells: the sweep ended (or was interrupted) before its first cell completed; "+
			"no figures or tables.", sweepFile)
		return s, nil
	}
	sw := newSweep(dir, rows)
	if missing := sw.missingCells(); len(missing) > 0 {
		s.skip("%d cells of the grid are not in %s (an interrupted sweep?); they are blank in the heatmaps: %s.",
			len(missing), sweepFile, strings.Join(missing, "; "))
	}
	if sw.repeats > 0 {
		s.skip("%d rows of %s repeat an earlier cell (run again); the last row of each cell is shown.", sw.repeats, sweepFile)
	}

	kt, err := kernelTable(sw)
	if err != nil {
		return nil, err
	}
	s.addTable(kt)
	for i, kernel := range sw.kernels {
		if f, why := sweepHeatmap(sw, kernel, heatmapName(sw.kernels, i)); f != nil {
			s.addFigure(f)
		} else {
			s.skip("/fast p95 heatmap of kernel %s left out: %s.", kernel, why)
		}
	}
	if f, why := predictionFigure(sw); f != nil {
		s.addFigure(f)
	} else {
		s.skip("Predicted against observed app_send_s left out: %s.", why)
	}
	f, skipped, err := hopsFigure(sw)
	if err != nil {
		return nil, err
	}
	for _, why := range skipped {
		s.skip("Hop bytes over time: %s.", why)
	}
	if f != nil {
		s.addFigure(f)
	}
	s.addTable(cellsTable(sw))
	return s, nil
}

// heatmapName is the file name of kernel i's heatmap: named after its
// label, made unique when two labels make the same name.
func heatmapName(kernels []string, i int) string {
	name := func(j int) string {
		if sl := slug(kernels[j]); sl != "" {
			return "buffer-sweep-p95-" + sl
		}
		return fmt.Sprintf("buffer-sweep-p95-kernel-%d", j+1)
	}
	n := name(i)
	for j := range i {
		if name(j) == n {
			return fmt.Sprintf("%s-%d", n, i+1)
		}
	}
	return n
}

// kernelTable shows each kernel label's socket-buffer settings: tcp_wmem
// and tcp_rmem as sweep.csv has them, the others from the environment.json
// of the kernel's first cell directory that has one.
func kernelTable(sw *sweep) (*table, error) {
	t := &table{Caption: "Kernel socket-buffer settings the cells ran under, per kernel label: tcp_wmem and tcp_rmem as " +
		sweepFile + " records them (read in the network namespace the cells ran in); the others as the environment.json " +
		"of the kernel's first cell directory records them (– where none does). Sizes in binary units; hover a " +
		"value for what the setting means.",
		Head: []string{"kernel", "cells"}}
	for _, ns := range netSettings {
		t.Head = append(t.Head, ns.name)
	}
	t.Head = append(t.Head, "network namespace", "from")
	var mismatch []string
	for _, kernel := range sw.kernels {
		n := 0
		var wmem, rmem string
		for _, c := range sw.cells {
			if c.Kernel == kernel {
				n++
				wmem, rmem = cmp.Or(wmem, c.TCPWmem), cmp.Or(rmem, c.TCPRmem)
			}
		}
		net, from, err := kernelNet(sw, kernel)
		if err != nil {
			return nil, err
		}
		fromSweep := &recorder.NetSettings{TCPWmem: wmem, TCPRmem: rmem}
		if net == nil {
			net = &recorder.NetSettings{}
		}
		if net.TCPWmem != "" && wmem != "" && net.TCPWmem != wmem || net.TCPRmem != "" && rmem != "" && net.TCPRmem != rmem {
			mismatch = append(mismatch, fmt.Sprintf("kernel %s: %s has tcp_wmem %q, tcp_rmem %q, %s/environment.json %q, %q",
				kernel, sweepFile, wmem, rmem, from, net.TCPWmem, net.TCPRmem))
		}
		row := []Cell{Text(kernel), Int(n)}
		for _, ns := range netSettings {
			v := ns.value(net)
			if sv := ns.value(fromSweep); sv != "" {
				v = sv // tcp_wmem, tcp_rmem: sweep.csv's
			}
			if v == "" {
				row = append(row, Cell{Text: "–", Title: "not recorded"})
				continue
			}
			row = append(row, Cell{Text: ns.show(v), Title: ns.title})
		}
		if from == "" {
			row = append(row, Cell{Text: "–", Title: "not recorded"}, Text(sweepFile))
		} else {
			row = append(row, Text(orNotRecorded(net.Namespace)), Text(sweepFile+", "+from+"/environment.json"))
		}
		t.Rows = append(t.Rows, row)
	}
	if len(mismatch) > 0 {
		t.Caption += " The two differ: " + strings.Join(mismatch, "; ") + "."
	}
	return t, nil
}

// kernelNet returns the net settings recorded by the first cell of kernel
// whose results directory has an environment.json with them, and that
// directory as sweep.csv names it; nil and "" when none has.
func kernelNet(sw *sweep, kernel string) (*recorder.NetSettings, string, error) {
	seen := map[string]bool{}
	for _, c := range sw.cells {
		if c.Kernel != kernel || c.Dir == "" || seen[c.Dir] {
			continue
		}
		seen[c.Dir] = true
		sessions, err := readEnvironment(sw.cellDir(c))
		if err != nil {
			return nil, "", err
		}
		for _, s := range sessions {
			if s.Net != nil {
				return s.Net, c.Dir, nil
			}
		}
	}
	return nil, "", nil
}

// cellsTable lists every cell of sweep.csv.
func cellsTable(sw *sweep) *table {
	t := &table{Caption: "Cells (" + sweepFile + "): /fast p95 is the median over the cell's ok runs of each run's " +
		"nearest-rank 95th percentile. Capacity and app_send predicted: before the run, from configuration only; " +
		"measured: medians over the cell's complete downloads, as are client_receive. Error = (measured − predicted) / " +
		"predicted, empty where size ≤ predicted capacity: the model says the path holds the whole response (app_send " +
		"predicted 0), and a download never has more than its size in flight, so the samples cannot show the capacity. " +
		"Directory: the cell's results directory (its runs.csv, hops.csv, ...), relative to this one.",
		Head: []string{"kernel", "route", "server", "slow clients", "size", "read rate (MiB/s)", "runs ok",
			"/fast p95 (ms)", "capacity predicted (MiB)", "capacity measured (MiB)", "capacity error (%)",
			"app_send predicted (s)", "app_send measured (s)", "app_send error (%)", "size > predicted capacity",
			"client_receive (s)", "directory"}}
	if len(sw.cells) > 24 {
		t.Details = fmt.Sprintf("All %d cells (%s)", len(sw.cells), sweepFile)
	}
	pct := func(v float64) Cell { return Fixed(v, 1) }
	mib := func(v float64) Cell { return Fixed(v/(1<<20), 2) }
	for _, c := range sw.cells {
		above, capacityError := notMeasured, recorder.None()
		if c.CapacityPredictedBytes.Valid {
			above = Text("no")
			if float64(c.SizeBytes) > c.CapacityPredictedBytes.Value {
				above, capacityError = Text("yes"), errorOf(c.CapacityMeasuredBytes, c.CapacityPredictedBytes)
			}
		}
		t.Rows = append(t.Rows, []Cell{Text(c.Kernel), Text(c.Route), Text(c.Server), Int(c.SlowClients),
			{Text: sizeText(c.SizeBytes), Title: fmt.Sprint(c.SizeBytes, " bytes"), Num: true},
			{Text: mibNumber(c.RateBps), Title: fmt.Sprint(c.RateBps, " bytes/s"), Num: true},
			{Text: fmt.Sprintf("%d/%d", c.RunsOK, c.Runs), Num: true},
			Opt(c.FastP95MS, Sig), Opt(c.CapacityPredictedBytes, mib), Opt(c.CapacityMeasuredBytes, mib),
			Opt(capacityError, pct),
			Opt(c.AppSendPredictedS, seconds), Opt(c.AppSendMeasuredS, seconds),
			Opt(errorOf(c.AppSendMeasuredS, c.AppSendPredictedS), pct), above,
			Opt(c.ClientReceiveS, seconds), Text(c.Dir)})
	}
	return t
}

// errorOf is how far measured is from predicted, in percent of the
// prediction; none where either is missing or the prediction is 0.
func errorOf(measured, predicted recorder.Maybe) recorder.Maybe {
	if !measured.Valid || !predicted.Valid || predicted.Value == 0 {
		return recorder.None()
	}
	return recorder.Some((measured.Value - predicted.Value) / predicted.Value * 100)
}
