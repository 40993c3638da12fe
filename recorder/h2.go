package recorder

import (
	"slices"
	"time"
)

// H2Stream is one row of h2-streams.csv: one slow HTTP/2 stream of a run
// of h2-slow-client, as its reader saw it. Conn numbers its connection in
// the run (every stream on 0 when the condition puts them on one);
// FirstByteMS is its request's HEADERS until the response's; TotalS until
// the reader consumed the last byte or the stream ended; Outcome is
// "complete", "cut" (open at the end of the hold, reset by the client),
// "reset" (reset by the server: the proxy's send_timeout) or the load
// generator's error reason (a stream the proxy reset, a
// connection it closed); AppHeld says the app began its response and had
// not finished it at the end of the hold: a worker still writing it.
type H2Stream struct {
	RunID, Route, Server string
	Streams, Rep         int
	Stream, Conn         int
	Status               int
	Bytes                int64
	FirstByteMS          Maybe
	TotalS               float64
	Outcome              string
	AppHeld              bool
	Error                string
}

// H2Stream.Outcome values besides the error reasons.
const (
	H2Complete = "complete"
	H2Cut      = "cut"
	H2Reset    = "reset"
)

func (H2Stream) Schema() *Schema[H2Stream] { return &h2StreamSchema }

var h2StreamSchema = Schema[H2Stream]{file: "h2-streams.csv", cols: []Column[H2Stream]{
	Col("run_id", 0, func(r *H2Stream) any { return &r.RunID }),
	Col("route", 0, func(r *H2Stream) any { return &r.Route }),
	Col("server", 0, func(r *H2Stream) any { return &r.Server }),
	Col("streams", 0, func(r *H2Stream) any { return &r.Streams }),
	Col("rep", 0, func(r *H2Stream) any { return &r.Rep }),
	Col("stream", 0, func(r *H2Stream) any { return &r.Stream }),
	Col("conn", 0, func(r *H2Stream) any { return &r.Conn }),
	Col("status", 0, func(r *H2Stream) any { return &r.Status }),
	Col("bytes", 0, func(r *H2Stream) any { return &r.Bytes }),
	Col("first_byte_ms", usOfMS, func(r *H2Stream) any { return &r.FirstByteMS }),
	Col("total_s", msOfS, func(r *H2Stream) any { return &r.TotalS }),
	Col("outcome", 0, func(r *H2Stream) any { return &r.Outcome }),
	Col("app_held", 0, func(r *H2Stream) any { return &r.AppHeld }),
	Col("error", 0, func(r *H2Stream) any { return &r.Error }),
}}

// H2Run is one row of h2-runs.csv: one run of h2-slow-client. Streams
// slow HTTP/2 streams read /large (on one connection, or a connection
// each: Conns), paced or stalled, while /fast ran its open-loop schedule
// over HTTP/2 on its own connection or on the slow streams' first
// (FastConn "separate" or "shared"). AppHeldMax is the most slow
// responses the app was writing at once (begun, not finished; sampled
// every 200 ms from its send log): the workers the streams held.
// AppComplete counts the slow responses the app handed over whole. The
// proxy's memory and temp-file peaks are what the streams cost it.
type H2Run struct {
	RunID, Route, Server string
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
	ResetAfterS          Maybe // the reset streams' median total_s: when the proxy gave up on them
	Workers              Maybe
	AppHeldMax           Maybe
	AppComplete          int
	ProxyMemPeakMiB      Maybe
	TempPeakMiB          Maybe
	FastPlanned          int
	FastSent, FastTotal  int
	FastOK               int
	P50MS, P95MS, MaxMS  Maybe
}

func (H2Run) Schema() *Schema[H2Run] { return &h2RunSchema }

var h2RunSchema = Schema[H2Run]{file: "h2-runs.csv", cols: slices.Concat(
	[]Column[H2Run]{
		Col("run_id", 0, func(r *H2Run) any { return &r.RunID }),
		Col("route", 0, func(r *H2Run) any { return &r.Route }),
		Col("server", 0, func(r *H2Run) any { return &r.Server }),
		Col("streams", 0, func(r *H2Run) any { return &r.Streams }),
		Col("rep", 0, func(r *H2Run) any { return &r.Rep }),
		Col("conns", 0, func(r *H2Run) any { return &r.Conns }),
		Col("fast_conn", 0, func(r *H2Run) any { return &r.FastConn }),
		Col("read", 0, func(r *H2Run) any { return &r.Read }),
		Col("stream_window", 0, func(r *H2Run) any { return &r.StreamWindow }),
		Col("conn_window", 0, func(r *H2Run) any { return &r.ConnWindow }),
	},
	StatusCols(func(r *H2Run) RunStatus { return RunStatus{&r.StartedAt, &r.Status, &r.Reason} }),
	[]Column[H2Run]{
		Col("complete", 0, func(r *H2Run) any { return &r.Complete }),
		Col("cut", 0, func(r *H2Run) any { return &r.Cut }),
		Col("reset", 0, func(r *H2Run) any { return &r.Reset }),
		Col("failed", 0, func(r *H2Run) any { return &r.Failed }),
		Col("reset_after_s", msOfS, func(r *H2Run) any { return &r.ResetAfterS }),
		Col("workers", whole, func(r *H2Run) any { return &r.Workers }),
		Col("app_held_max", whole, func(r *H2Run) any { return &r.AppHeldMax }),
		Col("app_complete", 0, func(r *H2Run) any { return &r.AppComplete }),
		Col("proxy_mem_peak_mib", kibOfMi, func(r *H2Run) any { return &r.ProxyMemPeakMiB }),
		Col("temp_peak_mib", kibOfMi, func(r *H2Run) any { return &r.TempPeakMiB }),
	},
	FastCols(func(r *H2Run) FastRun {
		return FastRun{&r.FastPlanned, &r.FastSent, &r.FastTotal, &r.FastOK, &r.P50MS, &r.P95MS, &r.MaxMS}
	}),
)}

