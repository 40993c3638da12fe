package latencygap

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/internal/runcert"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// condition is a gap condition's spec as measured.
type condition struct {
	spec
	url string
	tls *tls.Config // the client's; nil without TLS
	id  string      // its run's id (the spec's, or a retry's ID.tryN)
}

// condition measures one condition on the path, again while the path was
// not faithful (a machine that stalled the delay line measured itself).
func (c *Config) condition(ctx context.Context, env *lab.Env, path *netem.Path, cond condition) (Row, []Request) {
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
		env.Logf("        path not faithful (%s): discarded, measuring again (try %d of %d)", invalidWhy(row.Path), try+1, tries)
	}
}

// serve starts the embedded app (async model: a goroutine per connection,
// keep-alive allowed) on the path's server address in a TLS mode (the
// run's certificate made when first needed), reporting its last-byte
// time in a trailer.
func (s *session) serve(mode string) (*server, error) {
	srv := &server{mode: mode, scheme: "http"}
	var srvTLS *tls.Config
	if mode != TLSNone {
		if s.cert == nil {
			var err error
			if s.cert, err = runcert.New("slowlab latency-gap "+s.path.ServerAddr.String(), s.path.ServerAddr); err != nil {
				return nil, err
			}
		}
		srvTLS, srv.clientTLS, srv.scheme = serverTLS(s.cert, mode), clientTLS(s.cert, mode), "https"
	}
	tg, err := appserver.New(appserver.Options{Model: appserver.ModelAsync, Workers: 1, Threads: 1, BlockSize: appserver.DefaultBlockSize,
		LastByteTiming: true, TracerProvider: s.env.TracerProvider})
	if err != nil {
		return nil, err
	}
	ln, err := s.path.Listen(s.ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("listen in the server namespace: %w", err)
	}
	_, srv.port, _ = net.SplitHostPort(ln.Addr().String())
	if srvTLS != nil {
		ln = tls.NewListener(ln, srvTLS)
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tg.Serve(sctx, ln, nil)
	}()
	srv.stop = func() { cancel(); <-done }
	return srv, nil
}

// measure sends one warm-up request and then Reps x Runs measured ones on a
// kept-alive connection, back to back (so the connection's congestion
// window never idles past an RTO), then the same on new connections.
func (c *Config) measure(ctx context.Context, env *lab.Env, path *netem.Path, cond condition, configured float64) []Request {
	t0 := time.Now()
	runID := cond.id
	var reqs []Request
	res, err := startResolver(ctx, path, cond.settings)
	if err != nil {
		env.Logf("path %s: %v", path.Name, err)
		for _, mode := range []string{ModeKeepAlive, ModeNew} {
			for seq := range c.Reps * c.Runs {
				reqs = append(reqs, requestRow(loadgen.Result{Err: err}, t0, cond, configured, string(path.Method), mode, seq, nil))
			}
		}
		return reqs
	}
	defer res.close()
	for _, mode := range []string{ModeKeepAlive, ModeNew} {
		clientTLS := modeTLS(cond.tls)
		dial := path.DialContext
		if res != nil {
			// Its own cache: a mode looks up on its own. Its connects run
			// at once (parallelDial), as happy eyeballs races them.
			dial = newNameDialer(parallelDial(path, c.CongestionControl), res.addr).DialContext
			if clientTLS != nil {
				clientTLS.ServerName = path.ServerAddr.String() // the certificate's
			}
		}
		client := loadgen.NewClient(loadgen.ClientOptions{DialContext: dial, KeepAlive: mode == ModeKeepAlive,
			Timeout: time.Duration(c.Timeout), TCPInfo: true, TracerProvider: env.TracerProvider, TLS: clientTLS})
		for seq := -1; seq < c.Reps*c.Runs && ctx.Err() == nil; seq++ {
			var r loadgen.Result
			var l lookup
			client.Get(withLookup(ctx, &l), cond.url, &r)
			if seq < 0 {
				continue // warm-up: opens the kept-alive connection, or the session a new one resumes, or fills the DNS cache
			}
			env.Metrics.Observe(runID, loadgen.RoleGap, &r)
			reqs = append(reqs, requestRow(r, t0, cond, configured, string(path.Method), mode, seq, &l))
			env.RequestDone(runID)
		}
		client.Close()
	}
	return reqs
}

