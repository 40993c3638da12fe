package recorder

import "time"

// Request is one row of requests.csv: one scheduled /fast request. A request
// that failed or timed out still has its row, with Status 0 and Error set.
// Times are relative to the run start. A float that was not measured (NaN)
// is written as an empty cell and an empty cell reads back as NaN.
type Request struct {
	RunID, Route, Server                        string
	SlowClients, Rep, Seq                       int
	ScheduledS, StartS                          float64
	ScheduleLagMS, ConnectMS, TTFBMS, LatencyMS float64
	Status                                      int
	Bytes                                       int64
	Error                                       string
}

// LargeResponse is one row of large-responses.csv: one slow download of
// /large. AppSendS is the app's own send time when the app reported it.
type LargeResponse struct {
	RunID, Route, Server             string
	SlowClients, Rep, Client, Status int
	Bytes                            int64
	ReceiveS                         float64
	AppSendS                         Maybe
	Complete                         bool
	Error                            string
}

// ResourceSample is one row of resource-samples.csv: one component's
// counters and gauges at TS seconds after the run start. Any value the
// sampler could not read is None; Error says why.
type ResourceSample struct {
	RunID                                    string
	TS                                       float64
	Component                                string
	CPUSeconds, ThrottledPeriods, ThrottledS Maybe
	MemoryBytes, RSSBytes, Processes         Maybe
	TempFiles, TempLogicalBytes              Maybe
	TempAllocatedBytes, SendQueueBytes       Maybe
	Error                                    string
}

// ComponentSummary is one component's resource use over a run, in the
// c_cpu_cores, c_throttled_ms, c_memory_peak_bytes, c_rss_peak_bytes
// columns of runs.csv.
type ComponentSummary struct {
	CPUCores, ThrottledMS, MemoryPeakBytes, RSSPeakBytes Maybe
}

// Components names the resource groups summarized in runs.csv, in column
// order; Run.Components is indexed the same way.
var Components = [3]string{"app", "proxy", "loadgen"}

// Run.Status values.
const (
	RunOK      = "ok"
	RunFailed  = "failed"
	RunAborted = "aborted"
)

// Run is one row of runs.csv: the summary of one repetition of one
// condition. Only runs with Status RunOK enter conditions.csv. StartedAt
// is written in UTC; a zero StartedAt is an empty cell.
type Run struct {
	RunID, Route, Server     string
	SlowClients, Rep         int
	StartedAt                time.Time
	Status, Reason           string
	FastTotal, FastOK        int
	P50MS, P95MS, MaxMS      Maybe
	MaxScheduleLagMS         Maybe
	AppSendS, ClientReceiveS Maybe
	TempPeakMiB              Maybe
	Components               [3]ComponentSummary
}

// Condition is one row of conditions.csv: the summary over the ok runs of
// one (route, server, slow clients) condition.
type Condition struct {
	Route, Server                         string
	SlowClients, Runs                     int
	P50MS, P95MS, P95MinMS, P95MaxMS      Maybe
	AppSendS, ClientReceiveS, TempPeakMiB Maybe
}

// Row is the set of CSV row types.
type Row interface {
	Request | LargeResponse | ResourceSample | Run | Condition | Probe | LongPollGroup | GapRow | GapRequest | GapPath
}

// Precision of float columns: digits kept after the decimal point.
const (
	msOfS   = 3 // seconds columns keep milliseconds
	usOfMS  = 3 // millisecond columns keep microseconds
	usOfS   = 6 // cgroup CPU counters are microseconds at the source
	whole   = 0 // bytes and counts
	kibOfMi = 3 // MiB columns keep about a KiB
	milli   = 3 // cores keep millicores
)

// column is one CSV column of row type T. field returns a pointer to the
// row's field: *string, *int, *int64, *float64, *Maybe, *bool or
// *time.Time; decimals is the precision of float and Maybe columns.
type column[T any] struct {
	name     string
	decimals int
	field    func(*T) any
}

func col[T any](name string, decimals int, field func(*T) any) column[T] {
	return column[T]{name: name, decimals: decimals, field: field}
}

// schema is the CSV layout of one row type.
type schema[T any] struct {
	file string
	cols []column[T]
}

