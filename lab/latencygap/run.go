package latencygap

import (
	"context"
	"crypto/tls"
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
	paths, modes := c.paths(), c.tlsModes()
	per := len(modes) * len(c.works()) * len(c.Sizes)
	p := lab.NewProgress(env.Progress, len(paths)*per, func(i int) time.Duration {
		w := c.works()[i/len(c.Sizes)%len(c.works())].D
		return time.Duration(c.Reps*c.Runs) * (5*paths[i/per].rtt() + 2*w + 2*time.Millisecond)
	})
	var runErr error
	for i, pc := range paths {
		rows, err := c.runPath(ctx, env, pc, f, p, i*per)
		res.Rows = append(res.Rows, rows...)
		if err != nil || ctx.Err() != nil {
			runErr = errors.Join(err, ctx.Err())
			break
		}
	}
	return res, errors.Join(runErr, f.close())
}

// runPath builds one path, serves on it in each TLS mode and measures
// every size; the path and the servers are gone when it returns.
func (c *Config) runPath(ctx context.Context, env *lab.Env, pc pathCond, f *files, p *lab.Progress, first int) ([]Row, error) {
	path, err := netem.New(ctx, pc.netem(c))
	if err != nil {
		return nil, fmt.Errorf("latency-gap at %s: network path: %w", pc, err)
	}
	defer path.Close()
	env.Logf("path %s: %s, %s, client %s, server %s, MTU %d, %s",
		path.Name, path.Method, pc, path.ClientAddr, path.ServerAddr, netem.MTU, path.CongestionControl())
	var cert *certificate
	var rows []Row
	for k, mode := range c.tlsModes() {
		var serverTLS, clientTLS *tls.Config
		if mode != recorder.GapTLSNone {
			if cert == nil {
				if cert, err = newCertificate(path.ServerAddr); err != nil {
					return rows, err
				}
			}
			serverTLS, clientTLS = cert.server(mode), cert.client(mode)
		}
		mrows, err := c.runMode(ctx, env, path, pc, mode, serverTLS, clientTLS, f, p, first+k*len(c.works())*len(c.Sizes))
		rows = append(rows, mrows...)
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// runMode serves on the path in one TLS mode and measures every
// processing time and size; the server is gone when it returns.
func (c *Config) runMode(ctx context.Context, env *lab.Env, path *netem.Path, pc pathCond, mode string, serverTLS, clientTLS *tls.Config,
	f *files, p *lab.Progress, first int) ([]Row, error) {
	addr, stop, err := serve(ctx, path, env, serverTLS)
	if err != nil {
		return nil, fmt.Errorf("latency-gap at %s: %w", pc, err)
	}
	defer stop()
	scheme := "http"
	if serverTLS != nil {
		scheme = "https"
	}
	var rows []Row
	for wi, work := range c.works() {
		for j, size := range c.Sizes {
			i := first + wi*len(c.Sizes) + j
			what := fmt.Sprintf("%d bytes, %s, tls %s", size, pc, mode)
			if work.D > 0 {
				what += ", work " + work.String()
			}
			p.Start(i, fmt.Sprintf("%s (%s)", what, path.Method))
			settings := pc.settings(mode)
			settings.WorkMS, settings.WorkKind = ms(work.D), work.Kind
			cond := condition{size: int(size), path: pc, settings: settings, tls: clientTLS,
				url: fmt.Sprintf("%s://%s/bytes?n=%d%s", scheme, addr, size, work.query())}
			row, reqs := c.condition(ctx, env, path, cond, p)
			var werr error
			for _, r := range reqs {
				if err := f.reqs.Write(r); err != nil && werr == nil {
					werr = err
				}
			}
			p.Done(i, "%s", rowLine(row))
			rows = append(rows, row)
			if err := errors.Join(werr, f.gaps.Write(row.Gap), f.paths.Write(row.Path)); err != nil {
				return rows, err
			}
			if ctx.Err() != nil {
				return rows, ctx.Err()
			}
		}
	}
	return rows, nil
}

// condition is one measured condition: a size on a path in a TLS mode.
type condition struct {
	size     int
	path     pathCond
	settings recorder.GapSettings
	url      string
	tls      *tls.Config // the client's; nil without TLS
}

// condition measures one condition on the path, again while the path was
// not faithful (a machine that stalled the delay line measured itself).
func (c *Config) condition(ctx context.Context, env *lab.Env, path *netem.Path, cond condition, p *lab.Progress) (Row, []recorder.GapRequest) {
	configured := ms(cond.path.rtt())
	for try := 1; ; try++ {
		path.TakeLateness()
		before, cerr := readCounts(ctx, path)
		reqs := c.measure(ctx, env, path, cond, configured)
		after, err := readCounts(ctx, path)
		var counts *pathCounts
		if cerr == nil && err == nil {
			d := after.sub(before)
			counts = &d
		} else if ctx.Err() == nil {
			env.Logf("path %s: cannot count its packets: %v", path.Name, errors.Join(cerr, err))
		}
		row := summarize(cond, configured, string(path.Method), path.CongestionControl(), reqs, path.TakeLateness(), counts)
		if row.Path.Valid || try == tries || ctx.Err() != nil {
			return row, reqs
		}
		p.Note("path not faithful (%s): discarded, measuring again (try %d of %d)", invalidWhy(row.Path), try+1, tries)
	}
}

// serve starts the embedded app (async model: a goroutine per connection,
// keep-alive allowed) on the path's server address, with TLS when
// serverTLS is set, reporting its last-byte time in a trailer, and
// returns its address and a stop func.
func serve(ctx context.Context, path *netem.Path, env *lab.Env, serverTLS *tls.Config) (string, func(), error) {
	tg, err := appserver.New(appserver.Options{Model: appserver.ModelAsync, Workers: 1, Threads: 1, BlockSize: appserver.DefaultBlockSize,
		LastByteTiming: true, TracerProvider: env.TracerProvider})
	if err != nil {
		return "", nil, err
	}
	ln, err := path.Listen(ctx, 0)
	if err != nil {
		return "", nil, fmt.Errorf("listen in the server namespace: %w", err)
	}
	addr := ln.Addr().String()
	if serverTLS != nil {
		ln = tls.NewListener(ln, serverTLS)
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tg.Serve(sctx, ln, nil)
	}()
	return addr, func() { cancel(); <-done }, nil
}

// measure sends one warm-up request and then Reps x Runs measured ones on a
// kept-alive connection, back to back (so the connection's congestion
// window never idles past an RTO), then the same on new connections.
func (c *Config) measure(ctx context.Context, env *lab.Env, path *netem.Path, cond condition, configured float64) []recorder.GapRequest {
	t0 := time.Now()
	runID := runID(cond, configured)
	var reqs []recorder.GapRequest
	for _, mode := range []string{recorder.GapKeepAlive, recorder.GapNew} {
		var clientTLS *tls.Config
		if cond.tls != nil {
			clientTLS = cond.tls.Clone() // its own session cache: a mode resumes only its own sessions
			if cond.tls.ClientSessionCache != nil {
				clientTLS.ClientSessionCache = tls.NewLRUClientSessionCache(16)
			}
		}
		client := loadgen.NewClient(loadgen.ClientOptions{DialContext: path.DialContext, KeepAlive: mode == recorder.GapKeepAlive,
			Timeout: time.Duration(c.Timeout), TCPInfo: true, TracerProvider: env.TracerProvider, TLS: clientTLS})
		for seq := -1; seq < c.Reps*c.Runs && ctx.Err() == nil; seq++ {
			var r loadgen.Result
			client.Get(ctx, cond.url, &r)
			if seq < 0 {
				continue // warm-up: opens the kept-alive connection, or the session a new one resumes
			}
			env.Metrics.Observe(runID, loadgen.RoleGap, &r)
			reqs = append(reqs, requestRow(r, t0, cond, configured, string(path.Method), mode, seq))
			env.RequestDone(runID)
		}
		client.Close()
	}
	return reqs
}

// runID names a condition in metrics and traces: latency-gap.1024B.50ms,
// then what differs from a plain path.
func runID(cond condition, configured float64) string {
	id := fmt.Sprintf("latency-gap.%dB.%gms", cond.size, configured)
	s := cond.settings
	if s.DelayUpMS != s.DelayDownMS {
		id += fmt.Sprintf(".up%gms", s.DelayUpMS)
	}
	if s.LossPct > 0 {
		id += fmt.Sprintf(".loss%g", s.LossPct)
	}
	if s.RateBits > 0 {
		id += "." + BitRate(s.RateBits).String()
	}
	if s.TLS != recorder.GapTLSNone {
		id += ".tls" + s.TLS
	}
	if s.WorkMS > 0 {
		id += fmt.Sprintf(".work%gms", s.WorkMS)
		if s.WorkKind == recorder.GapWorkCPU {
			id += "cpu"
		}
	}
	return id
}

// requestRow is a request's gap-requests.csv row.
func requestRow(r loadgen.Result, t0 time.Time, cond condition, configured float64, method, mode string, seq int) recorder.GapRequest {
	size := cond.size
	row := recorder.GapRequest{SizeBytes: size, ConfiguredRTTMS: configured, DelayMethod: method, Mode: mode, Seq: seq,
		StartS: r.Start.Sub(t0).Seconds(), NewConn: r.NewConn, ConnectMS: math.NaN(), TTFBMS: math.NaN(),
		TotalMS: ms(r.Latency), Status: r.Status, Bytes: r.Bytes, GapSettings: cond.settings, TLSResumed: r.TLSResumed}
	if r.TLSHandshake > 0 {
		row.HandshakeMS = recorder.Some(ms(r.TLSHandshake))
	}
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
