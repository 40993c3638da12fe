package buffersweep

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// cellKey names one size x rate cell of a kernel setting in sweep.csv.
func cellKey(kernel string, size, rate int64) string {
	return kernel + "/" + strconv.FormatInt(size, 10) + "/" + strconv.FormatInt(rate, 10)
}

func rowKey(r Cell) string { return cellKey(r.Kernel, r.SizeBytes, r.RateBps) }

// complete is the set of cells of rows that are complete: a row for each
// of c's routes, each with every repetition ok. Like lab.Matrix, which
// runs again every run that is not ok, a cell with a failed or aborted
// run (an interrupted cell's rows say so) is not complete.
func (c *Config) complete(rows []Cell) map[string]bool {
	ok := map[string][]string{} // cell -> its routes with every run ok
	for _, r := range rows {
		if r.RunsOK == c.Reps && !slices.Contains(ok[rowKey(r)], r.Route) {
			ok[rowKey(r)] = append(ok[rowKey(r)], r.Route)
		}
	}
	done := map[string]bool{}
	for k, routes := range ok {
		if len(routes) == len(c.Routes) {
			done[k] = true
		}
	}
	return done
}

// resume checks env.Out was run with c's settings (lab.CheckResume: the
// error names each field that differs) and keeps in its sweep.csv only
// the complete cells' rows, which it returns with their keys. The other
// cells run again, each resuming its slow-client matrix in its own
// directory. A session that ended before sweep.csv was made has none.
func (c *Config) resume(env *lab.Env) ([]Cell, map[string]bool, error) {
	if err := lab.CheckResume(env, c); err != nil {
		return nil, nil, err
	}
	path := filepath.Join(env.Out, sweepFile)
	rows, err := recorder.ReadFile[Cell](path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	done := c.complete(rows)
	kept := slices.DeleteFunc(rows, func(r Cell) bool { return !done[rowKey(r)] })
	if err := lab.ReplaceRows(env.Out, kept); err != nil {
		return nil, nil, fmt.Errorf("resume %s: %w", path, err)
	}
	fmt.Fprintf(progress(env), "resume: %d cells completed in %s, %d rows kept\n", len(done), env.Out, len(kept))
	return kept, done, nil
}

// started reports whether dir holds a session that recorded its
// scenario: one to resume rather than start.
func started(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, lab.ScenarioFile))
	return err == nil
}
