package recorder

// ResourceSample is one row of resource-samples.csv: one component's
// counters and gauges at TS seconds after the run start. Any value the
// sampler could not read is None; Error says why.
type ResourceSample struct {
	RunID              string  `csv:"run_id"`
	TS                 float64 `csv:"t_s,seconds"`
	Component          string  `csv:"component"`
	CPUSeconds         Maybe   `csv:"cpu_seconds,micros"`
	ThrottledPeriods   Maybe   `csv:"throttled_periods"`
	ThrottledS         Maybe   `csv:"throttled_s,micros"`
	MemoryBytes        Maybe   `csv:"memory_bytes"`
	RSSBytes           Maybe   `csv:"rss_bytes"`
	Processes          Maybe   `csv:"processes"`
	TempFiles          Maybe   `csv:"temp_files"`
	TempLogicalBytes   Maybe   `csv:"temp_logical_bytes"`
	TempAllocatedBytes Maybe   `csv:"temp_allocated_bytes"`
	SendQueueBytes     Maybe   `csv:"send_queue_bytes"`
	Error              string  `csv:"error"`
	// OpenFDs are the descriptors open in the component's processes;
	// Established its established TCP connections; QuietClients its
	// client (accepted) connections that have sent nothing for 10 s.
	OpenFDs      Maybe `csv:"open_fds"`
	Established  Maybe `csv:"established"`
	QuietClients Maybe `csv:"quiet_clients"`
}

func (ResourceSample) Schema() *Schema[ResourceSample] { return resourceSampleSchema }

var resourceSampleSchema = Tagged[ResourceSample]("resource-samples.csv")
