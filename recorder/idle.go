package recorder

import "math"

// IdleConn is one row of idle-conns.csv (idle-connections): one held
// connection of a run. Mode is idle (connects and sends nothing) or
// slowloris (a request header a byte at a time, never finished). HeldS is
// from the connect's completion until the connection ended, and End how:
// fin or reset (the server closed it; ReceivedBytes says whether it sent
// anything first, FirstLine what: a 408, say), bound (still open when the
// holder's bound came and the holder closed it), connect-error (never
// connected: Error says why), canceled or error.
type IdleConn struct {
	RunID         string
	Route, Server string
	Mode          string
	Conns         int
	Seq           int
	Source        string // local address:port
	StartS        float64
	ConnectMS     float64
	HeldS         Maybe // empty when it never connected
	End           string
	SentBytes     int
	ReceivedBytes int
	FirstLine     string
	Error         string
}

func (IdleConn) Schema() *Schema[IdleConn] { return &idleConnSchema }

var idleConnSchema = Schema[IdleConn]{file: "idle-conns.csv", cols: []Column[IdleConn]{
	Col("run_id", 0, func(r *IdleConn) any { return &r.RunID }),
	Col("route", 0, func(r *IdleConn) any { return &r.Route }),
	Col("server", 0, func(r *IdleConn) any { return &r.Server }),
	Col("mode", 0, func(r *IdleConn) any { return &r.Mode }),
	Col("conns", 0, func(r *IdleConn) any { return &r.Conns }),
	Col("seq", 0, func(r *IdleConn) any { return &r.Seq }),
	Col("source", 0, func(r *IdleConn) any { return &r.Source }),
	Col("start_s", msOfS, func(r *IdleConn) any { return &r.StartS }),
	Col("connect_ms", usOfMS, func(r *IdleConn) any { return &r.ConnectMS }),
	Col("held_s", msOfS, func(r *IdleConn) any { return &r.HeldS }),
	Col("end", 0, func(r *IdleConn) any { return &r.End }),
	Col("sent_bytes", whole, func(r *IdleConn) any { return &r.SentBytes }),
	Col("received_bytes", whole, func(r *IdleConn) any { return &r.ReceivedBytes }),
	Col("first_line", 0, func(r *IdleConn) any { return &r.FirstLine }),
	Col("error", 0, func(r *IdleConn) any { return &r.Error }),
}}

// Ends of a held connection, as written in idle-conns.csv.
const (
	IdleEndFIN   = "fin"
	IdleEndReset = "reset"
	IdleEndBound = "bound"
)

// IdleRun is one row of idle-runs.csv (idle-connections): one run's held
// connections and /fast requests summarized. Connected counts the
// connections that connected; FIN, Reset and Bound how many of them ended
// each way; Responded how many got bytes from the server before it closed
// them. ServerClosedP50S and ServerClosedMaxS are the median and largest
// held time of the connections the server closed (fin or reset): how long
// the server held an idle connection. BoundS is the holder's bound, after
// which it closed a connection the server still held; AppTimeoutS and
// HeaderTimeoutS the app's worker timeout and the proxy's
// client_header_timeout the run set (empty: the component's default).
// FastP95MS is the nearest-rank p95 of the ok /fast latencies. Memory
// columns are each component's peak over the run in MiB (cgroup usage;
// RSS summed over its processes); FDs and Established its peak open file
// descriptors and established TCP connections (the exporter's
// slowlab_process_open_fds and slowlab_sockets{state="established"}).
type IdleRun struct {
	RunID                              string
	Route, Server, Mode                string
	Conns, Rep                         int
	Status, Reason                     string
	Connected, ConnectErrors           int
	FIN, Reset, Bound                  int
	Responded                          int
	ServerClosedP50S, ServerClosedMaxS Maybe
	BoundS                             float64
	AppTimeoutS, HeaderTimeoutS        Maybe
	FastSent, FastOK                   int
	FastP50MS, FastP95MS               Maybe
	AppMemMiB, AppRSSMiB               Maybe
	ProxyMemMiB, ProxyRSSMiB           Maybe
	AppFDs, AppEstablished             Maybe
	ProxyFDs, ProxyEstablished         Maybe
}

func (IdleRun) Schema() *Schema[IdleRun] { return &idleRunSchema }

