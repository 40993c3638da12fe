package lab

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// What the experiments whose run is "n clients beside /fast" share
// beyond FastSpec: their scenario's conditions and /fast (Beside), the
// run's load sampled on its fresh stack (SampledLoad) with each client's
// row (RunClients) and their report section (RunsSection).

// Beside is the part of the scenario of an experiment whose run is "n
// clients beside /fast" that follows Common, embedded inline in its
// Config: its matrix's conditions and the /fast schedule run beside
// their clients. It implements Stacked's Servers and Routed's Routes for
// the Config from its conditions (an experiment that deploys other routes
// than its conditions name declares its own Routes).
type Beside[C stack.RoutedCondition] struct {
	Conditions []C      `yaml:"conditions"`
	Fast       FastSpec `yaml:"fast"`
}

// Servers implements Stacked: the servers the conditions name
// (ParsedServers).
func (b *Beside[C]) Servers() []stack.Server { return ParsedServers(b.Conditions, C.ServerName) }

// Routes implements Routed: the conditions' routes.
func (b *Beside[C]) Routes() []stack.Route { return RoutesOf(b.Conditions, C.RouteName) }

// Clients is what a run's clients and its /fast schedule measured
// (RunClients): each client's row by client number, the schedule's
// request rows and how many it planned, and the first error writing a
// row or reaching the clients' target.
type Clients[I any] struct {
	Rows     []I
	Reqs     []recorder.Request
	Planned  int
	WriteErr error
}

// Serving is where a run's load goes: the running stack's base URL and
// whether it may be off loopback (*stack.Running).
type Serving interface {
	URL() string
	AllowRemote() bool
}

// RunClients is a run's load: meta.SlowClients clients beside fast's
// schedule on running (FastSpec.RunBeside, its requests written to
// f.Requests). It checks the clients' target, running's URL with path,
// then runs client(i, target) for each client i from t0 on; its row goes
// to Rows[i] and, with write, to f.Items as the client ends (without, the
// caller writes the rows once it has completed them). A target that is
// not allowed runs nothing and is WriteErr.
func RunClients[I recorder.Row[I], R recorder.RunRow[R]](ctx context.Context, env *Env, fast FastSpec, running Serving,
	meta recorder.RunMeta, t0 time.Time, f *RunFiles[I, R], path string, write bool, client func(i int, target *url.URL) I) Clients[I] {
	var out Clients[I]
	target, err := loadgen.CheckTarget(running.URL()+path, running.AllowRemote())
	if err != nil {
		out.WriteErr = err
		return out
	}
	var mu sync.Mutex
	out.Rows = make([]I, meta.SlowClients)
	fr := fast.RunBeside(ctx, env, running.URL()+fast.Path, running.AllowRemote(), meta, t0, f.Requests, meta.SlowClients, func(i int) {
		row := client(i, target)
		mu.Lock()
		defer mu.Unlock()
		out.Rows[i] = row
		if write {
			if err := f.Items.Write(row); err != nil && out.WriteErr == nil {
				out.WriteErr = err
			}
		}
	})
	out.Reqs, out.Planned = fr.Reqs, fr.Planned
	if out.WriteErr == nil {
		out.WriteErr = fr.WriteErr
	}
	return out
}

// SampledLoad is a run's load on its own stack fr with the stack's
// resources sampled over it: sampling into w begins at t0, now
// (Fresh.Start), load runs from t0, and the sampling ends as it returns
// (Fresh.Sampled). It returns what load returned, the resources sampled
// and the error for samples that could not be written.
func SampledLoad[L any](fr *Fresh, w *recorder.FileWriter[recorder.ResourceSample], load func(t0 time.Time) L) (L, Resources, error) {
	t0 := time.Now()
	fr.Start(t0, w)
	l := load(t0)
	res, err := fr.Sampled(time.Now())
	return l, res, err
}

// PrintResult writes res's table (its Print), then each condition the
// stack could not run (a MatrixResult's Skipped), as the session began.
func PrintResult(w io.Writer, res Result) {
	res.Print(w)
	if m, ok := res.(interface{ skippedConds() []string }); ok {
		for _, s := range m.skippedConds() {
			fmt.Fprintf(w, "skipped: %s\n", s)
		}
	}
}

// RunsSection is the report section of experiment name whose results
// directory holds runsFile, its runs (R's file: upload-runs.csv, ...):
// build reads the rest of dir, given the runs it holds.
func RunsSection[R recorder.Row[R]](name, runsFile string, build func(dir string, runs []R) (*report.Part, error)) report.Section {
	return report.NewSection(name, runsFile, func(dir string) (*report.Part, error) {
		runs, err := recorder.ReadFile[R](filepath.Join(dir, runsFile))
		if err != nil {
			return nil, err
		}
		return build(dir, runs)
	})
}

// ResultsFiles are the files a session writing RunFiles[I, R] leaves, for
// Experiment.Files: I's, R's, requests.csv and resource-samples.csv.
func ResultsFiles[I recorder.Row[I], R recorder.RunRow[R]]() []string {
	return []string{recorder.FileName[I](), recorder.FileName[R](), recorder.FileName[recorder.Request](), recorder.FileName[recorder.ResourceSample]()}
}
