package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/target"
)

// LatencyGap is the latency-gap experiment (EXPERIMENTS.md section 3): for
// each delay and response size, Runs requests on a kept-alive connection,
// then Runs on new connections, from a client namespace to the embedded
// target in a server namespace, across a path that delays every packet
// (lab/netem).
//
// The server's figure is its processing from the handler's start (request
// line and headers read) to the last body byte handed to the socket, which
// it reports in a Server-Timing trailer (the target's own Server-Timing
// header is taken when the header is written, before the body; it is kept
// as server_header_ms in gap-requests.csv and hdr_ms in the printed table).
// The trailer needs chunked framing, so responses carry no Content-Length.
// The two differ when the body does not fit in the socket's send buffer:
// with the kernel's default buffer (tcp_wmem), a new connection's buffer
// holds about 50 KB, so the server's write of 100 KB waits for ACKs and
// its last-byte time includes round trips of slow start.
type LatencyGap struct {
	Delays []time.Duration // added one-way delay, in each direction
	Sizes  []int           // response body bytes (/bytes?n=)
	Runs   int             // requests per mode and condition
	Method netem.Method    // how packets are delayed; auto: none at 0, else netem, else the TUN delay line
	Rate   int64           // bytes per second each way; 0 for no limit
	// CongestionControl of the path's sockets; the namespaces' default when "".
	CongestionControl string
	Timeout           time.Duration // per request
}

// DefaultLatencyGap returns the published conditions: 1 KB and 100 KB
// responses at 0 and 25 ms each way (50 ms RTT), 40 runs, cubic (Linux's
// default congestion control, which the original ran with).
func DefaultLatencyGap() LatencyGap {
	return LatencyGap{
		Delays:            []time.Duration{0, 25 * time.Millisecond},
		Sizes:             []int{1024, 102400},
		Runs:              40,
		Method:            netem.MethodAuto,
		CongestionControl: "cubic",
		Timeout:           10 * time.Second,
	}
}

// Validate names the first field that cannot run.
func (e LatencyGap) Validate() error {
	if len(e.Delays) == 0 {
		return errors.New("delays: none given")
	}
	for i, d := range e.Delays {
		if d < 0 || d > time.Second {
			return fmt.Errorf("delays[%d] %s: allowed 0 to 1s each way", i, d)
		}
		if e.Method == netem.MethodNone && d > 0 {
			return fmt.Errorf("delays[%d] %s with method none: none adds no delay; use auto, netem or tun", i, d)
		}
	}
	if len(e.Sizes) == 0 {
		return errors.New("sizes: none given")
	}
	for i, s := range e.Sizes {
		if s < 0 || s > 64<<20 {
			return fmt.Errorf("sizes[%d] %d: allowed 0 to %d bytes", i, s, 64<<20)
		}
	}
	switch {
	case e.Runs < 1 || e.Runs > 10000:
		return fmt.Errorf("runs %d: allowed 1 to 10000", e.Runs)
	case e.Timeout <= 0 || e.Timeout > 5*time.Minute:
		return fmt.Errorf("timeout %s: allowed more than 0 up to 5m", e.Timeout)
	}
	return netem.Config{Method: e.Method, Rate: e.Rate, CongestionControl: e.CongestionControl}.Validate()
}

// LatencyGapRow is one condition's results: its gap.csv and gap-path.csv
// rows, and the server figures had the server timed itself through the
// last body byte written (a Server-Timing trailer) instead of up to its
// response header.
//
// gap.csv's server_ms is what the server reports in its Server-Timing
// header, the figure a server-side dashboard sees. Timed through the last
// byte, a 100 KB response on a new connection shows up to two RTTs more,
// because a new socket's send buffer holds about 50 KB and the write waits
// for ACKs: that figure is kept here and in gap-requests.csv.
type LatencyGapRow struct {
	Gap                                      recorder.GapRow
	Path                                     recorder.GapPath
	ServerLastByteMS, ServerLastByteBlindPct recorder.Maybe
}

// LatencyGapResult is what RunLatencyGap wrote.
type LatencyGapResult struct {
	Dir  string
	Rows []LatencyGapRow
}

// Valid reports whether every condition's path delayed faithfully (the
// TUN delay line's p99 lateness within netem.MaxP99Lateness).
func (r *LatencyGapResult) Valid() bool {
	for _, row := range r.Rows {
		if !row.Path.Valid {
			return false
		}
	}
	return true
}

// gapTables holds the open CSV writers of a latency-gap results directory.
type gapTables struct {
	gaps  *recorder.FileWriter[recorder.GapRow]
	reqs  *recorder.FileWriter[recorder.GapRequest]
	paths *recorder.FileWriter[recorder.GapPath]
}

