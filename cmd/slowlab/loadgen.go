package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"runtime"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/loadgendir"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// loadgenSynopsis is the first part of loadgen --help, exit statuses included.
const loadgenSynopsis = `--target URL [--rate R] [--duration D] [--max-lag D] [--pacer-sleep syscall|raw] [--slow N] [--shard I/N --start-at TIME|--start-barrier URL] [--out DIR] [--json] [--metrics-addr ADDR [--linger D]] [--quiet]

Exit status:
  0  the run completed and at least one request succeeded (a complete 2xx or 3xx response),
     or it was interrupted (SIGINT, SIGTERM) after writing what it measured
  1  an error, such as a results file that could not be written or closed
  2  a bad command line
  3  the run completed but no request succeeded; stderr names the causes`

func init() {
	register(command{name: "loadgen", summary: "send open-loop requests (and slow readers) to any target and report latency", run: runLoadgen})
}

// loadgenFlags are the command line of `slowlab loadgen`.
type loadgenFlags struct {
	target, slowTarget, runID, out, metricsAddr string
	shard, startAt, barrier, pacerSleep         string
	readRate, rcvBuf, readSize                  string
	rate                                        float64
	duration, offset, timeout, linger, maxLag   time.Duration
	slow                                        int
	keepAlive, allowRemote, http2, json, quiet  bool
	tracing                                     tracingFlags
}

func defineLoadgenFlags(fs *flag.FlagSet) *loadgenFlags {
	f := &loadgenFlags{}
	fs.StringVar(&f.target, "target", "", "URL of the open-loop requests, e.g. http://127.0.0.1:8000/fast (required)")
	fs.Float64Var(&f.rate, "rate", 8, "open-loop rate in requests per second; each starts on schedule whatever earlier ones are doing")
	fs.DurationVar(&f.duration, "duration", 9*time.Second, "how long to send open-loop requests")
	fs.DurationVar(&f.offset, "start-offset", 0, "delay of the open-loop schedule after the slow readers start")
	fs.BoolVar(&f.keepAlive, "keepalive", false, "reuse connections (default: a new TCP connection per request)")
	fs.BoolVar(&f.http2, "http2", false, "send the open-loop requests as streams on one HTTP/2 connection, as a browser reaches a proxy (http://: cleartext with prior knowledge; https://: ALPN h2); the slow readers stay HTTP/1.1")
	fs.DurationVar(&f.maxLag, "max-lag", 0, "skip (error reason late) an open-loop request that cannot start within this of its schedule, so a generator beyond its capacity keeps its schedule rather than falling ever further behind (e.g. 10ms); 0 sends every request however late")
	fs.StringVar(&f.pacerSleep, "pacer-sleep", "syscall", "how the pacer sleeps its last 2 ms before a request: syscall (the runtime hands its P to another thread: the lower schedule lag) or raw (it keeps it: 29-44% less CPU a request with a new connection each, a lag p99 up to 40% higher on shared cores; needs GOMAXPROCS 2 or more; see docs/performance.md)")
	fs.DurationVar(&f.timeout, "timeout", loadgen.DefaultTimeout, "per-request timeout, start to last body byte")
	fs.IntVar(&f.slow, "slow", 0, "number of slow readers downloading --slow-target during the run")
	fs.StringVar(&f.slowTarget, "slow-target", "", "URL the slow readers download (default: --target with path /large)")
	fs.StringVar(&f.readRate, "read-rate", "2m", "bytes per second each slow reader consumes (k, m suffixes are KiB, MiB)")
	fs.StringVar(&f.rcvBuf, "rcvbuf", "8k", "slow readers' SO_RCVBUF, set before connect (Linux reports double)")
	fs.StringVar(&f.readSize, "read-size", "16k", "slow readers read at most this many bytes per read")
	fs.StringVar(&f.shard, "shard", "0/1", "run shard I (from 0) of N of the load: every N-th scheduled request from the I-th (numbered as in the whole schedule) and the slow readers numbered I, I+N, ...; N shards started together (--start-at) send exactly the one schedule")
	fs.StringVar(&f.startAt, "start-at", "", "start the schedule at this instant (RFC 3339, e.g. 2026-12-05T10:00:00.000Z), so that shards on several processes or machines start together; its times are from it (default: now)")
	fs.StringVar(&f.barrier, "start-barrier", "", "instead of --start-at, GET this URL (?shard=I added) and start at the instant it answers with once every shard arrived: the start of shards run as local processes (loadgen.StartBarrier serves one)")
	fs.StringVar(&f.runID, "run-id", "", "run_id label and CSV column (default adhoc-<UTC timestamp>)")
	fs.StringVar(&f.out, "out", "", "write requests.csv (and large-responses.csv with --slow), loadgen.json and manifest.json to this directory")
	fs.BoolVar(&f.json, "json", false, "print the end-of-run summary as one JSON object on stdout instead of text (the same figures; docs/commands.md)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve /metrics here while running, e.g. 127.0.0.1:9101")
	fs.DurationVar(&f.linger, "linger", 0, "keep serving /metrics this long after the run, so a scraper sees the final values (needs --metrics-addr)")
	fs.BoolVar(&f.quiet, "quiet", false, fmt.Sprintf("print no progress lines: by default one goes to stderr every %v (requests sent, ok, errors, schedule lag p99 so far, elapsed/total time); the summary on stdout is the same either way", progressEvery))
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow targets that are not loopback; without it a host name must resolve to loopback addresses only, and every connection is checked again before connect")
	f.tracing = addTracingFlags(fs)
	return f
}

