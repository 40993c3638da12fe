package h2slowclient

import (
	"slices"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// The results files of the rows this package declares.
const (
	streamFile = "h2-streams.csv"
	runFile    = "h2-runs.csv"
)

// Stream is one row of h2-streams.csv: one slow HTTP/2 (or HTTP/3:
// Protocol h3) stream of a run of h2-slow-client, as its reader saw it.
// Conn numbers its connection in
// the run (every stream on 0 when the condition puts them on one);
// FirstByteMS is its request's HEADERS until the response's; TotalS until
// the reader consumed the last byte or the stream ended; Outcome is
// "complete", "cut" (open at the end of the hold, reset by the client),
// "reset" (reset by the server: the proxy's send_timeout) or the load
// generator's error reason (a stream the proxy reset, a
// connection it closed); AppHeld says the app began its response and had
// not finished it at the end of the hold: a worker still writing it.
type Stream struct {
	RunID, Route, Server string
	Protocol             string // h2 or h3
	Streams, Rep         int
	Stream, Conn         int
	Status               int
	Bytes                int64
	FirstByteMS          recorder.Maybe
	TotalS               float64
	Outcome              string
	AppHeld              bool
	Error                string
}

// Stream.Outcome values besides the error reasons.
const (
	OutcomeComplete = "complete"
	OutcomeCut      = "cut"
	OutcomeReset    = "reset"
)

func (Stream) Schema() *recorder.Schema[Stream] { return streamSchema }

var streamSchema = recorder.NewSchema(streamFile,
	recorder.Col("run_id", 0, func(r *Stream) any { return &r.RunID }),
	recorder.Col("route", 0, func(r *Stream) any { return &r.Route }),
	recorder.Col("protocol", 0, func(r *Stream) any { return &r.Protocol }).Added("h2"),
	recorder.Col("server", 0, func(r *Stream) any { return &r.Server }),
	recorder.Col("streams", 0, func(r *Stream) any { return &r.Streams }),
	recorder.Col("rep", 0, func(r *Stream) any { return &r.Rep }),
	recorder.Col("stream", 0, func(r *Stream) any { return &r.Stream }),
	recorder.Col("conn", 0, func(r *Stream) any { return &r.Conn }),
	recorder.Col("status", 0, func(r *Stream) any { return &r.Status }),
	recorder.Col("bytes", 0, func(r *Stream) any { return &r.Bytes }),
	recorder.Col("first_byte_ms", recorder.DecimalsMillis, func(r *Stream) any { return &r.FirstByteMS }),
	recorder.Col("total_s", recorder.DecimalsSeconds, func(r *Stream) any { return &r.TotalS }),
	recorder.Col("outcome", 0, func(r *Stream) any { return &r.Outcome }),
	recorder.Col("app_held", 0, func(r *Stream) any { return &r.AppHeld }),
	recorder.Col("error", 0, func(r *Stream) any { return &r.Error }),
)

// RunRow is one row of h2-runs.csv: one run of h2-slow-client. Streams
// slow HTTP/2 (or HTTP/3: Protocol h3) streams read /large (on one connection, or a connection
// each: Conns), paced or stalled, while /fast ran its open-loop schedule
// over HTTP/2 on its own connection or on the slow streams' first
// (FastConn "separate" or "shared"). AppHeldMax is the most slow
// responses the app was writing at once (begun, not finished; sampled
// every 200 ms from its send log): the workers the streams held.
// AppComplete counts the slow responses the app handed over recorder.DecimalsWhole. The
// proxy's memory and temp-file peaks are what the streams cost it.
type RunRow struct {
	RunID, Route, Server string
	Protocol             string // h2 or h3: what the clients spoke to the proxy
	Streams, Rep         int
	Conns                int
	FastConn             string
	Read                 string // "paced" or "stall"
	StreamWindow         int64
	ConnWindow           int64
	StartedAt            time.Time
	Status, Reason       string
	Complete, Cut        int
	Reset, Failed        int
	ResetAfterS          recorder.Maybe // the reset streams' median total_s: when the proxy gave up on them
	Workers              recorder.Maybe
	AppHeldMax           recorder.Maybe
	AppComplete          int
	ProxyMemPeakMiB      recorder.Maybe
	TempPeakMiB          recorder.Maybe
	recorder.FastFields
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.NewSchema(runFile, slices.Concat(
	[]recorder.Column[RunRow]{
		recorder.Col("run_id", 0, func(r *RunRow) any { return &r.RunID }),
		recorder.Col("route", 0, func(r *RunRow) any { return &r.Route }),
		recorder.Col("protocol", 0, func(r *RunRow) any { return &r.Protocol }).Added("h2"),
		recorder.Col("server", 0, func(r *RunRow) any { return &r.Server }),
		recorder.Col("streams", 0, func(r *RunRow) any { return &r.Streams }),
		recorder.Col("rep", 0, func(r *RunRow) any { return &r.Rep }),
		recorder.Col("conns", 0, func(r *RunRow) any { return &r.Conns }),
		recorder.Col("fast_conn", 0, func(r *RunRow) any { return &r.FastConn }),
		recorder.Col("read", 0, func(r *RunRow) any { return &r.Read }),
		recorder.Col("stream_window", 0, func(r *RunRow) any { return &r.StreamWindow }),
		recorder.Col("conn_window", 0, func(r *RunRow) any { return &r.ConnWindow }),
	},
	recorder.StatusCols(func(r *RunRow) recorder.RunStatus {
		return recorder.RunStatus{StartedAt: &r.StartedAt, Status: &r.Status, Reason: &r.Reason}
	}),
	[]recorder.Column[RunRow]{
		recorder.Col("complete", 0, func(r *RunRow) any { return &r.Complete }),
		recorder.Col("cut", 0, func(r *RunRow) any { return &r.Cut }),
		recorder.Col("reset", 0, func(r *RunRow) any { return &r.Reset }),
		recorder.Col("failed", 0, func(r *RunRow) any { return &r.Failed }),
		recorder.Col("reset_after_s", recorder.DecimalsSeconds, func(r *RunRow) any { return &r.ResetAfterS }),
		recorder.Col("workers", recorder.DecimalsWhole, func(r *RunRow) any { return &r.Workers }),
		recorder.Col("app_held_max", recorder.DecimalsWhole, func(r *RunRow) any { return &r.AppHeldMax }),
		recorder.Col("app_complete", 0, func(r *RunRow) any { return &r.AppComplete }),
		recorder.Col("proxy_mem_peak_mib", recorder.DecimalsMiB, func(r *RunRow) any { return &r.ProxyMemPeakMiB }),
		recorder.Col("temp_peak_mib", recorder.DecimalsMiB, func(r *RunRow) any { return &r.TempPeakMiB }),
	},
	recorder.FastCols(fastOf),
)...)

// SummarizeRun fills run's /fast columns from reqs (as recorder.SummarizeRun
// does) and its stream counts from the run's streams.
func SummarizeRun(run RunRow, reqs []recorder.Request, streams []Stream) RunRow {
	run.SummarizeFast(reqs)
	run.Complete, run.Cut, run.Reset, run.Failed = 0, 0, 0, 0
	var resetAfter []float64
	for _, s := range streams {
		switch s.Outcome {
		case OutcomeComplete:
			run.Complete++
		case OutcomeCut:
			run.Cut++
		case OutcomeReset:
			run.Reset++
			resetAfter = append(resetAfter, s.TotalS)
		default:
			run.Failed++
		}
	}
	run.ResetAfterS = recorder.Some(recorder.Median(resetAfter))
	return run
}

// Summary is one condition of h2-slow-client over its ok runs: the
// printed table's row. Stream outcomes are summed; AppHeldMax and the
// proxy's peaks are the largest; /fast percentiles the runs' medians.
type Summary struct {
	Route, Protocol     string
	Server              string
	Streams, Conns      int
	FastConn, Read      string
	ConnWindow          int64
	Runs, Excluded      int
	Complete, Cut       int
	Reset, Failed       int
	ResetAfterS         recorder.Maybe // median of the runs'
	Workers, AppHeldMax recorder.Maybe
	AppComplete         int
	ProxyMemPeakMiB     recorder.Maybe
	TempPeakMiB         recorder.Maybe
	recorder.FastOver
}

// Summarize folds runs into one Summary per (route, protocol,
// server, streams, conns, fast_conn, read, conn_window), in order of
// first appearance; runs that did not end ok count only in Excluded.
func Summarize(runs []RunRow) []Summary {
	type key struct {
		route, proto   string
		server         string
		streams, conns int
		fastConn, read string
		connWindow     int64
	}
	var keys []key
	groups := map[key][]RunRow{}
	for _, r := range runs {
		k := key{r.Route, r.Protocol, r.Server, r.Streams, r.Conns, r.FastConn, r.Read, r.ConnWindow}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	var rows []Summary
	for _, k := range keys {
		row := Summary{Route: k.route, Protocol: k.proto, Server: k.server, Streams: k.streams, Conns: k.conns, FastConn: k.fastConn, Read: k.read, ConnWindow: k.connWindow}
		var held, mem, temp, resetAfter []float64
		var ok []RunRow
		for _, r := range groups[k] {
			if r.Status != recorder.RunOK {
				row.Excluded++
				continue
			}
			row.Runs++
			row.Complete += r.Complete
			row.Cut += r.Cut
			row.Reset += r.Reset
			row.Failed += r.Failed
			resetAfter = recorder.AppendValid(resetAfter, r.ResetAfterS)
			row.AppComplete += r.AppComplete
			ok = append(ok, r)
			row.Workers = r.Workers
			held, mem, temp = recorder.AppendValid(held, r.AppHeldMax), recorder.AppendValid(mem, r.ProxyMemPeakMiB), recorder.AppendValid(temp, r.TempPeakMiB)
		}
		row.AppHeldMax, row.ProxyMemPeakMiB, row.TempPeakMiB = recorder.Some(recorder.NearestRank(held, 100)), recorder.Some(recorder.NearestRank(mem, 100)), recorder.Some(recorder.NearestRank(temp, 100))
		row.ResetAfterS = recorder.Some(recorder.Median(resetAfter))
		row.FastOver = recorder.SummarizeFast(ok, fastOf)
		rows = append(rows, row)
	}
	return rows
}

// VerdictFields implements recorder.RunRow.
func (RunRow) VerdictFields(r *RunRow) (id, status, reason *string) {
	return &r.RunID, &r.Status, &r.Reason
}

// fastOf points at a run row's /fast columns.
func fastOf(r *RunRow) recorder.FastRun { return r.Fast() }
