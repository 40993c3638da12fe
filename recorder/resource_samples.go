package recorder

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
	// OpenFDs are the descriptors open in the component's processes;
	// Established its established TCP connections; QuietClients its
	// client (accepted) connections that have sent nothing for 10 s.
	OpenFDs, Established, QuietClients Maybe
}

func (ResourceSample) schema() *schema[ResourceSample] { return &resourceSampleSchema }

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
	col("open_fds", whole, func(r *ResourceSample) any { return &r.OpenFDs }),
	col("established", whole, func(r *ResourceSample) any { return &r.Established }),
	col("quiet_clients", whole, func(r *ResourceSample) any { return &r.QuietClients }),
}}
