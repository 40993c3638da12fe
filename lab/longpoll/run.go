package longpoll

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Result is what Run wrote: every run of the session, resumed ones first
// (longpoll-runs.csv, its ReasonsFile; probes.csv has each probe's
// error), and Groups, the figures of those that ended ok (groups.csv), in
// the same order.
type Result struct {
	lab.MatrixResult[RunRow]
	Groups []Group
}

// AllFailed implements lab.Result: no run ended ok, or none got a probe
// through.
func (r *Result) AllFailed() bool {
	return r.MatrixResult.AllFailed() || len(r.Groups) > 0 && !slices.ContainsFunc(r.Groups, func(g Group) bool { return g.OK > 0 })
}

// RunSpec is one run of the matrix: a condition's repetition.
type RunSpec struct {
	Cond Condition
	Rep  int
}

// ID implements lab.Planned.
func (s RunSpec) ID() string { return s.Cond.RunID(s.Rep) }

// Runs are the matrix's runs: every condition Reps times in a row.
func (c *Config) Runs() []RunSpec {
	var specs []RunSpec
	for _, cond := range c.Conditions {
		for rep := 1; rep <= c.Reps; rep++ {
			specs = append(specs, RunSpec{Cond: cond, Rep: rep})
		}
	}
	return specs
}

// Run implements lab.Config: every condition Reps times in a row, each on
// a fresh stack (direct route), through lab.Matrix, writing probes.csv,
// longpoll-runs.csv (every run and how it ended), groups.csv (the figures
// of each run that ended ok) and resource-samples.csv.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var f *files
	measured := map[string]Group{} // this session's runs, by id
	m := &lab.Matrix[RunSpec, RunRow]{Specs: c.Runs(),
		Files:    []string{probeFile, groupFile, recorder.FileName[recorder.ResourceSample]()}, // besides longpoll-runs.csv
		Expected: func(RunSpec) time.Duration { return time.Duration(c.Lead + c.Seconds) },
		// Open creates the session's files in dir, or opens them to append.
		Open: func(dir string, resume bool) (lab.RowWriter[RunRow], func() error, error) {
			f = &files{measured: measured}
			var err error
			if f.probes, err = lab.OpenFile[Probe](dir, resume); err == nil {
				if f.groups, err = lab.OpenFile[Group](dir, resume); err == nil {
					if f.runs, err = lab.OpenFile[RunRow](dir, resume); err == nil {
						f.resources, err = lab.OpenFile[recorder.ResourceSample](dir, resume)
					}
				}
			}
			if err != nil {
				return nil, nil, errors.Join(err, f.close())
			}
			return f, f.close, nil
		},
		Measure: func(ctx context.Context, s RunSpec, id string) (RunRow, error) {
			run, g, err := c.measure(ctx, env, s, id, f)
			measured[id] = g
			return run, err
		},
		Line: func(r RunRow) string { return runLine(r, measured[r.RunID]) }}
	mr, err := lab.RunMatrix(ctx, env, c, m, nil)
	if mr.Runs == nil {
		return nil, err
	}
	groups, gerr := completedGroups(env.Out, mr.Runs, measured)
	return &Result{MatrixResult: *mr, Groups: groups}, errors.Join(err, gerr)
}

// completedGroups are the groups of the runs that ended ok, in their
// order: this session's as measured, resumed ones as groups.csv has them.
func completedGroups(dir string, runs []RunRow, measured map[string]Group) ([]Group, error) {
	var resumed map[string]Group
	var out []Group
	for _, r := range runs {
		if r.Status != recorder.RunOK {
			continue
		}
		if g, ok := measured[r.RunID]; ok {
			out = append(out, g)
			continue
		}
		if resumed == nil {
			rows, err := recorder.ReadFile[Group](filepath.Join(dir, groupFile))
			if err != nil {
				return out, fmt.Errorf("resumed runs' groups: %w", err)
			}
			resumed = map[string]Group{}
			for _, g := range rows {
				resumed[g.RunID] = g
			}
		}
		g, ok := resumed[r.RunID]
		if !ok {
			return out, fmt.Errorf("resumed run %s ended ok but has no row in %s", r.RunID, groupFile)
		}
		out = append(out, g)
	}
	return out, nil
}

// runLine is the progress line of a finished run.
func runLine(r RunRow, g Group) string {
	return fmt.Sprintf("probes ok %d failed %d, p50 %s ms, p95 %s ms, max %s ms, %.1f req/s over %.1f s; slots %s, free %s; most held on one worker %s, full %s s, waves with a full worker %s  [%s]",
		g.OK, g.Failed, lab.Num(g.P50MS, 1), lab.Num(g.P95MS, 1), lab.Num(g.MaxMS, 1), g.ThroughputRPS, g.ElapsedS, lab.Num(g.Slots, 0), lab.Num(g.FreeSlots, 0),
		lab.Num(g.MaxWorkerHeld, 0), lab.Num(g.FullWorkerS, 1), wavesCell(&g).String(), lab.StatusText(r.Status, r.Reason))
}

// files are the open results files of a long-poll session. As the
// matrix's writer of run rows, it writes a run's group (its figures, kept
// in measured by Measure) to groups.csv first when the run ended ok, so
// groups.csv holds exactly the completed runs, as the matrix decided
// their status (the host guard may abort a run after it measured).
type files struct {
	probes    *recorder.FileWriter[Probe]
	groups    *recorder.FileWriter[Group]
	runs      *recorder.FileWriter[RunRow]
	resources *recorder.FileWriter[recorder.ResourceSample]
	measured  map[string]Group
}

// Write implements lab.RowWriter: the run's group when it ended ok, then
// its run row. A group that could not be written leaves the run without
// a row, so a resume runs it again.
func (f *files) Write(r RunRow) error {
	if r.Status == recorder.RunOK {
		g, ok := f.measured[r.RunID]
		if !ok {
			return fmt.Errorf("run %s ended ok with no figures", r.RunID)
		}
		if err := f.groups.Write(g); err != nil {
			return err
		}
	}
	return f.runs.Write(r)
}

// close closes every open file; it is called once.
func (f *files) close() error {
	err := errors.Join(lab.CloseFile(f.probes), lab.CloseFile(f.groups), lab.CloseFile(f.runs), lab.CloseFile(f.resources))
	f.probes, f.groups, f.runs, f.resources = nil, nil, nil, nil
	return err
}
