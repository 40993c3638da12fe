package recorder

import (
	"slices"
	"time"
)

// WSSession is one row of ws-sessions.csv: one WebSocket a run of the
// websocket experiment held beside /fast, as its client saw it. StartS is
// when it connected, from the run's start; HandshakeMS the connect and
// upgrade (empty when it failed); HeldS how long it was open; End how it
// ended (WSHeld: open to the end of its hold, closed by the client then;
// WSClosed: the peer's close frame, CloseCode its status; WSRefused: the
// upgrade was answered with Status instead of 101; otherwise the load
// generator's error reason, as requests.csv's). Pings and Pongs count a
// client's pings and the answers that came.
type WSSession struct {
	RunID, Route, Server string
	Sockets, Rep         int
	Client               int
	StartS               float64
	HandshakeMS          Maybe
	Status               int
	HeldS                float64
	End                  string
	CloseCode            Maybe
	Pings, Pongs         int
	// A consumer's messages and their bytes, and its messages' delivery
	// delay (its read minus the app's stamp; nearest-rank p95).
	Messages   int
	Bytes      int64
	DelayP95MS Maybe
	Error      string
}

// WSSession.End values besides the error reasons.
const (
	WSHeld    = "held"
	WSClosed  = "closed"
	WSRefused = "refused_status"
)

func (WSSession) Schema() *Schema[WSSession] { return &wsSessionSchema }

var wsSessionSchema = Schema[WSSession]{file: "ws-sessions.csv", cols: []Column[WSSession]{
	Col("run_id", 0, func(r *WSSession) any { return &r.RunID }),
	Col("route", 0, func(r *WSSession) any { return &r.Route }),
	Col("server", 0, func(r *WSSession) any { return &r.Server }),
	Col("sockets", 0, func(r *WSSession) any { return &r.Sockets }),
	Col("rep", 0, func(r *WSSession) any { return &r.Rep }),
	Col("client", 0, func(r *WSSession) any { return &r.Client }),
	Col("start_s", msOfS, func(r *WSSession) any { return &r.StartS }),
	Col("handshake_ms", usOfMS, func(r *WSSession) any { return &r.HandshakeMS }),
	Col("status", 0, func(r *WSSession) any { return &r.Status }),
	Col("held_s", msOfS, func(r *WSSession) any { return &r.HeldS }),
	Col("end", 0, func(r *WSSession) any { return &r.End }),
	Col("close_code", whole, func(r *WSSession) any { return &r.CloseCode }),
	Col("pings", 0, func(r *WSSession) any { return &r.Pings }),
	Col("pongs", 0, func(r *WSSession) any { return &r.Pongs }),
	Col("messages", 0, func(r *WSSession) any { return &r.Messages }),
	Col("bytes", 0, func(r *WSSession) any { return &r.Bytes }),
	Col("delay_p95_ms", usOfMS, func(r *WSSession) any { return &r.DelayP95MS }),
	Col("error", 0, func(r *WSSession) any { return &r.Error }),
}}

// WSRun is one row of ws-runs.csv: one run of the websocket experiment.
// Sockets WebSockets were held for HoldS beside the open-loop /fast
// schedule; Opened counts those whose upgrade succeeded, Held those open
// to the end of their hold, Refused those answered without an upgrade.
// Slots, Workers, HeldMax and WorkersHoldingMax are sse-runs.csv's (the
// app's own count of the sockets it held, sampled during the run). The
// /fast columns are runs.csv's (SummarizeRun).
type WSRun struct {
	RunID, Route, Server  string
	Sockets, Rep          int
	Mode                  string
	Queue                 string // a consumers' run: the app's queue (wait or unbounded); empty for idle sockets
	HoldS, PingS          float64
	ReadTimeoutS          float64 // the proxy's proxy_read_timeout as set; 0: its default
	StartedAt             time.Time
	Status, Reason        string
	Opened, Held, Refused int
	HandshakeP95MS        Maybe
	// LifetimeP50S is the median time the opened sockets stayed open
	// (held ones count their hold): an idle socket's life on the path.
	LifetimeP50S Maybe
	// A consumers' run: the messages they read, the worst delivery delay
	// (the sessions' largest p95), and the app's memory: its cgroup's
	// peak, its processes' RSS peak and the OOM kills its cgroup counted.
	Messages                     int
	DelayP95MS                   Maybe
	AppMemPeakMiB, AppRSSPeakMiB Maybe
	AppOOMKills                  Maybe
	Slots, Workers               Maybe
	HeldMax                      Maybe
	WorkersHoldingMax            Maybe
	FastPlanned, FastSent        int
	FastTotal, FastOK            int
	P50MS, P95MS, MaxMS          Maybe
}

