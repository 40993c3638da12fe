package latencygap

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// Result is what Run wrote.
type Result struct {
	Dir  string
	Rows []Row
}

var _ lab.Reasoned = (*Result)(nil)

// ReasonsFile implements lab.Reasoned: gap-requests.csv (each request's error) says why.
func (r *Result) ReasonsFile() string { return "gap-requests.csv" }

// AllFailed implements lab.Result: no condition got a request through.
func (r *Result) AllFailed() bool {
	for _, row := range r.Rows {
		if row.Gap.Runs > 0 {
			return false
		}
	}
	return len(r.Rows) > 0
}

// Valid reports whether every condition's path delayed faithfully.
func (r *Result) Valid() bool {
	for _, row := range r.Rows {
		if !row.Path.Valid {
			return false
		}
	}
	return true
}

// tries is how often a condition whose path was not faithful (its delay
// line ran late, or its measured RTT is off) is measured before its last
// attempt is kept, marked invalid.
const tries = 3

// files are the open results files of a latency-gap session.
type files struct {
	gaps  *recorder.FileWriter[recorder.GapRow]
	reqs  *recorder.FileWriter[recorder.GapRequest]
	paths *recorder.FileWriter[recorder.GapPath]
}

func (f *files) close() error {
	var errs []error
	if f.gaps != nil {
		errs = append(errs, f.gaps.Close())
		f.gaps = nil
	}
	if f.reqs != nil {
		errs = append(errs, f.reqs.Close())
		f.reqs = nil
	}
	if f.paths != nil {
		errs = append(errs, f.paths.Close())
		f.paths = nil
	}
	return errors.Join(errs...)
}

// Run implements lab.Config: every delay and size, writing gap.csv,
// gap-requests.csv, gap-path.csv and environment.json. It serves from the
// lab process. It needs root for the namespaces; without it, it fails
// before writing anything, saying so. A condition whose path was not
// faithful is measured again, up to tries times, the discarded attempts
// noted in the progress output. Cancelling ctx keeps what was measured,
// removes the namespaces and returns ctx's error.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := netem.Check(); err != nil {
		return nil, fmt.Errorf("latency-gap: %w", err)
	}
	if err := os.MkdirAll(env.Out, 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	if err := lab.RecordSession(env, c); err != nil {
		return nil, err
	}
	f := &files{}
	defer f.close()
	var err error
	if f.gaps, err = recorder.CreateFile[recorder.GapRow](env.Out); err == nil {
		if f.reqs, err = recorder.CreateFile[recorder.GapRequest](env.Out); err == nil {
			f.paths, err = recorder.CreateFile[recorder.GapPath](env.Out)
		}
	}
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: env.Out}
	p := lab.NewProgress(env.Progress, len(c.Delays)*len(c.Sizes), func(i int) time.Duration {
		return time.Duration(c.Runs) * (10*time.Duration(c.Delays[i/len(c.Sizes)]) + 2*time.Millisecond)
	})
	var runErr error
	for i, d := range c.Delays {
		rows, err := c.runDelay(ctx, env, time.Duration(d), f, p, i*len(c.Sizes))
		res.Rows = append(res.Rows, rows...)
		if err != nil || ctx.Err() != nil {
			runErr = errors.Join(err, ctx.Err())
			break
		}
	}
	return res, errors.Join(runErr, f.close())
}

// runDelay builds the path for one delay, serves on it and measures every
// size; the path and the server are gone when it returns.
func (c *Config) runDelay(ctx context.Context, env *lab.Env, delay time.Duration, f *files, p *lab.Progress, first int) ([]Row, error) {
	path, err := netem.New(ctx, netem.Config{Delay: delay, Rate: int64(c.Rate), Method: c.Method, CongestionControl: c.CongestionControl})
	if err != nil {
		return nil, fmt.Errorf("latency-gap at %s each way: network path: %w", delay, err)
	}
	defer path.Close()
	env.Logf("path %s: %s, %s each way, client %s, server %s, MTU %d, %s",
		path.Name, path.Method, delay, path.ClientAddr, path.ServerAddr, netem.MTU, path.CongestionControl())
	addr, stop, err := serve(ctx, path, env)
	if err != nil {
		return nil, fmt.Errorf("latency-gap at %s each way: %w", delay, err)
	}
	defer stop()
	var rows []Row
	for j, size := range c.Sizes {
		p.Start(first+j, fmt.Sprintf("%d bytes, %s each way (%s)", size, delay, path.Method))
		row, reqs := c.condition(ctx, env, path, fmt.Sprintf("http://%s/bytes?n=%d", addr, size), int(size), delay, p)
		var werr error
		for _, r := range reqs {
			if err := f.reqs.Write(r); err != nil && werr == nil {
				werr = err
			}
		}
		p.Done(first+j, "%s", rowLine(row))
		rows = append(rows, row)
		if err := errors.Join(werr, f.gaps.Write(row.Gap), f.paths.Write(row.Path)); err != nil {
			return rows, err
		}
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
	}
	return rows, nil
}

