package recorder

// SweepCell is one row of sweep.csv (buffer-sweep): one cell of the size x
// rate x route x kernel-buffer grid, over its repetitions. Kernel labels
// the socket buffer settings the cell ran under ("host": the host's, no
// namespace; else the network namespace the run made, such as
// "wmem=1m rmem=default"); TCPWmem and TCPRmem are the settings read
// there ("min default max" bytes). Dir is the cell's own results
// directory (its runs.csv, hops.csv, ...), relative to the sweep's.
//
// The path's capacity is the most bytes of one download the path between
// the app and the client holds. CapacityPredictedBytes is the buffer-sweep
// model's, computed before the run from configuration only (the kernel's
// socket buffer settings of the cell's namespace, the buffers the app,
// the proxy and the client set; package buffersweep's model.go), and
// AppSendPredictedS the app's send time it implies, max(0, size -
// capacity) / rate. CapacityMeasuredBytes is what the hop samples show:
// the most bytes one download had in flight (app_written - client_read
// in hops.csv), median over the cell's downloads; AppSendMeasuredS the
// app's send time from its send log, median over the same downloads.
//
// CapacityBytes, PredictedAppSendS and AppSendS are the older names of
// CapacityMeasuredBytes, AppSendPredictedS and AppSendMeasuredS, kept so
// that readers of the earlier columns go on working (PredictedAppSendS
// was once computed from the measured capacity; it is now the model's).
// PredictionErrorPct is how far the measured send time is from the
// predicted one, in percent of the prediction (empty when the prediction
// is 0). WakeStepBytes is the most the app wrote between two hop samples
// once the path was full (median over the downloads): a writer blocked on
// a full socket is woken only when a third of its buffer is free, so it
// writes in steps, and its last write can finish up to a step's reading
// time (WakeStepBytes / rate) after a continuous model says.
type SweepCell struct {
	Kernel             string
	TCPWmem, TCPRmem   string
	Route, Server      string
	SlowClients        int
	SizeBytes          int64
	RateBps            int64
	Runs, RunsOK       int
	FastP95MS          Maybe
	AppSendS           Maybe
	ClientReceiveS     Maybe
	CapacityBytes      Maybe
	PredictedAppSendS  Maybe
	PredictionErrorPct Maybe
	WakeStepBytes      Maybe
	Dir                string
	// The model against the measurement (see above).
	CapacityPredictedBytes Maybe
	CapacityMeasuredBytes  Maybe
	AppSendPredictedS      Maybe
	AppSendMeasuredS       Maybe
}

func (SweepCell) Schema() *Schema[SweepCell] { return &sweepSchema }

var sweepSchema = Schema[SweepCell]{file: "sweep.csv", cols: []Column[SweepCell]{
	Col("kernel", 0, func(r *SweepCell) any { return &r.Kernel }),
	Col("tcp_wmem", 0, func(r *SweepCell) any { return &r.TCPWmem }),
	Col("tcp_rmem", 0, func(r *SweepCell) any { return &r.TCPRmem }),
	Col("route", 0, func(r *SweepCell) any { return &r.Route }),
	Col("server", 0, func(r *SweepCell) any { return &r.Server }),
	Col("slow_clients", 0, func(r *SweepCell) any { return &r.SlowClients }),
	Col("size_bytes", whole, func(r *SweepCell) any { return &r.SizeBytes }),
	Col("rate_bps", whole, func(r *SweepCell) any { return &r.RateBps }),
	Col("runs", 0, func(r *SweepCell) any { return &r.Runs }),
	Col("runs_ok", 0, func(r *SweepCell) any { return &r.RunsOK }),
	Col("fast_p95_ms", usOfMS, func(r *SweepCell) any { return &r.FastP95MS }),
	Col("app_send_s", msOfS, func(r *SweepCell) any { return &r.AppSendS }),
	Col("client_receive_s", msOfS, func(r *SweepCell) any { return &r.ClientReceiveS }),
	Col("capacity_bytes", whole, func(r *SweepCell) any { return &r.CapacityBytes }),
	Col("predicted_app_send_s", msOfS, func(r *SweepCell) any { return &r.PredictedAppSendS }),
	Col("prediction_error_pct", 1, func(r *SweepCell) any { return &r.PredictionErrorPct }),
	Col("wake_step_bytes", whole, func(r *SweepCell) any { return &r.WakeStepBytes }),
	Col("dir", 0, func(r *SweepCell) any { return &r.Dir }),
	Col("capacity_predicted_bytes", whole, func(r *SweepCell) any { return &r.CapacityPredictedBytes }),
	Col("capacity_measured_bytes", whole, func(r *SweepCell) any { return &r.CapacityMeasuredBytes }),
	Col("app_send_predicted_s", msOfS, func(r *SweepCell) any { return &r.AppSendPredictedS }),
	Col("app_send_measured_s", msOfS, func(r *SweepCell) any { return &r.AppSendMeasuredS }),
}}