// loadgenRun is a validated `slowlab loadgen`.
type loadgenRun struct {
	f            *loadgenFlags
	u            *url.URL
	pacer        loadgen.Pacer
	sr           loadgen.SlowReader
	shard, count int
	startAt      time.Time // zero: now
}

func runLoadgen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("loadgen", loadgenSynopsis, stdout)
	f := defineLoadgenFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	r, err := f.validate()
	if err != nil {
		return err
	}
	if err := parsedOnly(ctx); err != nil {
		return err
	}
	tp, stopTracing, err := f.tracing.start(ctx, "slowlab-loadgen", stderr)
	if err != nil {
		return err
	}
	defer stopTracing()
	metrics, stopMetrics, err := serveLoadgenMetrics(f.metricsAddr, stderr)
	if err != nil {
		return err
	}
	defer stopMetrics()
	r.sr.RunID, r.sr.Metrics, r.sr.TracerProvider, r.sr.AllowRemote = f.runID, metrics, tp, f.allowRemote
	// Lean: the open loop's requests without net/http's goroutines and allocations,
	// unless traced (loadgen.ClientOptions.Lean).
	client := loadgen.NewClient(loadgen.ClientOptions{KeepAlive: f.keepAlive, Timeout: f.timeout, TracerProvider: tp, AllowRemote: f.allowRemote, Lean: true})
	defer client.Close()
	return r.run(ctx, client, metrics, stdout, stderr)
}

// validate checks every flag; each mistake is a one-line usage error.
func (f *loadgenFlags) validate() (*loadgenRun, error) {
	r := &loadgenRun{f: f}
	if err := checkOut(f.out); err != nil {
		return nil, err
	}
	var err error
	switch {
	case f.target == "":
		return nil, usagef("--target is required, e.g. --target http://127.0.0.1:8000/fast")
	case f.timeout <= 0:
		return nil, usagef("--timeout %s: must be more than 0", f.timeout)
	case f.pacerSleep != "syscall" && f.pacerSleep != "raw":
		return nil, usagef("--pacer-sleep %q: want syscall or raw", f.pacerSleep)
	case f.pacerSleep == "raw" && runtime.GOMAXPROCS(0) < 2:
		return nil, usagef("--pacer-sleep raw: needs GOMAXPROCS 2 or more (it is %d: one CPU allowed?): the pacer keeps a processor for the whole of each sleep, so the requests would wait for it", runtime.GOMAXPROCS(0))
	case f.maxLag < 0:
		return nil, usagef("--max-lag %s: must be 0 or more", f.maxLag)
	case f.offset < 0:
		return nil, usagef("--start-offset %s: must be 0 or more", f.offset)
	case f.slow < 0 || f.slow > 10000:
		return nil, usagef("--slow %d: allowed 0 to 10000", f.slow)
	case f.http2 && f.keepAlive:
		return nil, usagef("--keepalive with --http2: HTTP/2 sends every request on its one connection")
	case f.linger < 0:
		return nil, usagef("--linger %s: must be 0 or more", f.linger)
	case f.linger > 0 && f.metricsAddr == "":
		// The linger only keeps /metrics served; spans are flushed at exit
		// whatever it is, so without --metrics-addr it would do nothing.
		return nil, usagef("--linger %s without --metrics-addr: it keeps /metrics served after the run; give --metrics-addr ADDR or drop --linger", f.linger)
	}
	if r.u, err = loadgen.CheckTarget(f.target, f.allowRemote); err != nil {
		return nil, usagef("--%v", err)
	}
	whole, err := f.schedule()
	if err != nil {
		return nil, err
	}
	if r.shard, r.count, err = loadgen.ParseShard(f.shard); err != nil {
		return nil, usagef("--%v", err)
	}
	r.pacer = whole
	if r.count > 1 {
		r.pacer = loadgen.ShardPacer{Pacer: whole, Index: r.shard, Count: r.count}
	}
	if f.startAt != "" && f.barrier != "" {
		return nil, usagef("--start-at with --start-barrier: give one start")
	}
	if f.barrier != "" {
		if _, err := loadgen.CheckTarget(f.barrier, f.allowRemote); err != nil {
			return nil, usagef("--start-barrier: %v", err)
		}
	}
	if f.startAt != "" {
		if r.startAt, err = time.Parse(time.RFC3339Nano, f.startAt); err != nil || !r.startAt.After(time.Now()) {
			return nil, usagef("--start-at %q: want an instant to come, in RFC 3339 (e.g. %s)", f.startAt, time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano))
		}
	}
	if r.sr, err = f.slowReader(r.u); err != nil {
		return nil, err
	}
	if err := f.tracing.validate(); err != nil {
		return nil, err
	}
	if f.runID == "" {
		f.runID = "adhoc-" + time.Now().UTC().Format("20060102T150405Z")
	}
	return r, nil
}

