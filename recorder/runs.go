package recorder

import "time"

// Run is one row of runs.csv: the summary of one repetition of one
// condition. Only runs with Status RunOK enter conditions.csv. StartedAt
// is written in UTC; a zero StartedAt is an empty cell.
type Run struct {
	RunID, Route, Server string
	SlowClients, Rep     int
	StartedAt            time.Time
	Status, Reason       string
	FastTotal, FastOK    int
	// FastPlanned is how many /fast requests the run's schedule had, and
	// FastSent how many of them were sent; requests.csv has a row for
	// each planned one (FastTotal), those never sent marked not_sent.
	FastPlanned, FastSent    int
	P50MS, P95MS, MaxMS      Maybe
	MaxScheduleLagMS         Maybe
	AppSendS, ClientReceiveS Maybe
	TempPeakMiB              Maybe
	Components               [3]ComponentSummary
}

// MaxLag is the run's largest schedule lag, for the run loop's
// --max-schedule-lag.
func (r *Run) MaxLag() (ms float64, ok bool) {
	return r.MaxScheduleLagMS.Value, r.MaxScheduleLagMS.Valid
}

// Run.Status values.
const (
	RunOK      = "ok"
	RunFailed  = "failed"
	RunAborted = "aborted"
)

// ComponentSummary is one component's resource use over a run, in the
// c_cpu_cores, c_throttled_ms, c_memory_peak_bytes, c_rss_peak_bytes
// columns of runs.csv.
type ComponentSummary struct {
	CPUCores, ThrottledMS, MemoryPeakBytes, RSSPeakBytes Maybe
	// OOMKills is how many of the component's processes the kernel killed
	// during the run for reaching its cgroup's memory limit; empty without
	// a cgroup or where the kernel does not count them.
	OOMKills Maybe
}

// Components names the resource groups summarized in runs.csv, in column
// order; Run.Components is indexed the same way.
var Components = [3]string{"app", "proxy", "loadgen"}

func (Run) Schema() *Schema[Run] { return &runSchema }

var runSchema = Schema[Run]{file: "runs.csv", cols: append([]Column[Run]{
	Col("run_id", 0, func(r *Run) any { return &r.RunID }),
	Col("route", 0, func(r *Run) any { return &r.Route }),
	Col("server", 0, func(r *Run) any { return &r.Server }),
	Col("slow_clients", 0, func(r *Run) any { return &r.SlowClients }),
	Col("rep", 0, func(r *Run) any { return &r.Rep }),
	Col("started_at", 0, func(r *Run) any { return &r.StartedAt }),
	Col("status", 0, func(r *Run) any { return &r.Status }),
	Col("reason", 0, func(r *Run) any { return &r.Reason }),
	Col("fast_total", 0, func(r *Run) any { return &r.FastTotal }),
	Col("fast_ok", 0, func(r *Run) any { return &r.FastOK }),
	Col("fast_planned", 0, func(r *Run) any { return &r.FastPlanned }),
	Col("fast_sent", 0, func(r *Run) any { return &r.FastSent }),
	Col("p50_ms", DecimalsMillis, func(r *Run) any { return &r.P50MS }),
	Col("p95_ms", DecimalsMillis, func(r *Run) any { return &r.P95MS }),
	Col("max_ms", DecimalsMillis, func(r *Run) any { return &r.MaxMS }),
	Col("max_schedule_lag_ms", DecimalsMillis, func(r *Run) any { return &r.MaxScheduleLagMS }),
	Col("app_send_s", DecimalsSeconds, func(r *Run) any { return &r.AppSendS }),
	Col("client_receive_s", DecimalsSeconds, func(r *Run) any { return &r.ClientReceiveS }),
	Col("temp_peak_mib", DecimalsMiB, func(r *Run) any { return &r.TempPeakMiB }),
}, componentColumns()...)}

// componentColumns returns c_cpu_cores, c_throttled_ms, c_memory_peak_bytes,
// c_rss_peak_bytes for each c in Components, then c_oom_kills for each
// (added later, so after the others).
func componentColumns() []Column[Run] {
	var cols []Column[Run]
	for i, c := range Components {
		cols = append(cols,
			Col(c+"_cpu_cores", DecimalsMilli, func(r *Run) any { return &r.Components[i].CPUCores }),
			Col(c+"_throttled_ms", DecimalsMillis, func(r *Run) any { return &r.Components[i].ThrottledMS }),
			Col(c+"_memory_peak_bytes", DecimalsWhole, func(r *Run) any { return &r.Components[i].MemoryPeakBytes }),
			Col(c+"_rss_peak_bytes", DecimalsWhole, func(r *Run) any { return &r.Components[i].RSSPeakBytes }),
		)
	}
	for i, c := range Components {
		cols = append(cols, Col(c+"_oom_kills", 0, func(r *Run) any { return &r.Components[i].OOMKills }))
	}
	return cols
}