// condition measures one size on the path, again while the path was not
// faithful (a machine that stalled the delay line measured itself).
func (c *Config) condition(ctx context.Context, env *lab.Env, path *netem.Path, url string, size int, delay time.Duration, p *lab.Progress) (Row, []recorder.GapRequest) {
	configured := ms(2 * delay)
	for try := 1; ; try++ {
		path.TakeLateness()
		reqs := c.measure(ctx, env, path, url, size, configured)
		row := summarize(size, configured, string(path.Method), path.CongestionControl(), reqs, path.TakeLateness())
		if row.Path.Valid || try == tries || ctx.Err() != nil {
			return row, reqs
		}
		p.Note("path not faithful (%s): discarded, measuring again (try %d of %d)", invalidWhy(row.Path), try+1, tries)
	}
}

// serve starts the embedded app (async model: a goroutine per connection,
// keep-alive allowed) on the path's server address, reporting its
// last-byte time in a trailer, and returns its address and a stop func.
func serve(ctx context.Context, path *netem.Path, env *lab.Env) (string, func(), error) {
	tg, err := appserver.New(appserver.Options{Model: appserver.ModelAsync, Workers: 1, Threads: 1, BlockSize: appserver.DefaultBlockSize,
		LastByteTiming: true, TracerProvider: env.TracerProvider})
	if err != nil {
		return "", nil, err
	}
	ln, err := path.Listen(ctx, 0)
	if err != nil {
		return "", nil, fmt.Errorf("listen in the server namespace: %w", err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tg.Serve(sctx, ln, nil)
	}()
	return ln.Addr().String(), func() { cancel(); <-done }, nil
}

// measure sends one warm-up request and then Runs measured ones on a
// kept-alive connection, back to back (so the connection's congestion
// window never idles past an RTO), then the same on new connections.
func (c *Config) measure(ctx context.Context, env *lab.Env, path *netem.Path, url string, size int, configured float64) []recorder.GapRequest {
	t0 := time.Now()
	runID := fmt.Sprintf("latency-gap.%dB.%gms", size, configured)
	var reqs []recorder.GapRequest
	for _, mode := range []string{recorder.GapKeepAlive, recorder.GapNew} {
		client := loadgen.NewClient(loadgen.ClientOptions{DialContext: path.DialContext, KeepAlive: mode == recorder.GapKeepAlive,
			Timeout: time.Duration(c.Timeout), TCPInfo: true, TracerProvider: env.TracerProvider})
		for seq := -1; seq < c.Runs && ctx.Err() == nil; seq++ {
			var r loadgen.Result
			client.Get(ctx, url, &r)
			if seq < 0 {
				continue // warm-up: opens the kept-alive connection
			}
			env.Metrics.Observe(runID, loadgen.RoleGap, &r)
			reqs = append(reqs, requestRow(r, t0, size, configured, string(path.Method), mode, seq))
			env.RequestDone(runID)
		}
		client.Close()
	}
	return reqs
}

// requestRow is a request's gap-requests.csv row.
func requestRow(r loadgen.Result, t0 time.Time, size int, configured float64, method, mode string, seq int) recorder.GapRequest {
	row := recorder.GapRequest{SizeBytes: size, ConfiguredRTTMS: configured, DelayMethod: method, Mode: mode, Seq: seq,
		StartS: r.Start.Sub(t0).Seconds(), NewConn: r.NewConn, ConnectMS: math.NaN(), TTFBMS: math.NaN(),
		TotalMS: ms(r.Latency), Status: r.Status, Bytes: r.Bytes}
	if r.NewConn && r.Connect > 0 {
		row.ConnectMS = ms(r.Connect)
	}
	if r.TTFB > 0 {
		row.TTFBMS = ms(r.TTFB)
	}
	if r.ServerTiming > 0 {
		row.ServerHeaderMS = recorder.Some(ms(r.ServerTiming))
	}
	if r.ServerTimingTrailer > 0 {
		row.ServerLastByteMS = recorder.Some(ms(r.ServerTimingTrailer))
	}
	if r.TCPMinRTT > 0 {
		row.TCPRTTMS = recorder.Some(ms(r.TCPMinRTT))
	}
	err := r.Err
	if err == nil && r.Status > 0 && r.Bytes != int64(size) {
		err = fmt.Errorf("%w: %d of %d bytes", loadgen.ErrIncomplete, r.Bytes, size)
	}
	if err != nil {
		row.Error = err.Error()
	}
	return row
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
