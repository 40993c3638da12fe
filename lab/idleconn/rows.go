package idleconn

import (
	"math"

	"github.com/slowlab/slowlab/recorder"
)

// The results files of the rows this package declares.
const (
	connFile = "idle-conns.csv"
	runFile  = "idle-runs.csv"
)

// Conn is one row of idle-conns.csv (idle-connections): one held
// connection of a run. Mode is idle (connects and sends nothing) or
// slowloris (a request header a byte at a time, never finished). HeldS is
// from the connect's completion until the connection ended, and End how:
// fin or reset (the server closed it; ReceivedBytes says whether it sent
// anything first, FirstLine what: a 408, say), bound (still open when the
// holder's bound came and the holder closed it), connect-error (never
// connected: Error says why), canceled or error.
type Conn struct {
	RunID         string
	Route, Server string
	Mode          string
	Conns         int
	Seq           int
	Source        string // local address:port
	StartS        float64
	ConnectMS     float64
	HeldS         recorder.Maybe // empty when it never connected
	End           string
	SentBytes     int
	ReceivedBytes int
	FirstLine     string
	Error         string
}

func (Conn) Schema() *recorder.Schema[Conn] { return connSchema }

var connSchema = recorder.NewSchema(connFile,
	recorder.Col("run_id", 0, func(r *Conn) any { return &r.RunID }),
	recorder.Col("route", 0, func(r *Conn) any { return &r.Route }),
	recorder.Col("server", 0, func(r *Conn) any { return &r.Server }),
	recorder.Col("mode", 0, func(r *Conn) any { return &r.Mode }),
	recorder.Col("conns", 0, func(r *Conn) any { return &r.Conns }),
	recorder.Col("seq", 0, func(r *Conn) any { return &r.Seq }),
	recorder.Col("source", 0, func(r *Conn) any { return &r.Source }),
	recorder.Col("start_s", recorder.DecimalsSeconds, func(r *Conn) any { return &r.StartS }),
	recorder.Col("connect_ms", recorder.DecimalsMillis, func(r *Conn) any { return &r.ConnectMS }),
	recorder.Col("held_s", recorder.DecimalsSeconds, func(r *Conn) any { return &r.HeldS }),
	recorder.Col("end", 0, func(r *Conn) any { return &r.End }),
	recorder.Col("sent_bytes", recorder.DecimalsWhole, func(r *Conn) any { return &r.SentBytes }),
	recorder.Col("received_bytes", recorder.DecimalsWhole, func(r *Conn) any { return &r.ReceivedBytes }),
	recorder.Col("first_line", 0, func(r *Conn) any { return &r.FirstLine }),
	recorder.Col("error", 0, func(r *Conn) any { return &r.Error }),
)

// Ends of a held connection, as written in idle-conns.csv.
const (
	EndFIN   = "fin"
	EndReset = "reset"
	EndBound = "bound"
)

