package idleconn

import (
	"math"

	"github.com/slowlab/slowlab/lab"
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
	RunID         string         `csv:"run_id"`
	Route         string         `csv:"route"`
	Server        string         `csv:"server"`
	Mode          string         `csv:"mode"`
	Conns         int            `csv:"conns"`
	Seq           int            `csv:"seq"`
	Source        string         `csv:"source"` // local address:port
	StartS        float64        `csv:"start_s,seconds"`
	ConnectMS     float64        `csv:"connect_ms,millis"`
	HeldS         recorder.Maybe `csv:"held_s,seconds"` // empty when it never connected
	End           string         `csv:"end"`
	SentBytes     int            `csv:"sent_bytes"`
	ReceivedBytes int            `csv:"received_bytes"`
	FirstLine     string         `csv:"first_line"`
	Error         string         `csv:"error"`
}

func (Conn) Schema() *recorder.Schema[Conn] { return connSchema }

var connSchema = recorder.Tagged[Conn](connFile)

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
// The mode column comes after server (runSchema's spans).
type RunRow struct {
	lab.RunKey       `csv:"clients=conns"`
	Mode             string         `csv:"mode"`
	Status           string         `csv:"status"`
	Reason           string         `csv:"reason"`
	Connected        int            `csv:"connected"`
	ConnectErrors    int            `csv:"connect_errors"`
	FIN              int            `csv:"fin"`
	Reset            int            `csv:"reset"`
	Bound            int            `csv:"bound"`
	Responded        int            `csv:"responded"`
	ServerClosedP50S recorder.Maybe `csv:"server_closed_p50_s,seconds"`
	ServerClosedMaxS recorder.Maybe `csv:"server_closed_max_s,seconds"`
	BoundS           float64        `csv:"bound_s,seconds"`
	AppTimeoutS      recorder.Maybe `csv:"app_timeout_s,seconds"`
	HeaderTimeoutS   recorder.Maybe `csv:"header_timeout_s,seconds"`
	FastSent         int            `csv:"fast_sent"`
	FastOK           int            `csv:"fast_ok"`
	FastP50MS        recorder.Maybe `csv:"fast_p50_ms,millis"`
	FastP95MS        recorder.Maybe `csv:"fast_p95_ms,millis"`
	AppMemMiB        recorder.Maybe `csv:"app_mem_mib,mib"`
	AppRSSMiB        recorder.Maybe `csv:"app_rss_mib,mib"`
	ProxyMemMiB      recorder.Maybe `csv:"proxy_mem_mib,mib"`
	ProxyRSSMiB      recorder.Maybe `csv:"proxy_rss_mib,mib"`
	AppFDs           recorder.Maybe `csv:"app_fds_peak"`
	AppEstablished   recorder.Maybe `csv:"app_established_peak"`
	ProxyFDs         recorder.Maybe `csv:"proxy_fds_peak"`
	ProxyEstablished recorder.Maybe `csv:"proxy_established_peak"`
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.TaggedSpans[RunRow](runFile, "RunID-Server", "Mode", "Clients-Rep", "Status-ProxyEstablished")

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
	run.ServerClosedP50S = recorder.Some(recorder.Median(closed))
	run.ServerClosedMaxS = recorder.Some(recorder.NearestRank(closed, 100))
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
