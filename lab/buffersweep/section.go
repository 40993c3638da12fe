package buffersweep

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Section is the buffer-sweep section of the report, which the
// registration carries: the kernel settings the cells ran under, the
// figures (drawings) and every cell.
var Section = report.NewSection(Name, sweepFile, func(dir string) (*report.Part, error) {
	p := report.NewPart(Name, "Slow downloads of each response size read at each rate, on each route, under each kernel "+
		"socket-buffer setting (issue #19's buffer-sweep): where proxy buffering off stops protecting a synchronous "+
		"app. Each size × rate cell is a slow-client run matrix with its own results directory; "+sweepFile+
		" has one row per cell and route. The path's capacity C, the most bytes of one download the path between "+
		"the app and the client holds, is predicted before each cell runs from configuration only (the namespace's "+
		"tcp_wmem and tcp_rmem, the app's, the proxy's and the client's buffers), and the app's send time from it as "+
		"max(0, size − C) / rate; beside them, what was measured: the most bytes one download had in flight "+
		"(app_written − client_read in the cell's hops.csv) and the app's send time from its send log, medians over "+
		"the cell's downloads. The environment table above is the sweep's own session; the kernel settings each cell "+
		"ran under are in the first table below.")
	path := filepath.Join(dir, sweepFile)
	if st, err := os.Stat(path); err == nil && st.Size() == 0 {
		p.Skip("%s is empty (not even its header): the sweep ended before its first cell; no figures or tables.", sweepFile)
		return p, nil
	}
	rows, err := recorder.ReadFile[Cell](path)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		p.Skip("%s has no cells: the sweep ended (or was interrupted) before its first cell completed; "+
			"no figures or tables.", sweepFile)
		return p, nil
	}
	sw := newSweepDir(dir, rows)
	if missing := sw.missingCells(); len(missing) > 0 {
		p.Skip("%d cells of the grid are not in %s (an interrupted sweep?); they are blank in the heatmaps: %s.",
			len(missing), sweepFile, strings.Join(missing, "; "))
	}
	if sw.repeats > 0 {
		p.Skip("%d rows of %s repeat an earlier cell (run again); the last row of each cell is shown.", sw.repeats, sweepFile)
	}
	kernels, mismatch, err := kernelRows(sw)
	if err != nil {
		return nil, err
	}
	kt := kernelsTable
	if len(mismatch) > 0 {
		kt.Caption += " The two differ: " + strings.Join(mismatch, "; ") + "."
	}
	report.AddTable(p, &kt, kernels)
	if _, err := addFigures(p, sw); err != nil {
		return nil, err
	}
	if len(sw.cells) > 24 {
		report.AddFoldedTable(p, &cellsTable, sw.cells, fmt.Sprintf("All %d cells (%s)", len(sw.cells), sweepFile))
	} else {
		report.AddTable(p, &cellsTable, sw.cells)
	}
	return p, nil
})

// addFigures adds sw's figures to p, in order, or notes what each left
// out: a /fast p95 heatmap per kernel setting, the measured against the
// predicted send time, and where one download's bytes were over time. It
// returns the figures drawn; err is a cell's results file that does not
// parse.
func addFigures(p *report.Part, sw *sweepDir) ([]*report.Drawing, error) {
	var drawn []*report.Drawing
	add := func(d *report.Drawing) {
		p.AddDrawing(d)
		drawn = append(drawn, d)
	}
	for i, kernel := range sw.kernels {
		if d, why := heatmap(sw, kernel, heatmapName(sw.kernels, i)); d != nil {
			add(d)
		} else {
			p.Skip("/fast p95 heatmap of kernel %s left out: %s.", kernel, why)
		}
	}
	if d, why := predictionFigure(sw); d != nil {
		add(d)
	} else {
		p.Skip("Predicted against observed app_send_s left out: %s.", why)
	}
	d, skipped, err := hopsFigure(sw)
	if err != nil {
		return nil, err
	}
	for _, why := range skipped {
		p.Skip("Hop bytes over time: %s.", why)
	}
	if d != nil {
		add(d)
	}
	return drawn, nil
}