// modeTLS is a mode's client TLS configuration (nil without TLS): c
// with its own session cache, where c has one, so that a mode resumes
// only its own sessions.
func modeTLS(c *tls.Config) *tls.Config {
	if c == nil {
		return nil
	}
	m := c.Clone()
	if c.ClientSessionCache != nil {
		m.ClientSessionCache = tls.NewLRUClientSessionCache(16)
	}
	return m
}

// runID names a condition's run in the results files, metrics and
// traces: latency-gap.1024B.50ms, then what differs from a plain path.
func runID(size int, configured float64, s Settings) string {
	id := fmt.Sprintf("latency-gap.%dB.%gms", size, configured)
	if s.DelayUpMS != s.DelayDownMS {
		id += fmt.Sprintf(".up%gms", s.DelayUpMS)
	}
	if s.LossPct > 0 {
		id += fmt.Sprintf(".loss%g", s.LossPct)
	}
	if s.RateBits > 0 {
		id += "." + BitRate(s.RateBits).String()
	}
	if s.TLS != TLSNone {
		id += ".tls" + s.TLS
	}
	if s.WorkMS > 0 {
		id += fmt.Sprintf(".work%gms", s.WorkMS)
		if s.WorkKind == WorkCPU {
			id += "cpu"
		}
	}
	if dnsOn(s) {
		id += ".dns" + dnsName(s, "", ".")
	}
	return id
}

// dnsName names a condition's DNS mode (with DNS): the mode, then after
// delaySep the resolver's delay, and after famSep a family mode other
// than a, with aaaa-late's delay: cold+20ms/aaaa-late100ms.
func dnsName(s Settings, delaySep, famSep string) string {
	n := s.DNS
	if s.DNSDelayMS > 0 {
		n += fmt.Sprintf("%s%gms", delaySep, s.DNSDelayMS)
	}
	if s.DNSFamilies != "" && s.DNSFamilies != FamiliesA {
		n += famSep + s.DNSFamilies
	}
	if s.DNSAAAADelayMS > 0 {
		n += fmt.Sprintf("%gms", s.DNSAAAADelayMS)
	}
	return n
}

// requestRow is a request's gap-requests.csv row; l is its lookup, if
// any (Request.DNSMS).
func requestRow(r loadgen.Result, t0 time.Time, cond condition, configured float64, method, mode string, seq int, l *lookup) Request {
	size := cond.size
	row := Request{SizeBytes: size, ConfiguredRTTMS: configured, DelayMethod: method, Mode: mode, Seq: seq,
		StartS: r.Start.Sub(t0).Seconds(), NewConn: r.NewConn, ConnectMS: math.NaN(), TTFBMS: math.NaN(),
		TotalMS: ms(r.Latency), Status: r.Status, Bytes: r.Bytes, Settings: cond.settings, TLSResumed: r.TLSResumed, RunID: cond.id,
		HandshakeMS: positiveMS(r.TLSHandshake), ServerHeaderMS: positiveMS(r.ServerTiming),
		ServerLastByteMS: positiveMS(r.ServerTimingTrailer), TCPRTTMS: positiveMS(r.TCPMinRTT)}
	if r.NewConn && r.Connect > 0 {
		row.ConnectMS = ms(r.Connect)
	}
	if r.TTFB > 0 {
		row.TTFBMS = ms(r.TTFB)
	}
	if l != nil && l.done {
		row.DNSMS = recorder.Some(ms(l.took))
		row.Family = l.family
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

// positiveMS is d in ms, none unless d is above 0 (not measured).
func positiveMS(d time.Duration) recorder.Maybe {
	if d <= 0 {
		return recorder.None()
	}
	return recorder.Some(ms(d))
}

// dnsOn reports whether a condition resolves the server's name.
func dnsOn(s Settings) bool { return s.DNS != "" && s.DNS != DNSNone }

// dnsCost is what a condition's lookups may add per request: a round
// trip and the resolver's delay, twice (each mode's connection).
func dnsCost(s Settings, p pathCond) time.Duration {
	if !dnsOn(s) {
		return 0
	}
	return 2 * (p.rtt() + msDuration(s.DNSDelayMS+s.DNSAAAADelayMS))
}
