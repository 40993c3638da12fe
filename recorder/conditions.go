package recorder

// Condition is one row of conditions.csv: the summary over the ok runs of
// one (route, server, slow clients) condition. RunsExcluded counts the
// condition's runs that were not ok (failed, for instance by an incomplete
// download, or aborted) and are left out of every column.
type Condition struct {
	Route          string `csv:"route"`
	Server         string `csv:"server"`
	SlowClients    int    `csv:"slow_clients"`
	Runs           int    `csv:"runs"`
	RunsExcluded   int    `csv:"runs_excluded"`
	P50MS          Maybe  `csv:"p50_ms,millis"`
	P95MS          Maybe  `csv:"p95_ms,millis"`
	P95MinMS       Maybe  `csv:"p95_min_ms,millis"`
	P95MaxMS       Maybe  `csv:"p95_max_ms,millis"`
	AppSendS       Maybe  `csv:"app_send_s,seconds"`
	ClientReceiveS Maybe  `csv:"client_receive_s,seconds"`
	TempPeakMiB    Maybe  `csv:"temp_peak_mib,mib"`
	// AppMemoryPeakMiB and ProxyMemoryPeakMiB are the most memory the
	// component's cgroup held in any of the condition's runs (page cache
	// included: a proxy's temp files count), else its processes' peak
	// RSS where it ran without a cgroup.
	AppMemoryPeakMiB   Maybe `csv:"app_memory_peak_mib,mib"`
	ProxyMemoryPeakMiB Maybe `csv:"proxy_memory_peak_mib,mib"`
}

func (Condition) Schema() *Schema[Condition] { return conditionSchema }

var conditionSchema = Tagged[Condition]("conditions.csv")