func (t *gapTables) close() error {
	var errs []error
	if t.gaps != nil {
		errs = append(errs, t.gaps.Close())
	}
	if t.reqs != nil {
		errs = append(errs, t.reqs.Close())
	}
	if t.paths != nil {
		errs = append(errs, t.paths.Close())
	}
	return errors.Join(errs...)
}

// RunLatencyGap runs every delay and size and writes gap.csv,
// gap-requests.csv, gap-path.csv and environment.json to o.Out. It serves
// from the lab process (o.Stack is not used). It needs root for the
// namespaces; without it, it fails before writing anything, saying so. A
// condition whose delay line ran late (p99 lateness above
// netem.MaxP99Lateness, the machine stalled it) is measured again, up to
// gapTries times, the discarded attempts noted in the progress output; the
// last attempt is kept and marked invalid if none was valid. Cancelling
// ctx keeps what was measured, removes the namespaces and returns ctx's
// error.
func RunLatencyGap(ctx context.Context, e LatencyGap, o Options) (*LatencyGapResult, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if err := netem.Check(); err != nil {
		return nil, fmt.Errorf("latency-gap: %w", err)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	o.Stack, o.LoadgenLimits = Embedded{}, nil // what environment.json should say ran
	if err := writeEnvironment(o.Out, "latency-gap", o); err != nil {
		return nil, err
	}
	t := &gapTables{}
	defer t.close()
	var err error
	if t.gaps, err = recorder.CreateFile[recorder.GapRow](o.Out); err != nil {
		return nil, err
	}
	if t.reqs, err = recorder.CreateFile[recorder.GapRequest](o.Out); err != nil {
		return nil, err
	}
	if t.paths, err = recorder.CreateFile[recorder.GapPath](o.Out); err != nil {
		return nil, err
	}
	res := &LatencyGapResult{Dir: o.Out}
	n := len(e.Delays) * len(e.Sizes)
	p := newProgress(o.Progress, n, func(i int) time.Duration {
		return time.Duration(e.Runs) * (10*e.Delays[i/len(e.Sizes)] + 2*time.Millisecond)
	})
	var runErr error
	for i, d := range e.Delays {
		rows, err := e.runDelay(ctx, d, o, t, p, i*len(e.Sizes))
		res.Rows = append(res.Rows, rows...)
		if err != nil || ctx.Err() != nil {
			runErr = err
			if runErr == nil {
				runErr = ctx.Err()
			}
			break
		}
	}
	return res, errors.Join(runErr, t.close())
}

// runDelay builds the path for one delay, serves on it and measures every
// size; the path and the server are gone when it returns.
func (e LatencyGap) runDelay(ctx context.Context, delay time.Duration, o Options, t *gapTables, p *progress, first int) ([]LatencyGapRow, error) {
	path, err := netem.New(ctx, netem.Config{Delay: delay, Rate: e.Rate, Method: e.Method, CongestionControl: e.CongestionControl})
	if err != nil {
		return nil, fmt.Errorf("latency-gap at %s each way: network path: %w", delay, err)
	}
	defer path.Close()
	cc := path.CongestionControl()
	fmt.Fprintf(o.Progress, "path %s: %s, %s each way, client %s, server %s, MTU %d, %s\n",
		path.Name, path.Method, delay, path.ClientAddr, path.ServerAddr, netem.MTU, cc)
	srv, err := startGapServer(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("latency-gap at %s each way: %w", delay, err)
	}
	defer srv.stop()

	var rows []LatencyGapRow
	for j, size := range e.Sizes {
		p.start(first+j, fmt.Sprintf("%d bytes, %s each way (%s)", size, delay, path.Method))
		rtt := ms(2 * delay)
		var reqs []recorder.GapRequest
		var row LatencyGapRow
		for try := 1; ; try++ {
			path.TakeLateness()
			reqs = e.measure(ctx, path, srv.url(size), size, rtt)
			row = summarizeGap(size, rtt, string(path.Method), cc, reqs, path.TakeLateness())
			if row.Path.Valid || try == gapTries || ctx.Err() != nil {
				break
			}
			// A delay line that ran late (the machine stalled it) measured
			// the machine, not the path: measure the condition again.
			fmt.Fprintf(o.Progress, "        delay line lateness p99 %s ms (max %s ms) is above %s: discarded, measuring again (try %d of %d)\n",
				num(row.Path.LatenessP99MS, 3), num(row.Path.LatenessMaxMS, 3), netem.MaxP99Lateness, try+1, gapTries)
		}
		var werr error
		for _, r := range reqs {
			if err := t.reqs.Write(r); err != nil && werr == nil {
				werr = err
			}
		}
		p.spentIntr += p.intrinsic(first + j)
		g := row.Gap
		fmt.Fprintf(o.Progress, "        server %s ms (to last byte %s ms), keep-alive %s ms, new connection %s ms, blind %s%% (to last byte %s%%), %d runs; delay line lateness p99 %s ms%s\n",
			num(g.ServerMS, 3), num(row.ServerLastByteMS, 3), num(g.ClientKeepaliveMS, 2), num(g.ClientNewMS, 2), num(g.ServerBlindPct, 1),
			num(row.ServerLastByteBlindPct, 1), g.Runs, num(row.Path.LatenessP99MS, 3), invalidNote(row.Path))
		rows = append(rows, row)
		if err := errors.Join(werr, t.gaps.Write(row.Gap), t.paths.Write(row.Path)); err != nil {
			return rows, err
		}
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
	}
	return rows, nil
}

// summarizeGap computes a condition's rows from its requests and the
// lateness of its packets.
func summarizeGap(size int, rtt float64, method, cc string, reqs []recorder.GapRequest, lt netem.Lateness) LatencyGapRow {
	byHeader := slices.Clone(reqs)
	for i := range byHeader {
		byHeader[i].ServerMS = byHeader[i].ServerHeaderMS
	}
	row := LatencyGapRow{Gap: recorder.SummarizeGap(size, rtt, method, byHeader)}
	lb := recorder.SummarizeGap(size, rtt, method, reqs)
	row.ServerLastByteMS, row.ServerLastByteBlindPct = lb.ServerMS, lb.ServerBlindPct
	row.Path = recorder.GapPath{SizeBytes: size, RTTMS: rtt, DelayMethod: method, MTU: netem.MTU,
		CongestionControl: cc, Packets: lt.Packets, Dropped: lt.Dropped, Valid: lt.Valid()}
	if method == string(netem.MethodTUN) && lt.Packets > 0 {
		row.Path.LatenessP50MS, row.Path.LatenessP99MS, row.Path.LatenessMaxMS = recorder.Some(ms(lt.P50)), recorder.Some(ms(lt.P99)), recorder.Some(ms(lt.Max))
	}
	return row
}

func invalidNote(p recorder.GapPath) string {
	if p.Valid {
		return ""
	}
	return fmt.Sprintf("  INVALID: p99 lateness above %s", netem.MaxP99Lateness)
}

// measure sends one warm-up request and then Runs measured ones on a
// kept-alive connection, back to back (so the connection's congestion
// window never idles past an RTO), then the same on new connections.
func (e LatencyGap) measure(ctx context.Context, path *netem.Path, url string, size int, rtt float64) []recorder.GapRequest {
	t0 := time.Now()
	var reqs []recorder.GapRequest
	for _, mode := range []string{recorder.GapKeepAlive, recorder.GapNew} {
		c := newGapClient(path, mode == recorder.GapKeepAlive)
		for seq := -1; seq < e.Runs && ctx.Err() == nil; seq++ {
			r := recorder.GapRequest{SizeBytes: size, RTTMS: rtt, DelayMethod: string(path.Method), Mode: mode, Seq: seq}
			gapGet(ctx, c, url, size, e.Timeout, t0, &r)
			if seq < 0 {
				continue // warm-up: opens the kept-alive connection
			}
			reqs = append(reqs, r)
		}
		c.CloseIdleConnections()
	}
	return reqs
}

// gapTries is how often a condition whose delay line ran late is measured
// before its last attempt is kept, marked invalid.
const gapTries = 3

func newGapClient(path *netem.Path, keepAlive bool) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         path.DialContext,
		DisableKeepAlives:   !keepAlive,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     90 * time.Second,
	}}
}

