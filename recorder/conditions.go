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

func (Condition) Schema() *Schema[Condition] { return &conditionSchema }

var conditionSchema = Schema[Condition]{file: "conditions.csv", cols: []Column[Condition]{
	Col("route", 0, func(r *Condition) any { return &r.Route }),
	Col("server", 0, func(r *Condition) any { return &r.Server }),
	Col("slow_clients", 0, func(r *Condition) any { return &r.SlowClients }),
	Col("runs", 0, func(r *Condition) any { return &r.Runs }),
	Col("runs_excluded", 0, func(r *Condition) any { return &r.RunsExcluded }),
	Col("p50_ms", usOfMS, func(r *Condition) any { return &r.P50MS }),
	Col("p95_ms", usOfMS, func(r *Condition) any { return &r.P95MS }),
	Col("p95_min_ms", usOfMS, func(r *Condition) any { return &r.P95MinMS }),
	Col("p95_max_ms", usOfMS, func(r *Condition) any { return &r.P95MaxMS }),
	Col("app_send_s", msOfS, func(r *Condition) any { return &r.AppSendS }),
	Col("client_receive_s", msOfS, func(r *Condition) any { return &r.ClientReceiveS }),
	Col("temp_peak_mib", kibOfMi, func(r *Condition) any { return &r.TempPeakMiB }),
	Col("app_memory_peak_mib", kibOfMi, func(r *Condition) any { return &r.AppMemoryPeakMiB }),
	Col("proxy_memory_peak_mib", kibOfMi, func(r *Condition) any { return &r.ProxyMemoryPeakMiB }),
}}