func (WSRun) Schema() *Schema[WSRun] { return &wsRunSchema }

var wsRunSchema = Schema[WSRun]{file: "ws-runs.csv", cols: slices.Concat(
	[]Column[WSRun]{
		Col("run_id", 0, func(r *WSRun) any { return &r.RunID }),
		Col("route", 0, func(r *WSRun) any { return &r.Route }),
		Col("server", 0, func(r *WSRun) any { return &r.Server }),
		Col("sockets", 0, func(r *WSRun) any { return &r.Sockets }),
		Col("rep", 0, func(r *WSRun) any { return &r.Rep }),
		Col("mode", 0, func(r *WSRun) any { return &r.Mode }),
		Col("queue", 0, func(r *WSRun) any { return &r.Queue }),
		Col("hold_s", msOfS, func(r *WSRun) any { return &r.HoldS }),
		Col("ping_s", msOfS, func(r *WSRun) any { return &r.PingS }),
		Col("read_timeout_s", msOfS, func(r *WSRun) any { return &r.ReadTimeoutS }),
	},
	statusCols(func(r *WSRun) runStatus { return runStatus{&r.StartedAt, &r.Status, &r.Reason} }),
	[]Column[WSRun]{
		Col("opened", 0, func(r *WSRun) any { return &r.Opened }),
		Col("held", 0, func(r *WSRun) any { return &r.Held }),
		Col("refused", 0, func(r *WSRun) any { return &r.Refused }),
		Col("handshake_p95_ms", usOfMS, func(r *WSRun) any { return &r.HandshakeP95MS }),
		Col("lifetime_p50_s", msOfS, func(r *WSRun) any { return &r.LifetimeP50S }),
		Col("messages", 0, func(r *WSRun) any { return &r.Messages }),
		Col("delay_p95_ms", usOfMS, func(r *WSRun) any { return &r.DelayP95MS }),
		Col("app_mem_peak_mib", kibOfMi, func(r *WSRun) any { return &r.AppMemPeakMiB }),
		Col("app_rss_peak_mib", kibOfMi, func(r *WSRun) any { return &r.AppRSSPeakMiB }),
		Col("app_oom_kills", whole, func(r *WSRun) any { return &r.AppOOMKills }),
		Col("slots", whole, func(r *WSRun) any { return &r.Slots }),
		Col("workers", whole, func(r *WSRun) any { return &r.Workers }),
		Col("held_max", whole, func(r *WSRun) any { return &r.HeldMax }),
		Col("workers_holding_max", whole, func(r *WSRun) any { return &r.WorkersHoldingMax }),
	},
	fastCols(func(r *WSRun) fastRun {
		return fastRun{&r.FastPlanned, &r.FastSent, &r.FastTotal, &r.FastOK, &r.P50MS, &r.P95MS, &r.MaxMS}
	}),
)}

// SummarizeWSRun fills run's /fast columns from reqs (as SummarizeRun
// does) and its socket columns from the run's sessions.
func SummarizeWSRun(run WSRun, reqs []Request, sessions []WSSession) WSRun {
	fast := SummarizeRun(RunMeta{FastPlanned: run.FastPlanned}, reqs, nil)
	run.FastSent, run.FastTotal, run.FastOK = fast.FastSent, fast.FastTotal, fast.FastOK
	run.P50MS, run.P95MS, run.MaxMS = fast.P50MS, fast.P95MS, fast.MaxMS
	run.Opened, run.Held, run.Refused = 0, 0, 0
	var hs, life, delays []float64
	run.Messages = 0
	for _, s := range sessions {
		run.Messages += s.Messages
		delays = appendValidMaybe(delays, s.DelayP95MS)
		if s.HandshakeMS.Valid {
			run.Opened++
			hs = append(hs, s.HandshakeMS.Value)
			life = append(life, s.HeldS)
		}
		switch s.End {
		case WSHeld:
			run.Held++
		case WSRefused:
			run.Refused++
		}
	}
	run.HandshakeP95MS = Some(NearestRank(hs, 95))
	run.LifetimeP50S = Some(Median(life))
	run.DelayP95MS = Some(NearestRank(delays, 100))
	return run
}