var requestSchema = schema[Request]{file: "requests.csv", cols: []column[Request]{
	col("run_id", 0, func(r *Request) any { return &r.RunID }),
	col("route", 0, func(r *Request) any { return &r.Route }),
	col("server", 0, func(r *Request) any { return &r.Server }),
	col("slow_clients", 0, func(r *Request) any { return &r.SlowClients }),
	col("rep", 0, func(r *Request) any { return &r.Rep }),
	col("seq", 0, func(r *Request) any { return &r.Seq }),
	col("scheduled_s", msOfS, func(r *Request) any { return &r.ScheduledS }),
	col("start_s", msOfS, func(r *Request) any { return &r.StartS }),
	col("schedule_lag_ms", usOfMS, func(r *Request) any { return &r.ScheduleLagMS }),
	col("connect_ms", usOfMS, func(r *Request) any { return &r.ConnectMS }),
	col("ttfb_ms", usOfMS, func(r *Request) any { return &r.TTFBMS }),
	col("latency_ms", usOfMS, func(r *Request) any { return &r.LatencyMS }),
	col("status", 0, func(r *Request) any { return &r.Status }),
	col("bytes", 0, func(r *Request) any { return &r.Bytes }),
	col("error", 0, func(r *Request) any { return &r.Error }),
}}

var largeResponseSchema = schema[LargeResponse]{file: "large-responses.csv", cols: []column[LargeResponse]{
	col("run_id", 0, func(r *LargeResponse) any { return &r.RunID }),
	col("route", 0, func(r *LargeResponse) any { return &r.Route }),
	col("server", 0, func(r *LargeResponse) any { return &r.Server }),
	col("slow_clients", 0, func(r *LargeResponse) any { return &r.SlowClients }),
	col("rep", 0, func(r *LargeResponse) any { return &r.Rep }),
	col("client", 0, func(r *LargeResponse) any { return &r.Client }),
	col("status", 0, func(r *LargeResponse) any { return &r.Status }),
	col("bytes", 0, func(r *LargeResponse) any { return &r.Bytes }),
	col("receive_s", msOfS, func(r *LargeResponse) any { return &r.ReceiveS }),
	col("app_send_s", msOfS, func(r *LargeResponse) any { return &r.AppSendS }),
	col("complete", 0, func(r *LargeResponse) any { return &r.Complete }),
	col("error", 0, func(r *LargeResponse) any { return &r.Error }),
}}

var resourceSampleSchema = schema[ResourceSample]{file: "resource-samples.csv", cols: []column[ResourceSample]{
	col("run_id", 0, func(r *ResourceSample) any { return &r.RunID }),
	col("t_s", msOfS, func(r *ResourceSample) any { return &r.TS }),
	col("component", 0, func(r *ResourceSample) any { return &r.Component }),
	col("cpu_seconds", usOfS, func(r *ResourceSample) any { return &r.CPUSeconds }),
	col("throttled_periods", whole, func(r *ResourceSample) any { return &r.ThrottledPeriods }),
	col("throttled_s", usOfS, func(r *ResourceSample) any { return &r.ThrottledS }),
	col("memory_bytes", whole, func(r *ResourceSample) any { return &r.MemoryBytes }),
	col("rss_bytes", whole, func(r *ResourceSample) any { return &r.RSSBytes }),
	col("processes", whole, func(r *ResourceSample) any { return &r.Processes }),
	col("temp_files", whole, func(r *ResourceSample) any { return &r.TempFiles }),
	col("temp_logical_bytes", whole, func(r *ResourceSample) any { return &r.TempLogicalBytes }),
	col("temp_allocated_bytes", whole, func(r *ResourceSample) any { return &r.TempAllocatedBytes }),
	col("send_queue_bytes", whole, func(r *ResourceSample) any { return &r.SendQueueBytes }),
	col("error", 0, func(r *ResourceSample) any { return &r.Error }),
}}

