package recorder

// Condition is one row of conditions.csv: the summary over the ok runs of
// one (route, server, slow clients) condition. RunsExcluded counts the
// condition's runs that were not ok (failed, for instance by an incomplete
// download, or aborted) and are left out of every column.
type Condition struct {
	Route, Server                         string
	SlowClients, Runs, RunsExcluded       int
	P50MS, P95MS, P95MinMS, P95MaxMS      Maybe
	AppSendS, ClientReceiveS, TempPeakMiB Maybe
	// AppMemoryPeakMiB and ProxyMemoryPeakMiB are the most memory the
	// component's cgroup held in any of the condition's runs (page cache
	// included: a proxy's temp files count), else its processes' peak
	// RSS where it ran without a cgroup.
	AppMemoryPeakMiB, ProxyMemoryPeakMiB Maybe
}

func (Condition) schema() *schema[Condition] { return &conditionSchema }

var conditionSchema = schema[Condition]{file: "conditions.csv", cols: []column[Condition]{
	col("route", 0, func(r *Condition) any { return &r.Route }),
	col("server", 0, func(r *Condition) any { return &r.Server }),
	col("slow_clients", 0, func(r *Condition) any { return &r.SlowClients }),
	col("runs", 0, func(r *Condition) any { return &r.Runs }),
	col("runs_excluded", 0, func(r *Condition) any { return &r.RunsExcluded }),
	col("p50_ms", usOfMS, func(r *Condition) any { return &r.P50MS }),
	col("p95_ms", usOfMS, func(r *Condition) any { return &r.P95MS }),
	col("p95_min_ms", usOfMS, func(r *Condition) any { return &r.P95MinMS }),
	col("p95_max_ms", usOfMS, func(r *Condition) any { return &r.P95MaxMS }),
	col("app_send_s", msOfS, func(r *Condition) any { return &r.AppSendS }),
	col("client_receive_s", msOfS, func(r *Condition) any { return &r.ClientReceiveS }),
	col("temp_peak_mib", kibOfMi, func(r *Condition) any { return &r.TempPeakMiB }),
	col("app_memory_peak_mib", kibOfMi, func(r *Condition) any { return &r.AppMemoryPeakMiB }),
	col("proxy_memory_peak_mib", kibOfMi, func(r *Condition) any { return &r.ProxyMemoryPeakMiB }),
}}