// schedule is the open-loop schedule the rate and duration make.
func (f *loadgenFlags) schedule() (loadgen.ConstantPacer, error) {
	pacer, err := loadgen.RatePacer(f.rate, f.duration)
	switch {
	case err != nil && f.duration <= 0:
		return pacer, usagef("--duration %s: must be more than 0", f.duration)
	case err != nil:
		return pacer, usagef("--rate %v: want more than 0 and at most 1e6 requests/s", f.rate)
	case pacer.Hits() > loadgen.MaxPlanned:
		return pacer, usagef("--rate %v for --duration %s: %d requests, at most %d per run (every result is kept in memory)", f.rate, f.duration, pacer.Hits(), loadgen.MaxPlanned)
	}
	return pacer, nil
}

// slowReader is how the slow readers read, and what.
func (f *loadgenFlags) slowReader(u *url.URL) (loadgen.SlowReader, error) {
	sr := loadgen.SlowReader{}
	if f.slow > 0 {
		raw := f.slowTarget
		if raw == "" {
			v := *u
			v.Path, v.RawQuery = "/large", ""
			raw = v.String()
		}
		var err error
		if sr.URL, err = loadgen.CheckTarget(raw, f.allowRemote); err != nil {
			return sr, usagef("--slow-%v", err)
		}
	}
	sizes := []struct {
		name, value string
		dst         func(int64)
	}{
		{"read-rate", f.readRate, func(v int64) { sr.Rate = float64(v) }},
		{"rcvbuf", f.rcvBuf, func(v int64) { sr.RcvBuf = int(v) }},
		{"read-size", f.readSize, func(v int64) { sr.ReadSize = int(v) }},
	}
	for _, s := range sizes {
		v, err := byteSizeFlag(s.name, s.value)
		if err != nil {
			return sr, err
		}
		s.dst(v)
	}
	names := map[string]string{loadgen.SettingReadRate: "read-rate", loadgen.SettingReadSize: "read-size"} // loadgen's, as flags
	if err := lab.SettingPath("--", sr.Validate(), names); err != nil {
		return sr, usagef("%v", err)
	}
	return sr, nil
}