// kernelRow is a kernel setting of the sweep: its cells and the socket
// buffer settings they ran under.
type kernelRow struct {
	Kernel string
	Cells  int
	Net    recorder.NetSettings // tcp_wmem and tcp_rmem as sweep.csv has them, the others as From's environment.json
	From   string               // the cell directory whose environment.json recorded Net, as sweep.csv names it; "" if none
}

// kernelRows are sw's kernel settings: tcp_wmem and tcp_rmem as sweep.csv
// has them, the others from the environment.json of the kernel's first
// cell directory that has one. mismatch names each kernel whose
// environment.json says other tcp_wmem or tcp_rmem than sweep.csv.
func kernelRows(sw *sweepDir) (rows []kernelRow, mismatch []string, err error) {
	for _, kernel := range sw.kernels {
		row := kernelRow{Kernel: kernel, Cells: len(slices.DeleteFunc(slices.Clone(sw.cells), func(c Cell) bool { return c.Kernel != kernel }))}
		if row.Net, row.From, err = kernelNet(sw, kernel); err != nil {
			return nil, nil, err
		}
		wmem, rmem := sw.mem(kernel)
		if row.Net.TCPWmem != "" && wmem != "" && row.Net.TCPWmem != wmem || row.Net.TCPRmem != "" && rmem != "" && row.Net.TCPRmem != rmem {
			mismatch = append(mismatch, fmt.Sprintf("kernel %s: %s has tcp_wmem %q, tcp_rmem %q, %s/environment.json %q, %q",
				kernel, sweepFile, wmem, rmem, row.From, row.Net.TCPWmem, row.Net.TCPRmem))
		}
		row.Net.TCPWmem, row.Net.TCPRmem = cmp.Or(wmem, row.Net.TCPWmem), cmp.Or(rmem, row.Net.TCPRmem)
		rows = append(rows, row)
	}
	return rows, mismatch, nil
}

// kernelNet returns the net settings recorded by the first cell of kernel
// whose results directory has an environment.json with them, and that
// directory as sweep.csv names it; none and "" when none has.
func kernelNet(sw *sweepDir, kernel string) (recorder.NetSettings, string, error) {
	seen := map[string]bool{}
	for _, c := range sw.cells {
		if c.Kernel != kernel || c.Dir == "" || seen[c.Dir] {
			continue
		}
		seen[c.Dir] = true
		sessions, err := recorder.ReadEnvironment(sw.cellDir(c))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return recorder.NetSettings{}, "", err
		}
		for _, s := range sessions {
			if s.Net != nil {
				return *s.Net, c.Dir, nil
			}
		}
	}
	return recorder.NetSettings{}, "", nil
}

// kernelsTable shows each kernel setting's socket-buffer settings, in the
// report only (the CLI prints tcp_wmem and tcp_rmem above each kernel's
// cells).
var kernelsTable = report.Table[kernelRow]{
	Caption: "Kernel socket-buffer settings the cells ran under, per kernel label: tcp_wmem and tcp_rmem as " +
		sweepFile + " records them (read in the network namespace the cells ran in); the others as the environment.json " +
		"of the kernel's first cell directory records them (– where none does). Sizes in binary units; hover a " +
		"value for what the setting means.",
	Cols: slices.Concat(
		[]report.Column[kernelRow]{
			report.Col("kernel", func(k *kernelRow) report.Cell { return report.Text(k.Kernel) }),
			report.Col("cells", func(k *kernelRow) report.Cell { return report.Int(k.Cells) }),
		},
		report.NetSettingCols(func(k *kernelRow) *recorder.NetSettings { return &k.Net }),
		[]report.Column[kernelRow]{
			report.Col("network namespace", func(k *kernelRow) report.Cell {
				if k.From == "" {
					return report.Cell{Text: "–", Title: "not recorded"}
				}
				return report.Text(cmp.Or(k.Net.Namespace, "not recorded"))
			}),
			report.Col("from", func(k *kernelRow) report.Cell {
				if k.From == "" {
					return report.Text(sweepFile)
				}
				return report.Text(sweepFile + ", " + k.From + "/environment.json")
			}),
		}),
}
