package lab

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// FastSpec is the open-loop /fast load the experiments run beside their
// slow clients (slow-client, slow-upload, idle-connections): Rate requests a
// second for Duration, each on a new connection, starting Offset after the
// slow clients, each given Timeout.
type FastSpec struct {
	Path     string   `yaml:"path"`
	Rate     float64  `yaml:"rate"` // requests per second
	Duration Duration `yaml:"duration"`
	Offset   Duration `yaml:"offset"` // after the slow clients start
	Timeout  Duration `yaml:"timeout"`
}

// PublishedFast is the published /fast schedule: 8 requests a second for
// 9 s, from 250 ms after the slow clients start, each timing out after
// loadgen's default. The experiments with a /fast probe start from it.
func PublishedFast() FastSpec {
	return FastSpec{Path: "/fast", Rate: 8, Duration: Duration(9 * time.Second), Offset: Duration(250 * time.Millisecond),
		Timeout: Duration(loadgen.DefaultTimeout)}
}

// Validate names the first field that cannot be used by its YAML path.
func (f FastSpec) Validate() error {
	switch {
	case !strings.HasPrefix(f.Path, "/"):
		return fmt.Errorf("fast.path %q: must start with /", f.Path)
	case !(f.Rate > 0) || f.Rate > 10000:
		return fmt.Errorf("fast.rate %v: allowed more than 0 up to 10000 requests/s", f.Rate)
	case f.Duration <= 0:
		return fmt.Errorf("fast.duration %s: must be more than 0", time.Duration(f.Duration))
	case time.Duration(f.Duration) > time.Hour:
		return fmt.Errorf("fast.duration %s: at most 1h", time.Duration(f.Duration))
	case f.Offset < 0 || time.Duration(f.Offset) > time.Hour:
		return fmt.Errorf("fast.offset %s: allowed 0 up to 1h", time.Duration(f.Offset))
	case f.Timeout <= 0 || time.Duration(f.Timeout) > time.Hour:
		return fmt.Errorf("fast.timeout %s: allowed more than 0 up to 1h", time.Duration(f.Timeout))
	}
	return nil
}

// FastRun is what a run's /fast schedule measured: its request rows, as
// written to requests.csv, how many requests it planned, and its first
// write error.
type FastRun struct {
	Reqs     []recorder.Request
	Planned  int
	WriteErr error
}

// Run sends f's open-loop schedule to url (not on loopback only when
// allowRemote, as the stack's Running.AllowRemote says), starting Offset after t0, and returns once every scheduled request
// ended. Each request's row (meta's, seconds from t0) goes to w as it
// finishes, and env.RequestDone is told, one at a time.
func (f FastSpec) Run(ctx context.Context, env *Env, url string, allowRemote bool, meta recorder.RunMeta, t0 time.Time,
	w *recorder.FileWriter[recorder.Request]) FastRun {
	client := loadgen.NewClient(loadgen.ClientOptions{Timeout: time.Duration(f.Timeout), TracerProvider: env.TracerProvider,
		AllowRemote: allowRemote})
	defer client.Close()
	return f.run(ctx, env, loadgen.OpenLoop{Client: client, URL: url}, meta, t0, w)
}

// RunBeside runs client(0), ..., client(n-1), each in a goroutine of its
// own from t0 on, beside f's schedule (Run, from t0 + Offset), and
// returns the schedule's result once it and every client have ended:
// the load of every "n clients beside /fast" run.
func (f FastSpec) RunBeside(ctx context.Context, env *Env, url string, allowRemote bool, meta recorder.RunMeta, t0 time.Time,
	w *recorder.FileWriter[recorder.Request], n int, client func(i int)) FastRun {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { client(i) })
	}
	out := f.Run(ctx, env, url, allowRemote, meta, t0, w)
	wg.Wait()
	return out
}

// RunH2 is Run with every request a stream on the HTTP/2 connection c
// (loadgen.OpenLoop.H2), which the caller opened and closes.
func (f FastSpec) RunH2(ctx context.Context, env *Env, c *loadgen.H2Conn, url string, meta recorder.RunMeta, t0 time.Time,
	w *recorder.FileWriter[recorder.Request]) FastRun {
	return f.run(ctx, env, loadgen.OpenLoop{H2: c, URL: url}, meta, t0, w)
}

// RunH3 is Run with every request a stream on the HTTP/3 connection c
// (loadgen.OpenLoop.H3), which the caller opened and closes.
func (f FastSpec) RunH3(ctx context.Context, env *Env, c *loadgen.H3Conn, url string, meta recorder.RunMeta, t0 time.Time,
	w *recorder.FileWriter[recorder.Request]) FastRun {
	return f.run(ctx, env, loadgen.OpenLoop{H3: c, URL: url}, meta, t0, w)
}

// run sends the schedule on loop's client or connection.
func (f FastSpec) run(ctx context.Context, env *Env, loop loadgen.OpenLoop, meta recorder.RunMeta, t0 time.Time,
	w *recorder.FileWriter[recorder.Request]) FastRun {
	var out FastRun
	var mu sync.Mutex
	loop.Pacer = loadgen.ConstantPacer{Interval: time.Duration(float64(time.Second) / f.Rate), Duration: time.Duration(f.Duration)}
	loop.Start, loop.RunID, loop.Role, loop.Metrics = t0.Add(time.Duration(f.Offset)), meta.RunID, loadgen.RoleFast, env.Metrics
	loop.OnResult = func(r loadgen.Result) {
		row := loadgen.RequestRow(meta, t0, r)
		mu.Lock()
		defer mu.Unlock()
		out.Reqs = append(out.Reqs, row)
		if err := w.Write(row); err != nil && out.WriteErr == nil {
			out.WriteErr = err
		}
		env.RequestDone(meta.RunID)
	}
	out.Planned = loop.Planned()
	loop.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	return out
}