var runSchema = schema[Run]{file: "runs.csv", cols: append([]column[Run]{
	col("run_id", 0, func(r *Run) any { return &r.RunID }),
	col("route", 0, func(r *Run) any { return &r.Route }),
	col("server", 0, func(r *Run) any { return &r.Server }),
	col("slow_clients", 0, func(r *Run) any { return &r.SlowClients }),
	col("rep", 0, func(r *Run) any { return &r.Rep }),
	col("started_at", 0, func(r *Run) any { return &r.StartedAt }),
	col("status", 0, func(r *Run) any { return &r.Status }),
	col("reason", 0, func(r *Run) any { return &r.Reason }),
	col("fast_total", 0, func(r *Run) any { return &r.FastTotal }),
	col("fast_ok", 0, func(r *Run) any { return &r.FastOK }),
	col("p50_ms", usOfMS, func(r *Run) any { return &r.P50MS }),
	col("p95_ms", usOfMS, func(r *Run) any { return &r.P95MS }),
	col("max_ms", usOfMS, func(r *Run) any { return &r.MaxMS }),
	col("max_schedule_lag_ms", usOfMS, func(r *Run) any { return &r.MaxScheduleLagMS }),
	col("app_send_s", msOfS, func(r *Run) any { return &r.AppSendS }),
	col("client_receive_s", msOfS, func(r *Run) any { return &r.ClientReceiveS }),
	col("temp_peak_mib", kibOfMi, func(r *Run) any { return &r.TempPeakMiB }),
}, componentColumns()...)}

// componentColumns returns c_cpu_cores, c_throttled_ms, c_memory_peak_bytes,
// c_rss_peak_bytes for each c in Components.
func componentColumns() []column[Run] {
	var cols []column[Run]
	for i, c := range Components {
		cols = append(cols,
			col(c+"_cpu_cores", milli, func(r *Run) any { return &r.Components[i].CPUCores }),
			col(c+"_throttled_ms", usOfMS, func(r *Run) any { return &r.Components[i].ThrottledMS }),
			col(c+"_memory_peak_bytes", whole, func(r *Run) any { return &r.Components[i].MemoryPeakBytes }),
			col(c+"_rss_peak_bytes", whole, func(r *Run) any { return &r.Components[i].RSSPeakBytes }),
		)
	}
	return cols
}

var conditionSchema = schema[Condition]{file: "conditions.csv", cols: []column[Condition]{
	col("route", 0, func(r *Condition) any { return &r.Route }),
	col("server", 0, func(r *Condition) any { return &r.Server }),
	col("slow_clients", 0, func(r *Condition) any { return &r.SlowClients }),
	col("runs", 0, func(r *Condition) any { return &r.Runs }),
	col("p50_ms", usOfMS, func(r *Condition) any { return &r.P50MS }),
	col("p95_ms", usOfMS, func(r *Condition) any { return &r.P95MS }),
	col("p95_min_ms", usOfMS, func(r *Condition) any { return &r.P95MinMS }),
	col("p95_max_ms", usOfMS, func(r *Condition) any { return &r.P95MaxMS }),
	col("app_send_s", msOfS, func(r *Condition) any { return &r.AppSendS }),
	col("client_receive_s", msOfS, func(r *Condition) any { return &r.ClientReceiveS }),
	col("temp_peak_mib", kibOfMi, func(r *Condition) any { return &r.TempPeakMiB }),
}}

// schemaOf returns the layout of row type T.
func schemaOf[T Row]() *schema[T] {
	var zero T
	var s any
	switch any(zero).(type) {
	case Request:
		s = &requestSchema
	case LargeResponse:
		s = &largeResponseSchema
	case ResourceSample:
		s = &resourceSampleSchema
	case Run:
		s = &runSchema
	case Condition:
		s = &conditionSchema
	case Probe:
		s = &probeSchema
	case LongPollGroup:
		s = &longPollGroupSchema
	case GapRow, GapRequest, GapPath:
		s = gapSchemaOf(zero)
	}
	return s.(*schema[T])
}

// Header returns the CSV header of row type T: the DESIGN.md columns, in
// order. The caller may modify the returned slice.
func Header[T Row]() []string {
	cols := schemaOf[T]().cols
	h := make([]string, len(cols))
	for i, c := range cols {
		h[i] = c.name
	}
	return h
}

// FileName returns the name of the results file holding rows of type T,
// such as "requests.csv".
func FileName[T Row]() string { return schemaOf[T]().file }