// gapGet performs one GET and fills r: times from httptrace hooks, the
// target's Server-Timing header and the Server-Timing trailer.
func gapGet(ctx context.Context, c *http.Client, url string, size int, timeout time.Duration, t0 time.Time, r *recorder.GapRequest) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The hooks may run on the dialer's goroutine, which can outlive a
	// cancelled request.
	var mu sync.Mutex
	var connectStart time.Time
	r.ConnectMS, r.TTFBMS = math.NaN(), math.NaN()
	start := time.Now()
	r.StartS = start.Sub(t0).Seconds()
	trace := &httptrace.ClientTrace{
		ConnectStart: func(_, _ string) { mu.Lock(); connectStart = time.Now(); mu.Unlock() },
		ConnectDone: func(_, _ string, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err == nil && !connectStart.IsZero() {
				r.ConnectMS = ms(time.Since(connectStart))
			}
		},
		GotConn:              func(i httptrace.GotConnInfo) { mu.Lock(); r.NewConn = !i.Reused; mu.Unlock() },
		GotFirstResponseByte: func() { mu.Lock(); r.TTFBMS = ms(time.Since(start)); mu.Unlock() },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, url, nil)
	var resp *http.Response
	if err == nil {
		resp, err = c.Do(req)
	}
	if err == nil {
		var n int64
		n, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		mu.Lock()
		r.Status, r.Bytes = resp.StatusCode, n
		mu.Unlock()
		if d, ok := loadgen.ParseServerTiming(resp.Header.Get("Server-Timing"), "app"); ok {
			r.ServerHeaderMS = recorder.Some(ms(d))
		}
		if d, ok := loadgen.ParseServerTiming(resp.Trailer.Get("Server-Timing"), "app"); ok {
			r.ServerMS = recorder.Some(ms(d))
		}
		if err == nil && n != int64(size) {
			err = fmt.Errorf("%w: %d of %d bytes", loadgen.ErrIncomplete, n, size)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	r.TotalMS = ms(time.Since(start))
	if err != nil {
		r.Error = err.Error()
	}
}

// gapServer is the embedded target serving in the server namespace.
type gapServer struct {
	hs   *http.Server
	addr string
	done chan struct{}
}

// startGapServer serves the target's endpoints (the async model: one
// goroutine per connection, keep-alive allowed) on the path's server
// address, reporting the last-byte time in a trailer.
func startGapServer(ctx context.Context, path *netem.Path) (*gapServer, error) {
	tg, err := target.New(target.Options{Model: target.ModelAsync, Workers: 1, Threads: 1, BlockSize: target.DefaultBlockSize})
	if err != nil {
		return nil, err
	}
	ln, err := path.Listen(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("listen in the server namespace: %w", err)
	}
	s := &gapServer{hs: &http.Server{Handler: lastByteTiming(tg.Handler()), ReadHeaderTimeout: 30 * time.Second},
		addr: ln.Addr().String(), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.hs.Serve(ln)
	}()
	return s, nil
}

func (s *gapServer) url(size int) string { return fmt.Sprintf("http://%s/bytes?n=%d", s.addr, size) }

// stop closes the listener and every connection and waits for Serve.
func (s *gapServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if s.hs.Shutdown(ctx) != nil {
		s.hs.Close()
	}
	<-s.done
}

// lastByteTiming wraps h so that, after h returns, the response is flushed
// to the socket and Server-Timing: app;dur=<ms> is sent again as a trailer,
// measured from the handler's start to that flush: the server's own view
// of its processing through the last byte written.
func lastByteTiming(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		cw := &chunkedWriter{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		cw.prepare() // also when h wrote nothing
		http.NewResponseController(w).Flush()
		w.Header().Set(http.TrailerPrefix+"Server-Timing", fmt.Sprintf("app;dur=%.3f", ms(time.Since(start))))
	})
}

