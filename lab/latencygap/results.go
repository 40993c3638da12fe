package latencygap

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// resultRows are the conditions of runs that completed, and of one
// interrupted: this session's as measured, resumed ones from gap.csv and
// gap-path.csv (gap-pages.csv for a load condition), read once if needed.
func (s *session) resultRows(runs []RunRow) ([]Row, []Page, error) {
	diskRows, diskPages := sync.OnceValues(s.readRows), sync.OnceValues(s.readPages)
	var rows []Row
	var pages []Page
	for _, r := range runs {
		interrupted := r.Status == recorder.RunAborted && s.ctx.Err() != nil
		if r.Status != recorder.RunOK && !interrupted {
			continue
		}
		if s.loads[lab.ConditionOf(r.RunID)] { // its spec's id: no .repN, maybe .tryN
			ps, err := runResult(s.env.Out, r.RunID, s.pages, diskPages, pageFile)
			if err != nil {
				return rows, pages, err
			}
			pages = append(pages, ps...)
			continue
		}
		row, err := runResult(s.env.Out, r.RunID, s.rows, diskRows, gapFile+" and "+pathFile)
		if err != nil {
			return rows, pages, err
		}
		rows = append(rows, row)
	}
	return rows, pages, nil
}

// runResult is run id's results: this session's (measured), else what
// disk holds of a resumed run. files names dir's files in the error of a
// run they lack.
func runResult[T any](dir, id string, measured map[string]T, disk func() (map[string]T, error), files string) (T, error) {
	if v, ok := measured[id]; ok {
		return v, nil
	}
	d, err := disk()
	v, ok := d[id]
	if err == nil && !ok {
		err = fmt.Errorf("resume %s: run %s has no row in %s", dir, id, files)
	}
	return v, err
}

// readRows reads readConditions' rows by run id.
func (s *session) readRows() (map[string]Row, error) {
	rows, _, err := readConditions(s.env.Out, false)
	if err != nil {
		return nil, err
	}
	out := map[string]Row{}
	for _, r := range rows {
		out[r.Gap.RunID] = r
	}
	return out, nil
}

// readConditions reads dir's gap.csv rows in order, each with its
// gap-path.csv row (by run id; a zero Path where it has none). Without
// gap-path.csv, an error unless optional, every Path is zero and paths
// is false.
func readConditions(dir string, optional bool) (rows []Row, paths bool, err error) {
	gaps, err := recorder.ReadFile[Gap](filepath.Join(dir, gapFile))
	if err != nil {
		return nil, false, err
	}
	ps, err := recorder.ReadFile[Path](filepath.Join(dir, pathFile))
	switch {
	case optional && errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, false, err
	}
	byRun := map[string]Path{}
	for _, p := range ps {
		byRun[p.RunID] = p
	}
	for _, g := range gaps {
		rows = append(rows, Row{Gap: g, Path: byRun[g.RunID]})
	}
	return rows, err == nil, nil
}
