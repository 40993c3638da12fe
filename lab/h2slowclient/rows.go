package h2slowclient

import (
	"time"

	"github.com/slowlab/slowlab/lab"
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
// Its key's client is the stream's number in the run; the protocol
// column comes after route (streamSchema's spans).
type Stream struct {
	lab.ClientKey `csv:"clients=streams,client=stream"`
	Protocol      string         `csv:"protocol,added=h2"` // h2 or h3
	Conn          int            `csv:"conn"`
	Status        int            `csv:"status"`
	Bytes         int64          `csv:"bytes"`
	FirstByteMS   recorder.Maybe `csv:"first_byte_ms,millis"`
	TotalS        float64        `csv:"total_s,seconds"`
	Outcome       string         `csv:"outcome"`
	AppHeld       bool           `csv:"app_held"`
	Error         string         `csv:"error"`
}

// Stream.Outcome values besides the error reasons.
const (
	OutcomeComplete = "complete"
	OutcomeCut      = "cut"
	OutcomeReset    = "reset"
)

func (Stream) Schema() *recorder.Schema[Stream] { return streamSchema }

var streamSchema = recorder.TaggedSpans[Stream](streamFile, "RunID-Route", "Protocol", "Server-Client", "Conn-Error")

// RunRow is one row of h2-runs.csv: one run of h2-slow-client. Streams
// slow HTTP/2 (or HTTP/3: Protocol h3) streams read /large (on one connection, or a connection
// each: Conns), paced or stalled, while /fast ran its open-loop schedule
// over HTTP/2 on its own connection or on the slow streams' first
// (FastConn "separate" or "shared"). AppHeldMax is the most slow
// responses the app was writing at once (begun, not finished; sampled
// every 200 ms from its send log): the workers the streams held.
// AppComplete counts the slow responses the app handed over whole. The
// proxy's memory and temp-file peaks are what the streams cost it. The
// protocol column comes after route (runSchema's spans).
type RunRow struct {
	lab.RunKey      `csv:"clients=streams"`
	Protocol        string         `csv:"protocol,added=h2"` // h2 or h3: what the clients spoke to the proxy
	Conns           int            `csv:"conns"`
	FastConn        string         `csv:"fast_conn"`
	Read            string         `csv:"read"` // "paced" or "stall"
	StreamWindow    int64          `csv:"stream_window"`
	ConnWindow      int64          `csv:"conn_window"`
	StartedAt       time.Time      `csv:"started_at"`
	Status          string         `csv:"status"`
	Reason          string         `csv:"reason"`
	Complete        int            `csv:"complete"`
	Cut             int            `csv:"cut"`
	Reset           int            `csv:"reset"`
	Failed          int            `csv:"failed"`
	ResetAfterS     recorder.Maybe `csv:"reset_after_s,seconds"` // the reset streams' median total_s: when the proxy gave up on them
	Workers         recorder.Maybe `csv:"workers"`
	AppHeldMax      recorder.Maybe `csv:"app_held_max"`
	AppComplete     int            `csv:"app_complete"`
	ProxyMemPeakMiB recorder.Maybe `csv:"proxy_mem_peak_mib,mib"`
	TempPeakMiB     recorder.Maybe `csv:"temp_peak_mib,mib"`
	recorder.FastFields
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.TaggedSpans[RunRow](runFile, "RunID-Route", "Protocol", "Server-Rep", "Conns-MaxMS")

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

// condKey is a condition's columns: its runs' group (Summarize).
type condKey struct {
	Route, Protocol string
	Server          string
	Streams, Conns  int
	FastConn, Read  string
	ConnWindow      int64
}

// Summary is one condition of h2-slow-client over its ok runs: the
// printed table's row. Stream outcomes are summed; AppHeldMax and the
// proxy's peaks are the largest; /fast percentiles the runs' medians.
type Summary struct {
	condKey
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
	key := func(r RunRow) condKey {
		return condKey{r.Route, r.Protocol, r.Server, r.Clients, r.Conns, r.FastConn, r.Read, r.ConnWindow}
	}
	var rows []Summary
	for _, g := range recorder.GroupRuns(runs, key) {
		row := Summary{condKey: key(g.All[0]), Runs: len(g.OK), Excluded: g.Excluded(), FastOver: recorder.SummarizeFast(g.OK)}
		var held, mem, temp, resetAfter []float64
		for _, r := range g.OK {
			row.Complete += r.Complete
			row.Cut += r.Cut
			row.Reset += r.Reset
			row.Failed += r.Failed
			resetAfter = recorder.AppendValid(resetAfter, r.ResetAfterS)
			row.AppComplete += r.AppComplete
			row.Workers = r.Workers
			held, mem, temp = recorder.AppendValid(held, r.AppHeldMax), recorder.AppendValid(mem, r.ProxyMemPeakMiB), recorder.AppendValid(temp, r.TempPeakMiB)
		}
		row.AppHeldMax, row.ProxyMemPeakMiB, row.TempPeakMiB = recorder.Some(recorder.NearestRank(held, 100)), recorder.Some(recorder.NearestRank(mem, 100)), recorder.Some(recorder.NearestRank(temp, 100))
		row.ResetAfterS = recorder.Some(recorder.Median(resetAfter))
		rows = append(rows, row)
	}
	return rows
}

// VerdictFields implements recorder.RunRow.
func (RunRow) VerdictFields(r *RunRow) (id, status, reason *string) {
	return &r.RunID, &r.Status, &r.Reason
}