// SummarizeH2Run fills run's /fast columns from reqs (as SummarizeRun
// does) and its stream counts from the run's streams.
func SummarizeH2Run(run H2Run, reqs []Request, streams []H2Stream) H2Run {
	fast := SummarizeRun(RunMeta{FastPlanned: run.FastPlanned}, reqs, nil)
	run.FastSent, run.FastTotal, run.FastOK = fast.FastSent, fast.FastTotal, fast.FastOK
	run.P50MS, run.P95MS, run.MaxMS = fast.P50MS, fast.P95MS, fast.MaxMS
	run.Complete, run.Cut, run.Reset, run.Failed = 0, 0, 0, 0
	var resetAfter []float64
	for _, s := range streams {
		switch s.Outcome {
		case H2Complete:
			run.Complete++
		case H2Cut:
			run.Cut++
		case H2Reset:
			run.Reset++
			resetAfter = append(resetAfter, s.TotalS)
		default:
			run.Failed++
		}
	}
	run.ResetAfterS = Some(Median(resetAfter))
	return run
}

// H2Condition is one condition of h2-slow-client over its ok runs: the
// printed table's row. Stream outcomes are summed; AppHeldMax and the
// proxy's peaks are the largest; /fast percentiles the runs' medians.
type H2Condition struct {
	Route, Server       string
	Streams, Conns      int
	FastConn, Read      string
	ConnWindow          int64
	Runs, Excluded      int
	Complete, Cut       int
	Reset, Failed       int
	ResetAfterS         Maybe // median of the runs'
	Workers, AppHeldMax Maybe
	AppComplete         int
	ProxyMemPeakMiB     Maybe
	TempPeakMiB         Maybe
	FastPlanned, FastOK int
	P50MS, P95MS        Maybe
}

// SummarizeH2Conditions folds runs into one H2Condition per (route,
// server, streams, conns, fast_conn, read, conn_window), in order of
// first appearance; runs that did not end ok count only in Excluded.
func SummarizeH2Conditions(runs []H2Run) []H2Condition {
	type key struct {
		route, server  string
		streams, conns int
		fastConn, read string
		connWindow     int64
	}
	var keys []key
	groups := map[key][]H2Run{}
	for _, r := range runs {
		k := key{r.Route, r.Server, r.Streams, r.Conns, r.FastConn, r.Read, r.ConnWindow}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	var rows []H2Condition
	for _, k := range keys {
		row := H2Condition{Route: k.route, Server: k.server, Streams: k.streams, Conns: k.conns, FastConn: k.fastConn, Read: k.read, ConnWindow: k.connWindow}
		var held, mem, temp, p50, p95, resetAfter []float64
		for _, r := range groups[k] {
			if r.Status != RunOK {
				row.Excluded++
				continue
			}
			row.Runs++
			row.Complete += r.Complete
			row.Cut += r.Cut
			row.Reset += r.Reset
			row.Failed += r.Failed
			resetAfter = AppendValid(resetAfter, r.ResetAfterS)
			row.AppComplete += r.AppComplete
			row.FastPlanned += r.FastPlanned
			row.FastOK += r.FastOK
			row.Workers = r.Workers
			held, mem, temp = AppendValid(held, r.AppHeldMax), AppendValid(mem, r.ProxyMemPeakMiB), AppendValid(temp, r.TempPeakMiB)
			p50, p95 = AppendValid(p50, r.P50MS), AppendValid(p95, r.P95MS)
		}
		row.AppHeldMax, row.ProxyMemPeakMiB, row.TempPeakMiB = Some(NearestRank(held, 100)), Some(NearestRank(mem, 100)), Some(NearestRank(temp, 100))
		row.P50MS, row.P95MS, row.ResetAfterS = Some(Median(p50)), Some(Median(p95)), Some(Median(resetAfter))
		rows = append(rows, row)
	}
	return rows
}