var idleRunSchema = Schema[IdleRun]{file: "idle-runs.csv", cols: []Column[IdleRun]{
	Col("run_id", 0, func(r *IdleRun) any { return &r.RunID }),
	Col("route", 0, func(r *IdleRun) any { return &r.Route }),
	Col("server", 0, func(r *IdleRun) any { return &r.Server }),
	Col("mode", 0, func(r *IdleRun) any { return &r.Mode }),
	Col("conns", 0, func(r *IdleRun) any { return &r.Conns }),
	Col("rep", 0, func(r *IdleRun) any { return &r.Rep }),
	Col("status", 0, func(r *IdleRun) any { return &r.Status }),
	Col("reason", 0, func(r *IdleRun) any { return &r.Reason }),
	Col("connected", 0, func(r *IdleRun) any { return &r.Connected }),
	Col("connect_errors", 0, func(r *IdleRun) any { return &r.ConnectErrors }),
	Col("fin", 0, func(r *IdleRun) any { return &r.FIN }),
	Col("reset", 0, func(r *IdleRun) any { return &r.Reset }),
	Col("bound", 0, func(r *IdleRun) any { return &r.Bound }),
	Col("responded", 0, func(r *IdleRun) any { return &r.Responded }),
	Col("server_closed_p50_s", msOfS, func(r *IdleRun) any { return &r.ServerClosedP50S }),
	Col("server_closed_max_s", msOfS, func(r *IdleRun) any { return &r.ServerClosedMaxS }),
	Col("bound_s", msOfS, func(r *IdleRun) any { return &r.BoundS }),
	Col("app_timeout_s", msOfS, func(r *IdleRun) any { return &r.AppTimeoutS }),
	Col("header_timeout_s", msOfS, func(r *IdleRun) any { return &r.HeaderTimeoutS }),
	Col("fast_sent", 0, func(r *IdleRun) any { return &r.FastSent }),
	Col("fast_ok", 0, func(r *IdleRun) any { return &r.FastOK }),
	Col("fast_p50_ms", usOfMS, func(r *IdleRun) any { return &r.FastP50MS }),
	Col("fast_p95_ms", usOfMS, func(r *IdleRun) any { return &r.FastP95MS }),
	Col("app_mem_mib", kibOfMi, func(r *IdleRun) any { return &r.AppMemMiB }),
	Col("app_rss_mib", kibOfMi, func(r *IdleRun) any { return &r.AppRSSMiB }),
	Col("proxy_mem_mib", kibOfMi, func(r *IdleRun) any { return &r.ProxyMemMiB }),
	Col("proxy_rss_mib", kibOfMi, func(r *IdleRun) any { return &r.ProxyRSSMiB }),
	Col("app_fds_peak", whole, func(r *IdleRun) any { return &r.AppFDs }),
	Col("app_established_peak", whole, func(r *IdleRun) any { return &r.AppEstablished }),
	Col("proxy_fds_peak", whole, func(r *IdleRun) any { return &r.ProxyFDs }),
	Col("proxy_established_peak", whole, func(r *IdleRun) any { return &r.ProxyEstablished }),
}}

// PeakOf is the largest value of a column among component's samples
// (None when none was measured).
func PeakOf(samples []ResourceSample, component string, value func(ResourceSample) Maybe) Maybe {
	var peak Maybe
	for _, s := range samples {
		if v := value(s); s.Component == component && v.Valid && (!peak.Valid || v.Value > peak.Value) {
			peak = v
		}
	}
	return peak
}

// SummarizeIdle fills run's connection and /fast columns from its held
// connections and /fast requests (every one of the run).
func SummarizeIdle(run IdleRun, conns []IdleConn, fast []Request) IdleRun {
	var closed []float64
	for _, c := range conns {
		if c.HeldS.Valid {
			run.Connected++
		} else if c.End == "connect-error" {
			run.ConnectErrors++
		}
		switch c.End {
		case IdleEndFIN:
			run.FIN++
			closed = append(closed, c.HeldS.Value)
		case IdleEndReset:
			if c.HeldS.Valid {
				run.Reset++
				closed = append(closed, c.HeldS.Value)
			}
		case IdleEndBound:
			run.Bound++
		}
		if c.ReceivedBytes > 0 {
			run.Responded++
		}
	}
	if len(closed) > 0 {
		run.ServerClosedP50S = Some(Median(closed))
		run.ServerClosedMaxS = Some(NearestRank(closed, 100))
	}
	var lat []float64
	for _, r := range fast {
		if math.IsNaN(r.StartS) {
			continue
		}
		run.FastSent++
		if okRequest(r) {
			run.FastOK++
			lat = append(lat, r.LatencyMS)
		}
	}
	run.FastP50MS, run.FastP95MS = Some(NearestRank(lat, 50)), Some(NearestRank(lat, 95))
	return run
}
