package stalledreader

import (
	"slices"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// The results files of the rows this package declares.
const (
	downloadFile = "stalled-downloads.csv"
	runFile      = "stalled-runs.csv"
)

// Download is one download of the stalled-reader experiment
// (stalled-downloads.csv). Mode is ModeStall (reads StallBytes, then
// nothing for stall_s, then the rest as fast as it comes) or ModeSlow
// (paced to rate_bps throughout). StartS is when its request was sent,
// relative to the run's start; StalledS and ResumedS when it stopped and
// resumed reading, LastByteS when it read its last body byte and EndS
// when it ended, all relative to StartS (empty when it never got there).
// Bytes are the body bytes received of ContentLength (-1 when the header
// gave none). Outcome is one of Outcomes, EndedBy one of Enders. AppSendS
// is the app's own record of the response (from its first byte to its
// last write returning, or failing), empty when the app left none: a
// Gunicorn worker killed mid-response writes nothing.
type Download struct {
	RunID, Route, Server string
	Mode                 string
	Clients, Rep         int
	Client               int
	SizeBytes, RateBps   int64
	AppTimeoutS          recorder.Maybe // the app's timeout (Gunicorn --timeout), empty when the app's default
	SendTimeoutS         recorder.Maybe // the proxy's send_timeout, empty on the direct route
	StallS, GiveUpS      float64
	StartS               float64
	StalledS, ResumedS   recorder.Maybe
	LastByteS            recorder.Maybe
	EndS                 float64
	StallBytes           int64
	Bytes, ContentLength int64
	Status               int
	AppSendS             recorder.Maybe
	Outcome, EndedBy     string
	Error                string
}

// Modes of a condition (Download.Mode).
const (
	ModeStall = "stall"
	ModeSlow  = "slow"
)

// Download.Outcome values: how a download ended, as the client saw it.
const (
	OutcomeComplete  = "complete"  // status 200 and every Content-Length byte received
	OutcomeTruncated = "truncated" // a response, then EOF (the server's FIN) before Content-Length
	OutcomeReset     = "reset"     // the connection was reset (RST), with or without a response
	OutcomeTimeout   = "timeout"   // the client's give-up bound came first: it closed
	OutcomeError     = "error"     // anything else: refused, no response, another status
)

// Outcomes lists the outcomes in column order.
var Outcomes = []string{OutcomeComplete, OutcomeTruncated, OutcomeReset, OutcomeTimeout, OutcomeError}

// Download.EndedBy values: the component that ended a download that did
// not complete, from the run's evidence about that download: the app's
// WORKER TIMEOUT lines against the worker that served it, the proxy's
// "client timed out" line for it (see the package doc).
const (
	EndedByNone        = "none"         // it completed
	EndedByClient      = "client"       // the client's give-up bound
	EndedByAppTimeout  = "app_timeout"  // the app's worker timeout (WORKER TIMEOUT in its log)
	EndedBySendTimeout = "send_timeout" // the proxy's send_timeout
	EndedByUnknown     = "unknown"      // no evidence names it
)

// Enders lists the EndedBy values in column order.
var Enders = []string{EndedByNone, EndedByClient, EndedByAppTimeout, EndedBySendTimeout, EndedByUnknown}

func (Download) Schema() *recorder.Schema[Download] { return downloadSchema }

var downloadSchema = recorder.NewSchema(downloadFile,
	recorder.Col("run_id", 0, func(r *Download) any { return &r.RunID }),
	recorder.Col("route", 0, func(r *Download) any { return &r.Route }),
	recorder.Col("server", 0, func(r *Download) any { return &r.Server }),
	recorder.Col("mode", 0, func(r *Download) any { return &r.Mode }),
	recorder.Col("clients", 0, func(r *Download) any { return &r.Clients }),
	recorder.Col("rep", 0, func(r *Download) any { return &r.Rep }),
	recorder.Col("client", 0, func(r *Download) any { return &r.Client }),
	recorder.Col("size_bytes", recorder.DecimalsWhole, func(r *Download) any { return &r.SizeBytes }),
	recorder.Col("rate_bps", recorder.DecimalsWhole, func(r *Download) any { return &r.RateBps }),
	recorder.Col("app_timeout_s", recorder.DecimalsSeconds, func(r *Download) any { return &r.AppTimeoutS }),
	recorder.Col("send_timeout_s", recorder.DecimalsSeconds, func(r *Download) any { return &r.SendTimeoutS }),
	recorder.Col("stall_s", recorder.DecimalsSeconds, func(r *Download) any { return &r.StallS }),
	recorder.Col("give_up_s", recorder.DecimalsSeconds, func(r *Download) any { return &r.GiveUpS }),
	recorder.Col("start_s", recorder.DecimalsSeconds, func(r *Download) any { return &r.StartS }),
	recorder.Col("stalled_s", recorder.DecimalsSeconds, func(r *Download) any { return &r.StalledS }),
	recorder.Col("resumed_s", recorder.DecimalsSeconds, func(r *Download) any { return &r.ResumedS }),
	recorder.Col("last_byte_s", recorder.DecimalsSeconds, func(r *Download) any { return &r.LastByteS }),
	recorder.Col("end_s", recorder.DecimalsSeconds, func(r *Download) any { return &r.EndS }),
	recorder.Col("stall_bytes", recorder.DecimalsWhole, func(r *Download) any { return &r.StallBytes }),
	recorder.Col("bytes", recorder.DecimalsWhole, func(r *Download) any { return &r.Bytes }),
	recorder.Col("content_length", recorder.DecimalsWhole, func(r *Download) any { return &r.ContentLength }),
	recorder.Col("status", 0, func(r *Download) any { return &r.Status }),
	recorder.Col("app_send_s", recorder.DecimalsSeconds, func(r *Download) any { return &r.AppSendS }),
	recorder.Col("outcome", 0, func(r *Download) any { return &r.Outcome }),
	recorder.Col("ended_by", 0, func(r *Download) any { return &r.EndedBy }),
	recorder.Col("error", 0, func(r *Download) any { return &r.Error }),
)

// RunRow is one row of stalled-runs.csv: one run of the stalled-reader
// experiment. The /fast columns are runs.csv's (recorder.SummarizeRun:
// nearest-rank percentiles of the ok requests). The outcome and ender
// columns count the run's downloads (Outcomes, Enders); BytesMedian is
// the median of their received bytes. WorkerTimeouts counts the app's
// "WORKER TIMEOUT" log lines (Gunicorn's master killing a worker that
// outlived --timeout; the embedded sync model logs the same), empty where
// no log was read. AppHeldS is the longest the app held a worker on a
// download: its longest app_send_s, or the app timeout when a worker was
// killed (which leaves no record).
type RunRow struct {
	RunID, Route, Server      string
	Mode                      string
	Clients, Rep              int
	SizeBytes, RateBps        int64
	AppTimeoutS, SendTimeoutS recorder.Maybe
	StallS, GiveUpS           float64
	StartedAt                 time.Time
	Status, Reason            string
	recorder.FastFields
	Complete, Truncated, Reset int
	Timeout, Other             int
	ByClient, ByAppTimeout     int
	BySendTimeout, ByUnknown   int
	BytesMedian                recorder.Maybe
	WorkerTimeouts             recorder.Maybe
	AppHeldS                   recorder.Maybe
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.NewSchema(runFile, slices.Concat(
	[]recorder.Column[RunRow]{
		recorder.Col("run_id", 0, func(r *RunRow) any { return &r.RunID }),
		recorder.Col("route", 0, func(r *RunRow) any { return &r.Route }),
		recorder.Col("server", 0, func(r *RunRow) any { return &r.Server }),
		recorder.Col("mode", 0, func(r *RunRow) any { return &r.Mode }),
		recorder.Col("clients", 0, func(r *RunRow) any { return &r.Clients }),
		recorder.Col("rep", 0, func(r *RunRow) any { return &r.Rep }),
		recorder.Col("size_bytes", recorder.DecimalsWhole, func(r *RunRow) any { return &r.SizeBytes }),
		recorder.Col("rate_bps", recorder.DecimalsWhole, func(r *RunRow) any { return &r.RateBps }),
		recorder.Col("app_timeout_s", recorder.DecimalsSeconds, func(r *RunRow) any { return &r.AppTimeoutS }),
		recorder.Col("send_timeout_s", recorder.DecimalsSeconds, func(r *RunRow) any { return &r.SendTimeoutS }),
		recorder.Col("stall_s", recorder.DecimalsSeconds, func(r *RunRow) any { return &r.StallS }),
		recorder.Col("give_up_s", recorder.DecimalsSeconds, func(r *RunRow) any { return &r.GiveUpS }),
	},
	recorder.StatusCols(func(r *RunRow) recorder.RunStatus {
		return recorder.RunStatus{StartedAt: &r.StartedAt, Status: &r.Status, Reason: &r.Reason}
	}),
	recorder.FastCols(fastOf),
	[]recorder.Column[RunRow]{
		recorder.Col("complete", 0, func(r *RunRow) any { return &r.Complete }),
		recorder.Col("truncated", 0, func(r *RunRow) any { return &r.Truncated }),
		recorder.Col("reset", 0, func(r *RunRow) any { return &r.Reset }),
		recorder.Col("timeout", 0, func(r *RunRow) any { return &r.Timeout }),
		recorder.Col("other", 0, func(r *RunRow) any { return &r.Other }),
		recorder.Col("by_client", 0, func(r *RunRow) any { return &r.ByClient }),
		recorder.Col("by_app_timeout", 0, func(r *RunRow) any { return &r.ByAppTimeout }),
		recorder.Col("by_send_timeout", 0, func(r *RunRow) any { return &r.BySendTimeout }),
		recorder.Col("by_unknown", 0, func(r *RunRow) any { return &r.ByUnknown }),
		recorder.Col("bytes_median", recorder.DecimalsWhole, func(r *RunRow) any { return &r.BytesMedian }),
		recorder.Col("worker_timeouts", recorder.DecimalsWhole, func(r *RunRow) any { return &r.WorkerTimeouts }),
		recorder.Col("app_held_s", recorder.DecimalsSeconds, func(r *RunRow) any { return &r.AppHeldS }),
	},
)...)

// VerdictFields implements recorder.RunRow.
func (RunRow) VerdictFields(r *RunRow) (id, status, reason *string) {
	return &r.RunID, &r.Status, &r.Reason
}

// SummarizeRun fills run's /fast columns from reqs (as
// recorder.SummarizeRun does) and its download columns from downloads,
// which must all be the run's. AppHeldS needs WorkerTimeouts and
// AppTimeoutS set first.
func SummarizeRun(run RunRow, reqs []recorder.Request, downloads []Download) RunRow {
	run.SummarizeFast(reqs)
	run.Complete, run.Truncated, run.Reset, run.Timeout, run.Other = 0, 0, 0, 0, 0
	run.ByClient, run.ByAppTimeout, run.BySendTimeout, run.ByUnknown = 0, 0, 0, 0
	var bytes, held []float64
	for _, d := range downloads {
		switch d.Outcome {
		case OutcomeComplete:
			run.Complete++
		case OutcomeTruncated:
			run.Truncated++
		case OutcomeReset:
			run.Reset++
		case OutcomeTimeout:
			run.Timeout++
		default:
			run.Other++
		}
		switch d.EndedBy {
		case EndedByNone:
		case EndedByClient:
			run.ByClient++
		case EndedByAppTimeout:
			run.ByAppTimeout++
		case EndedBySendTimeout:
			run.BySendTimeout++
		default:
			run.ByUnknown++
		}
		bytes = append(bytes, float64(d.Bytes))
		if d.AppSendS.Valid {
			held = append(held, d.AppSendS.Value)
		}
	}
	run.BytesMedian = recorder.Some(recorder.Median(bytes))
	if run.WorkerTimeouts.Valid && run.WorkerTimeouts.Value > 0 && run.AppTimeoutS.Valid {
		held = append(held, run.AppTimeoutS.Value)
	}
	run.AppHeldS = recorder.Some(recorder.NearestRank(held, 100))
	return run
}

// Conditions groups runs by condition (route, server, mode, clients,
// size, rate, timeouts, stall), in order of first appearance.
func Conditions(runs []RunRow) []recorder.ConditionRuns[RunRow] {
	type key struct {
		route, server, mode string
		clients             int
		size, rate          int64
		app, send           recorder.Maybe
		stall               float64
	}
	return recorder.GroupRuns(runs, func(r RunRow) key {
		return key{r.Route, r.Server, r.Mode, r.Clients, r.SizeBytes, r.RateBps, r.AppTimeoutS, r.SendTimeoutS, r.StallS}
	})
}

// Summary is one condition of stalled-reader over its ok runs: the
// printed table's row and the report's.
type Summary struct {
	Route, Server             string
	Mode                      string
	Clients                   int
	SizeBytes, RateBps        int64
	AppTimeoutS, SendTimeoutS recorder.Maybe
	StallS                    float64
	Runs, Excluded            int
	// /fast: requests ok summed, p50 and p95 the medians of the runs'
	// values, and the range of their p95.
	recorder.FastOver
	FastTotal                  int // summed
	Complete, Truncated, Reset int // downloads by outcome, summed
	Timeout, Other             int
	ByClient, ByAppTimeout     int // downloads by ender, summed
	BySendTimeout, ByUnknown   int
	BytesMedian                recorder.Maybe // median of the runs' medians
	WorkerTimeouts             recorder.Maybe // summed
	AppHeldS                   recorder.Maybe // median of the runs' values
}

// Summarize folds runs into one Summary per condition (Conditions), in
// order of first appearance; runs that did not end ok count only in
// Excluded.
func Summarize(runs []RunRow) []Summary {
	var rows []Summary
	for _, g := range Conditions(runs) {
		first := g.All[0]
		row := Summary{Route: first.Route, Server: first.Server, Mode: first.Mode, Clients: first.Clients, SizeBytes: first.SizeBytes,
			RateBps: first.RateBps, AppTimeoutS: first.AppTimeoutS, SendTimeoutS: first.SendTimeoutS, StallS: first.StallS,
			Runs: len(g.OK), Excluded: g.Excluded(), FastOver: recorder.SummarizeFast(g.OK, fastOf)}
		var bytes, wt, held []float64
		for _, r := range g.OK {
			bytes, wt, held = recorder.AppendValid(bytes, r.BytesMedian), recorder.AppendValid(wt, r.WorkerTimeouts), recorder.AppendValid(held, r.AppHeldS)
			row.FastTotal += r.FastTotal
			row.Complete += r.Complete
			row.Truncated += r.Truncated
			row.Reset += r.Reset
			row.Timeout += r.Timeout
			row.Other += r.Other
			row.ByClient += r.ByClient
			row.ByAppTimeout += r.ByAppTimeout
			row.BySendTimeout += r.BySendTimeout
			row.ByUnknown += r.ByUnknown
		}
		row.BytesMedian, row.AppHeldS = recorder.Some(recorder.Median(bytes)), recorder.Some(recorder.Median(held))
		row.WorkerTimeouts = recorder.Sum(wt)
		rows = append(rows, row)
	}
	return rows
}

// fastOf points at a run row's /fast columns.
func fastOf(r *RunRow) recorder.FastRun { return r.Fast() }