// WSCondition is one condition of websocket over its ok runs: the
// printed table's row. Sockets opened, held and refused are summed over
// the runs; /fast percentiles are medians of the runs' values; HeldMax
// and WorkersHoldingMax the largest.
type WSCondition struct {
	Route, Server string
	Sockets       int
	Mode, Queue   string
	Messages      int
	DelayP95MS    Maybe // the largest of the ok runs'
	// The app's memory: the largest cgroup and RSS peaks and the OOM kills
	// summed, over every run, ok or not: a run the kernel failed by
	// killing the app is what these columns are for.
	AppMemPeakMiB, AppRSSPeakMiB Maybe
	AppOOMKills                  int
	PingS, ReadTimeoutS          float64
	LifetimeP50S                 Maybe // median of the runs' medians
	Runs, Excluded               int
	Opened, Held, Refused        int
	Slots, Workers               Maybe
	HeldMax                      Maybe
	WorkersHoldingMax            Maybe
	FastPlanned, FastOK          int
	P50MS, P95MS                 Maybe
}

// SummarizeWSConditions folds runs into one WSCondition per (route,
// server, sockets, mode, queue, ping, proxy_read_timeout), in order of first appearance; runs that did not end
// ok count only in Excluded.
func SummarizeWSConditions(runs []WSRun) []WSCondition {
	type key struct {
		route, server     string
		sockets           int
		mode, queue       string
		ping, readTimeout float64
	}
	var keys []key
	groups := map[key][]WSRun{}
	for _, r := range runs {
		k := key{r.Route, r.Server, r.Sockets, r.Mode, r.Queue, r.PingS, r.ReadTimeoutS}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	var rows []WSCondition
	for _, k := range keys {
		row := WSCondition{Route: k.route, Server: k.server, Sockets: k.sockets, Mode: k.mode, Queue: k.queue, PingS: k.ping, ReadTimeoutS: k.readTimeout}
		var held, holding, p50, p95, life, delay, mem, rss []float64
		for _, r := range groups[k] {
			if r.AppOOMKills.Valid {
				row.AppOOMKills += int(r.AppOOMKills.Value)
			}
			mem, rss = appendValidMaybe(mem, r.AppMemPeakMiB), appendValidMaybe(rss, r.AppRSSPeakMiB)
			if r.Status != RunOK {
				row.Excluded++
				continue
			}
			row.Runs++
			row.Opened += r.Opened
			row.Held += r.Held
			row.Refused += r.Refused
			row.FastPlanned += r.FastPlanned
			row.FastOK += r.FastOK
			row.Slots, row.Workers = r.Slots, r.Workers
			held, holding = appendValidMaybe(held, r.HeldMax), appendValidMaybe(holding, r.WorkersHoldingMax)
			p50, p95 = appendValidMaybe(p50, r.P50MS), appendValidMaybe(p95, r.P95MS)
			life = appendValidMaybe(life, r.LifetimeP50S)
			row.Messages += r.Messages
			delay = appendValidMaybe(delay, r.DelayP95MS)
		}
		row.DelayP95MS = Some(NearestRank(delay, 100))
		row.AppMemPeakMiB, row.AppRSSPeakMiB = Some(NearestRank(mem, 100)), Some(NearestRank(rss, 100))
		row.LifetimeP50S = Some(Median(life))
		row.HeldMax, row.WorkersHoldingMax = Some(NearestRank(held, 100)), Some(NearestRank(holding, 100))
		row.P50MS, row.P95MS = Some(Median(p50)), Some(Median(p95))
		rows = append(rows, row)
	}
	return rows
}
