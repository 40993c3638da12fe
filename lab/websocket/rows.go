package websocket

import (
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Session is one row of ws-sessions.csv: one WebSocket a run of the
// websocket experiment held beside /fast, as its client saw it. StartS is
// when it connected, from the run's start; HandshakeMS the connect and
// upgrade (empty when it failed); HeldS how long it was open; End how it
// ended (EndHeld: open to the end of its hold, closed by the client then;
// EndClosed: the peer's close frame, CloseCode its status; EndRefused: the
// upgrade was answered with Status instead of 101; otherwise the load
// generator's error reason, as requests.csv's). Pings and Pongs count a
// client's pings and the answers that came.
type Session struct {
	lab.ClientKey `csv:"clients=sockets"`
	StartS        float64        `csv:"start_s,seconds"`
	HandshakeMS   recorder.Maybe `csv:"handshake_ms,millis"`
	Status        int            `csv:"status"`
	HeldS         float64        `csv:"held_s,seconds"`
	End           string         `csv:"end"`
	CloseCode     recorder.Maybe `csv:"close_code"`
	Pings         int            `csv:"pings"`
	Pongs         int            `csv:"pongs"`
	// A consumer's messages and their bytes, and its messages' delivery
	// delay (its read minus the app's stamp; nearest-rank p95).
	Messages   int            `csv:"messages"`
	Bytes      int64          `csv:"bytes"`
	DelayP95MS recorder.Maybe `csv:"delay_p95_ms,millis"`
	Error      string         `csv:"error"`
}

// Session.End values besides the error reasons.
const (
	EndHeld    = "held"
	EndClosed  = "closed"
	EndRefused = "refused_status"
)

func (Session) Schema() *recorder.Schema[Session] { return sessionSchema }

var sessionSchema = recorder.Tagged[Session](sessionsFile)

// RunRow is one row of ws-runs.csv: one run of the websocket experiment.
// Sockets WebSockets were held for HoldS beside the open-loop /fast
// schedule; Opened counts those whose upgrade succeeded, Held those open
// to the end of their hold, Refused those answered without an upgrade.
// Slots, Workers, HeldMax and WorkersHoldingMax are sse-runs.csv's (the
// app's own count of the sockets it held, sampled during the run). The
// /fast columns are runs.csv's (recorder.SummarizeRun).
type RunRow struct {
	lab.RunKey     `csv:"clients=sockets"`
	Mode           string         `csv:"mode"`
	Queue          string         `csv:"queue"` // a consumers' run: the app's queue (wait or unbounded); empty for idle sockets
	HoldS          float64        `csv:"hold_s,seconds"`
	PingS          float64        `csv:"ping_s,seconds"`
	ReadTimeoutS   float64        `csv:"read_timeout_s,seconds"` // the proxy's proxy_read_timeout as set; 0: its default
	StartedAt      time.Time      `csv:"started_at"`
	Status         string         `csv:"status"`
	Reason         string         `csv:"reason"`
	Opened         int            `csv:"opened"`
	Held           int            `csv:"held"`
	Refused        int            `csv:"refused"`
	HandshakeP95MS recorder.Maybe `csv:"handshake_p95_ms,millis"`
	// LifetimeP50S is the median time the opened sockets stayed open
	// (held ones count their hold): an idle socket's life on the path.
	LifetimeP50S recorder.Maybe `csv:"lifetime_p50_s,seconds"`
	// A consumers' run: the messages they read, the worst delivery delay
	// (the sessions' largest p95), and the app's memory: its cgroup's
	// peak, its processes' RSS peak and the OOM kills its cgroup counted.
	Messages      int            `csv:"messages"`
	DelayP95MS    recorder.Maybe `csv:"delay_p95_ms,millis"`
	AppMemPeakMiB recorder.Maybe `csv:"app_mem_peak_mib,mib"`
	AppRSSPeakMiB recorder.Maybe `csv:"app_rss_peak_mib,mib"`
	AppOOMKills   recorder.Maybe `csv:"app_oom_kills"`
	recorder.Holding
	recorder.FastFields
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.Tagged[RunRow](runsFile)

// SummarizeRun fills run's /fast columns from reqs (as recorder.SummarizeRun
// does) and its socket columns from the run's sessions.
func SummarizeRun(run RunRow, reqs []recorder.Request, sessions []Session) RunRow {
	run.SummarizeFast(reqs)
	run.Opened, run.Held, run.Refused, run.Messages = 0, 0, 0, 0
	var hs, life, delays []float64
	for _, s := range sessions {
		run.Messages += s.Messages
		delays = recorder.AppendValid(delays, s.DelayP95MS)
		if s.HandshakeMS.Valid {
			run.Opened++
			hs = append(hs, s.HandshakeMS.Value)
			life = append(life, s.HeldS)
		}
		switch s.End {
		case EndHeld:
			run.Held++
		case EndRefused:
			run.Refused++
		}
	}
	run.HandshakeP95MS = recorder.Some(recorder.NearestRank(hs, 95))
	run.LifetimeP50S = recorder.Some(recorder.Median(life))
	run.DelayP95MS = recorder.Some(recorder.NearestRank(delays, 100))
	return run
}

// condKey is a condition's columns: its runs' group (Summarize).
type condKey struct {
	Route, Server       string
	Sockets             int
	Mode, Queue         string
	PingS, ReadTimeoutS float64
}

// Summary is one condition of websocket over its ok runs: the
// printed table's row. Sockets opened, held and refused are summed over
// the runs; /fast percentiles are medians of the runs' values; HeldMax
// and WorkersHoldingMax the largest.
type Summary struct {
	condKey
	Messages   int
	DelayP95MS recorder.Maybe // the largest of the ok runs'
	// The app's memory: the largest cgroup and RSS peaks and the OOM kills
	// summed, over every run, ok or not: a run the kernel failed by
	// killing the app is what these columns are for.
	AppMemPeakMiB, AppRSSPeakMiB recorder.Maybe
	AppOOMKills                  int
	LifetimeP50S                 recorder.Maybe // median of the runs' medians
	Runs, Excluded               int
	Opened, Held, Refused        int
	Workers                      recorder.Maybe
	HeldMax                      recorder.Maybe
	WorkersHoldingMax            recorder.Maybe
	recorder.FastOver
}

// Summarize folds runs into one Summary per (route,
// server, sockets, mode, queue, ping, proxy_read_timeout), in order of first appearance; runs that did not end
// ok count only in Excluded.
func Summarize(runs []RunRow) []Summary {
	key := func(r RunRow) condKey {
		return condKey{r.Route, r.Server, r.Clients, r.Mode, r.Queue, r.PingS, r.ReadTimeoutS}
	}
	var rows []Summary
	for _, g := range recorder.GroupRuns(runs, key) {
		row := Summary{condKey: key(g.All[0]), Runs: len(g.OK), Excluded: g.Excluded(), FastOver: recorder.SummarizeFast(g.OK)}
		var held, holding, life, delay, mem, rss []float64
		for _, r := range g.All {
			if r.AppOOMKills.Valid {
				row.AppOOMKills += int(r.AppOOMKills.Value)
			}
			mem, rss = recorder.AppendValid(mem, r.AppMemPeakMiB), recorder.AppendValid(rss, r.AppRSSPeakMiB)
		}
		for _, r := range g.OK {
			row.Opened += r.Opened
			row.Held += r.Held
			row.Refused += r.Refused
			row.Workers = r.Workers
			held, holding = recorder.AppendValid(held, r.HeldMax), recorder.AppendValid(holding, r.WorkersHoldingMax)
			life = recorder.AppendValid(life, r.LifetimeP50S)
			row.Messages += r.Messages
			delay = recorder.AppendValid(delay, r.DelayP95MS)
		}
		row.DelayP95MS = recorder.Some(recorder.NearestRank(delay, 100))
		row.AppMemPeakMiB, row.AppRSSPeakMiB = recorder.Some(recorder.NearestRank(mem, 100)), recorder.Some(recorder.NearestRank(rss, 100))
		row.LifetimeP50S = recorder.Some(recorder.Median(life))
		row.HeldMax, row.WorkersHoldingMax = recorder.Some(recorder.NearestRank(held, 100)), recorder.Some(recorder.NearestRank(holding, 100))
		rows = append(rows, row)
	}
	return rows
}

// VerdictFields implements recorder.RunRow.
func (RunRow) VerdictFields(r *RunRow) (id, status, reason *string) {
	return &r.RunID, &r.Status, &r.Reason
}
