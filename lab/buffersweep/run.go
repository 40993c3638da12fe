package buffersweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/kernelnet"
	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/lab/slowclient"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// Result is what a sweep (or the part of it that ran) measured.
type Result struct {
	Dir   string
	Cells []Cell
}

// AllFailed implements lab.Result.
func (r *Result) AllFailed() bool {
	runs, ok := 0, 0
	for _, c := range r.Cells {
		runs += c.Runs
		ok += c.RunsOK
	}
	return runs > 0 && ok == 0
}

// Run implements lab.Config: every kernel setting in turn (the host's in
// this process, each namespace's in a child started in it), every size x
// rate cell of it a slow-client matrix of the routes, each cell's rows
// added to sweep.csv as it completes. Cancelling ctx keeps what completed.
// With env.Resume the complete cells of env.Out's sweep.csv are kept and
// only the others run, each resuming its own slow-client matrix (its ok
// runs kept); every cell's matrix runs under env.MaxHostCPU's guard.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	if err := cmp.Or(lab.RefuseExternal(c), c.Validate()); err != nil {
		return nil, err
	}
	child := os.Getenv(kernelnet.NetnsEnv) != ""
	if child {
		if err := c.enterKernel(); err != nil {
			return nil, err
		}
	} else if !c.kernels()[0].host {
		if err := netem.Check(); err != nil { // before anything starts
			return nil, fmt.Errorf("tcp_wmem_max/tcp_rmem_max are set in a network namespace the sweep creates: %w", err)
		}
	}
	if err := os.MkdirAll(env.Out, 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	res := &Result{Dir: env.Out}
	var done map[string]bool
	if env.Resume {
		var err error
		if res.Cells, done, err = c.resume(env); err != nil {
			return nil, err
		}
	}
	if err := lab.RecordSession(env, c); err != nil {
		return nil, err
	}
	w, err := lab.OpenFile[Cell](env.Out, env.Resume)
	if err != nil {
		return nil, err
	}
	// add writes a finished cell's rows once: a kept cell's rows, which a
	// resumed namespace session reports again, are already there.
	add := func(cells []Cell) error {
		for _, cell := range cells {
			if done[rowKey(cell)] {
				continue
			}
			if err := w.Write(cell); err != nil {
				return err
			}
			res.Cells = append(res.Cells, cell)
		}
		return w.Sync()
	}
	var runErr error
	if child {
		runErr = c.runKernel(ctx, env, c.kernels()[0], "", done, add)
	} else {
		for _, k := range c.kernels() {
			if k.host {
				runErr = c.runKernel(ctx, env, k, k.dir(), done, add)
			} else {
				runErr = c.runChild(ctx, env, k, done, add)
			}
			if runErr != nil {
				break
			}
		}
	}
	return res, errors.Join(runErr, w.Close())
}

