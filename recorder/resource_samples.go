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

func (ResourceSample) Schema() *Schema[ResourceSample] { return &resourceSampleSchema }

var resourceSampleSchema = Schema[ResourceSample]{file: "resource-samples.csv", cols: []Column[ResourceSample]{
	Col("run_id", 0, func(r *ResourceSample) any { return &r.RunID }),
	Col("t_s", msOfS, func(r *ResourceSample) any { return &r.TS }),
	Col("component", 0, func(r *ResourceSample) any { return &r.Component }),
	Col("cpu_seconds", usOfS, func(r *ResourceSample) any { return &r.CPUSeconds }),
	Col("throttled_periods", whole, func(r *ResourceSample) any { return &r.ThrottledPeriods }),
	Col("throttled_s", usOfS, func(r *ResourceSample) any { return &r.ThrottledS }),
	Col("memory_bytes", whole, func(r *ResourceSample) any { return &r.MemoryBytes }),
	Col("rss_bytes", whole, func(r *ResourceSample) any { return &r.RSSBytes }),
	Col("processes", whole, func(r *ResourceSample) any { return &r.Processes }),
	Col("temp_files", whole, func(r *ResourceSample) any { return &r.TempFiles }),
	Col("temp_logical_bytes", whole, func(r *ResourceSample) any { return &r.TempLogicalBytes }),
	Col("temp_allocated_bytes", whole, func(r *ResourceSample) any { return &r.TempAllocatedBytes }),
	Col("send_queue_bytes", whole, func(r *ResourceSample) any { return &r.SendQueueBytes }),
	Col("error", 0, func(r *ResourceSample) any { return &r.Error }),
	Col("open_fds", whole, func(r *ResourceSample) any { return &r.OpenFDs }),
	Col("established", whole, func(r *ResourceSample) any { return &r.Established }),
	Col("quiet_clients", whole, func(r *ResourceSample) any { return &r.QuietClients }),
}}