// run sends the load, writes the files, prints the summary and says how
// it ended: exit status 3 when the run completed and nothing succeeded.
func (r *loadgenRun) run(ctx context.Context, client *loadgen.Client, metrics *loadgen.Metrics, stdout, stderr io.Writer) error {
	if r.f.barrier != "" {
		start, err := loadgen.WaitBarrier(ctx, r.f.barrier, r.shard, r.f.allowRemote)
		if err != nil {
			return fmt.Errorf("--start-barrier: %w", err)
		}
		r.startAt = start
	}
	files, err := openLoadgenFiles(r.f.out, r.f.slow > 0)
	if err != nil {
		return err
	}
	if r.f.out != "" {
		if err := loadgendir.Write(r.f.out, r.record()); err != nil {
			return errors.Join(err, files.close())
		}
	}
	var h2 *loadgen.H2Conn
	if r.f.http2 {
		if h2, err = r.dialH2(ctx); err != nil {
			files.close()
			return fmt.Errorf("--http2: %w", err)
		}
		defer h2.Close()
		client = nil
	}
	meta := recorder.RunMeta{RunID: r.f.runID, Shard: r.shard}
	t0 := time.Now()
	if !r.startAt.IsZero() {
		if !r.f.quiet {
			fmt.Fprintf(stderr, "waiting for the start at %s, in %v\n", r.startAt.UTC().Format(time.RFC3339Nano), time.Until(r.startAt).Round(100*time.Millisecond))
		}
		select {
		case <-time.After(time.Until(r.startAt)):
		case <-ctx.Done():
		}
		t0 = r.startAt
	}
	sum, downloads := r.send(ctx, client, h2, metrics, files, meta, t0, stderr)
	interrupted := ctx.Err() != nil // before the linger, which an interrupt also ends
	for _, d := range downloads {
		files.download(loadgen.DownloadRow(meta, d, recorder.None(), false))
	}
	fileErr := files.close()
	if r.f.out != "" && fileErr == nil {
		fileErr = recorder.WriteManifest(r.f.out, "loadgen", loadgendir.Name)
	}
	fileErr = errors.Join(fileErr, r.printSummary(stdout, sum, downloads))
	if r.f.linger > 0 && r.f.metricsAddr != "" {
		select {
		case <-time.After(r.f.linger):
		case <-ctx.Done():
		}
	}
	// A file that could not be written outranks exit status 3: what was
	// measured is lost.
	switch {
	case fileErr != nil && sum.OK == 0 && !interrupted:
		return errors.Join(fileErr, fmt.Errorf("no request succeeded: %s", sum.Cause()))
	case fileErr != nil:
		return fileErr
	case sum.OK == 0 && !interrupted:
		return exitError{code: 3, err: fmt.Errorf("no request succeeded: %s", sum.Cause())}
	}
	return nil
}

// dialH2 opens the open loop's HTTP/2 connection to the target: windows
// of 1 MiB a stream and 16 MiB for the connection, so /fast is never held
// by flow control.
func (r *loadgenRun) dialH2(ctx context.Context) (*loadgen.H2Conn, error) {
	host, port := r.u.Hostname(), r.u.Port()
	o := loadgen.H2Options{Authority: r.u.Host, StreamWindow: 1 << 20, ConnWindow: 16 << 20, Timeout: r.f.timeout, AllowRemote: r.f.allowRemote}
	if r.u.Scheme == "https" {
		o.TLS = &tls.Config{ServerName: host}
		if port == "" {
			port = "443"
		}
	} else if port == "" {
		port = "80"
	}
	o.Addr = net.JoinHostPort(host, port)
	return loadgen.DialH2(ctx, o)
}

// loadgenFiles are the results files of `slowlab loadgen --out`.
type loadgenFiles struct {
	reqs   *recorder.FileWriter[recorder.Request]
	larges *recorder.FileWriter[recorder.LargeResponse]
	err    error // the first write error
}

// openLoadgenFiles creates requests.csv (and large-responses.csv with slow
// readers) in dir; nothing without a dir.
func openLoadgenFiles(dir string, slow bool) (*loadgenFiles, error) {
	f := &loadgenFiles{}
	if dir == "" {
		return f, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	var err error
	if f.reqs, err = recorder.CreateFile[recorder.Request](dir); err == nil && slow {
		f.larges, err = recorder.CreateFile[recorder.LargeResponse](dir)
	}
	if err != nil {
		return nil, errors.Join(err, f.close())
	}
	return f, nil
}

func (f *loadgenFiles) request(row recorder.Request) {
	if f.reqs != nil {
		f.keep(f.reqs.Write(row))
	}
}

func (f *loadgenFiles) download(row recorder.LargeResponse) {
	if f.larges != nil {
		f.keep(f.larges.Write(row))
	}
}

func (f *loadgenFiles) keep(err error) {
	if err != nil && f.err == nil {
		f.err = err
	}
}

// close closes the files, once each: every write, close and fsync error
// reaches the caller.
func (f *loadgenFiles) close() error {
	errs := []error{f.err}
	if f.reqs != nil {
		errs = append(errs, f.reqs.Close())
		f.reqs = nil
	}
	if f.larges != nil {
		errs = append(errs, f.larges.Close())
		f.larges = nil
	}
	return errors.Join(errs...)
}