// runKernel runs every size x rate cell under kernel setting k in this
// process, each into base/<cell>, but those done has.
func (c *Config) runKernel(ctx context.Context, env *lab.Env, k kernel, base string, done map[string]bool, add func([]Cell) error) error {
	net := kernelnet.NetSettings(kernelnet.HostNamespace, nil, nil)
	var wmem, rmem string
	if net != nil {
		wmem, rmem = net.TCPWmem, net.TCPRmem
	}
	var model pathmodel.Config
	if err := pathmodel.NetConfig(net, &model); err != nil {
		return fmt.Errorf("%s: the path model's kernel settings: %w", k.Label(), err)
	}
	for _, size := range c.Sizes {
		for _, rate := range c.Rates {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			name := fmt.Sprintf("size%s-rate%s", bytesize.Format(int64(size)), bytesize.Format(int64(rate)))
			if done[cellKey(k.Label(), int64(size), int64(rate))] {
				fmt.Fprintf(progress(env), "%s: %s completed, kept\n", k.Label(), name)
				continue
			}
			fmt.Fprintf(progress(env), "%s: %s of %s read at %s/s\n", k.Label(), name, bytesize.Format(int64(size)), bytesize.Format(int64(rate)))
			cells, err := c.runCell(ctx, env, filepath.Join(base, name), int64(size), int64(rate), model)
			for i := range cells {
				cells[i].Kernel, cells[i].TCPWmem, cells[i].TCPRmem = k.Label(), wmem, rmem
			}
			if werr := add(cells); werr != nil {
				return errors.Join(err, werr)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// runCell runs one size x rate cell: the routes' slow-client runs, into
// env.Out/dir, and returns a row per route, each with the path model's
// prediction, made before the runs from model (the namespace's kernel
// settings) and the cell's configuration.
func (c *Config) runCell(ctx context.Context, env *lab.Env, dir string, size, rate int64, model pathmodel.Config) ([]Cell, error) {
	sc := c.slowClient(size, rate)
	predicted, err := c.predictRoutes(sc, model)
	if err != nil {
		return nil, err
	}
	for _, r := range c.Routes {
		fmt.Fprintf(progress(env), "  %s: predicted capacity %s\n", r, predicted[r])
	}
	cellEnv := *env
	// A cell of a resumed sweep that had started resumes its matrix: its
	// ok runs are kept, the others run again.
	cellEnv.Out, cellEnv.Scenario = filepath.Join(env.Out, dir), nil
	cellEnv.Resume = env.Resume && started(cellEnv.Out)
	cellEnv.Progress = &prefixWriter{w: progress(env), prefix: "  "}
	r, err := sc.Run(ctx, &cellEnv)
	res, _ := r.(*slowclient.Result)
	if res == nil {
		return nil, err
	}
	cells, derr := cellRows(res, cellEnv.Out, dir, size, rate, predicted)
	return cells, errors.Join(err, derr)
}

// cellRows is a row per condition of a cell's slow-client result res,
// whose results directory is out (dir relative to the sweep's): the
// measured columns from its files, the predicted ones from predicted, the
// path model's capacity of each route.
func cellRows(res *slowclient.Result, out, dir string, size, rate int64, predicted map[stack.Route]pathmodel.Capacity) ([]Cell, error) {
	ds, err := downloads(out)
	var cells []Cell
	for _, cond := range res.Conditions {
		cell := Cell{Route: cond.Route, Server: cond.Server, SlowClients: cond.SlowClients,
			SizeBytes: size, RateBps: rate, FastP95MS: cond.P95MS, Dir: dir}
		for _, run := range res.Runs {
			if run.Route == cond.Route {
				cell.Runs++
				if run.Status == recorder.RunOK {
					cell.RunsOK++
				}
			}
		}
		summarize(&cell, ds)
		if p, ok := predicted[stack.Route(cond.Route)]; ok {
			predict(&cell, p)
		}
		cells = append(cells, cell)
	}
	return cells, err
}

// slowClient is the slow-client matrix of one cell: the routes with the
// sweep's server and slow clients, the download of size read at rate, and
// /fast at FastRate from 250 ms on, for as long as the downloads take
// (2 s to 60 s).
func (c *Config) slowClient(size, rate int64) *slowclient.Config {
	sc := slowclient.Published()
	sc.SkipMayHold() // the sweep predicts every cell itself
	sc.StackSpec, sc.Reps = c.StackSpec, c.Reps
	sc.Conditions = nil
	for _, r := range c.Routes {
		sc.Conditions = append(sc.Conditions, slowclient.Condition{Route: r, Server: c.Server, SlowClients: c.SlowClients})
	}
	dl := time.Duration(float64(size) / float64(rate) * float64(time.Second))
	sc.Large.Size, sc.SlowReader.ReadRate = lab.Size(size), lab.Size(rate)
	sc.SlowReader.Timeout = lab.Duration(max(2*time.Minute, 3*dl))
	sc.Fast.Rate, sc.Fast.Offset = c.FastRate, lab.Duration(250*time.Millisecond)
	sc.Fast.Duration = lab.Duration(min(max(dl, 2*time.Second), time.Minute))
	sc.Hops.Interval = c.HopInterval
	return sc
}

// predictRoutes is the path model's capacity of each route of cell sc,
// from model (the kernel's settings) and sc's configuration: the slow
// client's SO_RCVBUF, the proxy's response buffers of sc's deployments
// (proxy_max_temp_file_size at its default: slow-client leaves it), and
// no SO_SNDBUF for the app (no app of package stack sets one).
func (c *Config) predictRoutes(sc *slowclient.Config, model pathmodel.Config) (map[stack.Route]pathmodel.Capacity, error) {
	out := map[stack.Route]pathmodel.Capacity{}
	for _, r := range c.Routes {
		m := model
		m.Route, m.AppSndBuf, m.ClientRcvBuf = r, 0, int64(sc.SlowReader.RcvBuf)
		m.Proxy = stack.Deployment{Route: r, LargeSize: int64(sc.Large.Size)}.ResponseBuffers()
		p, err := pathmodel.Predict(m)
		if err != nil {
			return nil, fmt.Errorf("the path model of route %s: %w", r, err)
		}
		out[r] = p
	}
	return out, nil
}

func progress(env *lab.Env) io.Writer {
	if env.Progress == nil {
		return io.Discard
	}
	return env.Progress
}

// prefixWriter writes every line to w with prefix in front.
type prefixWriter struct {
	w      io.Writer
	prefix string
	mid    bool // within a line: its prefix written
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var out []byte
	for _, c := range b {
		if !p.mid {
			out = append(out, p.prefix...)
		}
		out = append(out, c)
		p.mid = c != '\n'
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}
