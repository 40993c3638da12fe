package stalledreader

import (
	"slices"
	"time"

	"github.com/slowlab/slowlab/lab"
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
// Gunicorn worker killed mid-response writes nothing. The mode column
// comes after server (downloadSchema's spans).
type Download struct {
	lab.ClientKey
	Mode          string         `csv:"mode"`
	SizeBytes     int64          `csv:"size_bytes"`
	RateBps       int64          `csv:"rate_bps"`
	AppTimeoutS   recorder.Maybe `csv:"app_timeout_s,seconds"`  // the app's timeout (Gunicorn --timeout), empty when the app's default
	SendTimeoutS  recorder.Maybe `csv:"send_timeout_s,seconds"` // the proxy's send_timeout, empty on the direct route
	StallS        float64        `csv:"stall_s,seconds"`
	GiveUpS       float64        `csv:"give_up_s,seconds"`
	StartS        float64        `csv:"start_s,seconds"`
	StalledS      recorder.Maybe `csv:"stalled_s,seconds"`
	ResumedS      recorder.Maybe `csv:"resumed_s,seconds"`
	LastByteS     recorder.Maybe `csv:"last_byte_s,seconds"`
	EndS          float64        `csv:"end_s,seconds"`
	StallBytes    int64          `csv:"stall_bytes"`
	Bytes         int64          `csv:"bytes"`
	ContentLength int64          `csv:"content_length"`
	Status        int            `csv:"status"`
	AppSendS      recorder.Maybe `csv:"app_send_s,seconds"`
	Outcome       string         `csv:"outcome"`
	EndedBy       string         `csv:"ended_by"`
	Error         string         `csv:"error"`
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

var downloadSchema = recorder.TaggedSpans[Download](downloadFile, "RunID-Server", "Mode", "Clients-Client", "SizeBytes-Error")

// RunRow is one row of stalled-runs.csv: one run of the stalled-reader
// experiment. The /fast columns are runs.csv's (recorder.SummarizeRun:
// nearest-rank percentiles of the ok requests). The outcome and ender
// columns count the run's downloads (Outcomes, Enders); BytesMedian is
// the median of their received bytes. WorkerTimeouts counts the app's
// "WORKER TIMEOUT" log lines (Gunicorn's master killing a worker that
// outlived --timeout; the embedded sync model logs the same), empty where
// no log was read. AppHeldS is the longest the app held a worker on a
// download: its longest app_send_s, or the app timeout when a worker was
// killed (which leaves no record). The mode column comes after server
// (runSchema's spans).
type RunRow struct {
	lab.RunKey
	Mode         string         `csv:"mode"`
	SizeBytes    int64          `csv:"size_bytes"`
	RateBps      int64          `csv:"rate_bps"`
	AppTimeoutS  recorder.Maybe `csv:"app_timeout_s,seconds"`
	SendTimeoutS recorder.Maybe `csv:"send_timeout_s,seconds"`
	StallS       float64        `csv:"stall_s,seconds"`
	GiveUpS      float64        `csv:"give_up_s,seconds"`
	StartedAt    time.Time      `csv:"started_at"`
	Status       string         `csv:"status"`
	Reason       string         `csv:"reason"`
	recorder.FastFields
	Tally
	BytesMedian    recorder.Maybe `csv:"bytes_median"`
	WorkerTimeouts recorder.Maybe `csv:"worker_timeouts"`
	AppHeldS       recorder.Maybe `csv:"app_held_s,seconds"`
}

// Tally counts downloads by outcome (Outcomes; other: error) and, those
// that did not complete, by the component that ended them (Enders).
type Tally struct {
	Complete      int `csv:"complete"`
	Truncated     int `csv:"truncated"`
	Reset         int `csv:"reset"`
	Timeout       int `csv:"timeout"`
	Other         int `csv:"other"`
	ByClient      int `csv:"by_client"`
	ByAppTimeout  int `csv:"by_app_timeout"`
	BySendTimeout int `csv:"by_send_timeout"`
	ByUnknown     int `csv:"by_unknown"`
}

// counts are t's counts: by outcome in the order of Outcomes, then by
// ender in the order of Enders after EndedByNone.
func (t *Tally) counts() []*int {
	return []*int{&t.Complete, &t.Truncated, &t.Reset, &t.Timeout, &t.Other, &t.ByClient, &t.ByAppTimeout, &t.BySendTimeout, &t.ByUnknown}
}

// count counts download d; an outcome or ender not listed counts as the
// last of its list (other, unknown).
func (t *Tally) count(d Download) {
	c := t.counts()
	*c[indexIn(Outcomes, d.Outcome)]++
	if d.EndedBy != EndedByNone {
		*c[len(Outcomes)-1+indexIn(Enders, d.EndedBy)]++
	}
}

// indexIn is v's index in list, or the last one's (the catch-all: error,
// unknown) when list lacks it.
func indexIn(list []string, v string) int {
	if i := slices.Index(list, v); i >= 0 {
		return i
	}
	return len(list) - 1
}

// add adds o's counts to t's.
func (t *Tally) add(o Tally) {
	mine := t.counts()
	for i, c := range o.counts() {
		*mine[i] += *c
	}
}

// downloads is how many downloads t counted.
func (t *Tally) downloads() int { return t.Complete + t.Truncated + t.Reset + t.Timeout + t.Other }

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.TaggedSpans[RunRow](runFile, "RunID-Server", "Mode", "Clients-Rep", "SizeBytes-AppHeldS")

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
	run.Tally = Tally{}
	var bytes, held []float64
	for _, d := range downloads {
		run.count(d)
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
	FastTotal      int            // summed
	Tally                         // downloads by outcome and by ender, summed
	BytesMedian    recorder.Maybe // median of the runs' medians
	WorkerTimeouts recorder.Maybe // summed
	AppHeldS       recorder.Maybe // median of the runs' values
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
			Runs: len(g.OK), Excluded: g.Excluded(), FastOver: recorder.SummarizeFast(g.OK)}
		var bytes, wt, held []float64
		for _, r := range g.OK {
			bytes, wt, held = recorder.AppendValid(bytes, r.BytesMedian), recorder.AppendValid(wt, r.WorkerTimeouts), recorder.AppendValid(held, r.AppHeldS)
			row.FastTotal += r.FastTotal
			row.add(r.Tally)
		}
		row.BytesMedian, row.AppHeldS = recorder.Some(recorder.Median(bytes)), recorder.Some(recorder.Median(held))
		row.WorkerTimeouts = recorder.Sum(wt)
		rows = append(rows, row)
	}
	return rows
}