// RunRow is one row of idle-runs.csv (idle-connections): one run's held
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
type RunRow struct {
	RunID                              string
	Route, Server, Mode                string
	Conns, Rep                         int
	Status, Reason                     string
	Connected, ConnectErrors           int
	FIN, Reset, Bound                  int
	Responded                          int
	ServerClosedP50S, ServerClosedMaxS recorder.Maybe
	BoundS                             float64
	AppTimeoutS, HeaderTimeoutS        recorder.Maybe
	FastSent, FastOK                   int
	FastP50MS, FastP95MS               recorder.Maybe
	AppMemMiB, AppRSSMiB               recorder.Maybe
	ProxyMemMiB, ProxyRSSMiB           recorder.Maybe
	AppFDs, AppEstablished             recorder.Maybe
	ProxyFDs, ProxyEstablished         recorder.Maybe
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.NewSchema(runFile,
	recorder.Col("run_id", 0, func(r *RunRow) any { return &r.RunID }),
	recorder.Col("route", 0, func(r *RunRow) any { return &r.Route }),
	recorder.Col("server", 0, func(r *RunRow) any { return &r.Server }),
	recorder.Col("mode", 0, func(r *RunRow) any { return &r.Mode }),
	recorder.Col("conns", 0, func(r *RunRow) any { return &r.Conns }),
	recorder.Col("rep", 0, func(r *RunRow) any { return &r.Rep }),
	recorder.Col("status", 0, func(r *RunRow) any { return &r.Status }),
	recorder.Col("reason", 0, func(r *RunRow) any { return &r.Reason }),
	recorder.Col("connected", 0, func(r *RunRow) any { return &r.Connected }),
	recorder.Col("connect_errors", 0, func(r *RunRow) any { return &r.ConnectErrors }),
	recorder.Col("fin", 0, func(r *RunRow) any { return &r.FIN }),
	recorder.Col("reset", 0, func(r *RunRow) any { return &r.Reset }),
	recorder.Col("bound", 0, func(r *RunRow) any { return &r.Bound }),
	recorder.Col("responded", 0, func(r *RunRow) any { return &r.Responded }),
	recorder.Col("server_closed_p50_s", recorder.DecimalsSeconds, func(r *RunRow) any { return &r.ServerClosedP50S }),
	recorder.Col("server_closed_max_s", recorder.DecimalsSeconds, func(r *RunRow) any { return &r.ServerClosedMaxS }),
	recorder.Col("bound_s", recorder.DecimalsSeconds, func(r *RunRow) any { return &r.BoundS }),
	recorder.Col("app_timeout_s", recorder.DecimalsSeconds, func(r *RunRow) any { return &r.AppTimeoutS }),
	recorder.Col("header_timeout_s", recorder.DecimalsSeconds, func(r *RunRow) any { return &r.HeaderTimeoutS }),
	recorder.Col("fast_sent", 0, func(r *RunRow) any { return &r.FastSent }),
	recorder.Col("fast_ok", 0, func(r *RunRow) any { return &r.FastOK }),
	recorder.Col("fast_p50_ms", recorder.DecimalsMillis, func(r *RunRow) any { return &r.FastP50MS }),
	recorder.Col("fast_p95_ms", recorder.DecimalsMillis, func(r *RunRow) any { return &r.FastP95MS }),
	recorder.Col("app_mem_mib", recorder.DecimalsMiB, func(r *RunRow) any { return &r.AppMemMiB }),
	recorder.Col("app_rss_mib", recorder.DecimalsMiB, func(r *RunRow) any { return &r.AppRSSMiB }),
	recorder.Col("proxy_mem_mib", recorder.DecimalsMiB, func(r *RunRow) any { return &r.ProxyMemMiB }),
	recorder.Col("proxy_rss_mib", recorder.DecimalsMiB, func(r *RunRow) any { return &r.ProxyRSSMiB }),
	recorder.Col("app_fds_peak", recorder.DecimalsWhole, func(r *RunRow) any { return &r.AppFDs }),
	recorder.Col("app_established_peak", recorder.DecimalsWhole, func(r *RunRow) any { return &r.AppEstablished }),
	recorder.Col("proxy_fds_peak", recorder.DecimalsWhole, func(r *RunRow) any { return &r.ProxyFDs }),
	recorder.Col("proxy_established_peak", recorder.DecimalsWhole, func(r *RunRow) any { return &r.ProxyEstablished }),
)

// SummarizeRun fills run's connection and /fast columns from its held
// connections and /fast requests (every one of the run).
func SummarizeRun(run RunRow, conns []Conn, fast []recorder.Request) RunRow {
	var closed []float64
	for _, c := range conns {
		if c.HeldS.Valid {
			run.Connected++
		} else if c.End == "connect-error" {
			run.ConnectErrors++
		}
		switch c.End {
		case EndFIN:
			run.FIN++
			closed = append(closed, c.HeldS.Value)
		case EndReset:
			if c.HeldS.Valid {
				run.Reset++
				closed = append(closed, c.HeldS.Value)
			}
		case EndBound:
			run.Bound++
		}
		if c.ReceivedBytes > 0 {
			run.Responded++
		}
	}
	if len(closed) > 0 {
		run.ServerClosedP50S = recorder.Some(recorder.Median(closed))
		run.ServerClosedMaxS = recorder.Some(recorder.NearestRank(closed, 100))
	}
	var lat []float64
	for _, r := range fast {
		if math.IsNaN(r.StartS) {
			continue
		}
		run.FastSent++
		if recorder.OKRequest(r) {
			run.FastOK++
			lat = append(lat, r.LatencyMS)
		}
	}
	run.FastP50MS, run.FastP95MS = recorder.Some(recorder.NearestRank(lat, 50)), recorder.Some(recorder.NearestRank(lat, 95))
	return run
}

// VerdictFields implements recorder.RunRow.
func (RunRow) VerdictFields(r *RunRow) (id, status, reason *string) {
	return &r.RunID, &r.Status, &r.Reason
}