// chunkedWriter drops Content-Length before the header is written: net/http
// sends trailers only with chunked framing.
type chunkedWriter struct {
	http.ResponseWriter
	wrote bool
}

func (c *chunkedWriter) prepare() {
	if !c.wrote {
		c.wrote = true
		c.Header().Del("Content-Length")
	}
}

func (c *chunkedWriter) WriteHeader(code int) { c.prepare(); c.ResponseWriter.WriteHeader(code) }

func (c *chunkedWriter) Write(b []byte) (int, error) { c.prepare(); return c.ResponseWriter.Write(b) }

// Unwrap lets http.ResponseController reach the real writer.
func (c *chunkedWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// PrintLatencyGap writes the conditions as an aligned table: the gap.csv
// columns, the same by the Server-Timing header (hdr_), then the delay
// line's lateness (TUN only) and whether it was within
// netem.MaxP99Lateness.
func PrintLatencyGap(w io.Writer, rows []LatencyGapRow) {
	table := [][]string{{"size_bytes", "rtt_ms", "method", "server_ms", "keepalive_ms", "new_ms", "blind_%", "last_byte_ms", "last_byte_blind_%",
		"runs", "late_p50_ms", "late_p99_ms", "late_max_ms", "valid"}}
	for _, r := range rows {
		g, p := r.Gap, r.Path
		valid := "yes"
		if !p.Valid {
			valid = "NO"
		}
		table = append(table, []string{fmt.Sprint(g.SizeBytes), fmt.Sprintf("%g", g.RTTMS), g.DelayMethod,
			num(g.ServerMS, 3), num(g.ClientKeepaliveMS, 2), num(g.ClientNewMS, 2), num(g.ServerBlindPct, 1),
			num(r.ServerLastByteMS, 3), num(r.ServerLastByteBlindPct, 1), fmt.Sprint(g.Runs),
			num(p.LatenessP50MS, 3), num(p.LatenessP99MS, 3), num(p.LatenessMaxMS, 3), valid})
	}
	width := make([]int, len(table[0]))
	for _, r := range table {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range table {
		var b strings.Builder
		for i, c := range r {
			b.WriteString(strings.Repeat(" ", width[i]-len(c)) + c + "  ")
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
