package recorder

// SweepCell is one row of sweep.csv (buffer-sweep): one cell of the size x
// rate x route x kernel-buffer grid, over its repetitions. Kernel labels
// the socket buffer settings the cell ran under ("host": the host's, no
// namespace; else the network namespace the run made, such as
// "wmem=1m rmem=default"); TCPWmem and TCPRmem are the settings read
// there ("min default max" bytes). Dir is the cell's own results
// directory (a slow-client one), relative to the sweep's.
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

func (SweepCell) schema() *schema[SweepCell] { return &sweepSchema }

var sweepSchema = schema[SweepCell]{file: "sweep.csv", cols: []column[SweepCell]{
	col("kernel", 0, func(r *SweepCell) any { return &r.Kernel }),
	col("tcp_wmem", 0, func(r *SweepCell) any { return &r.TCPWmem }),
	col("tcp_rmem", 0, func(r *SweepCell) any { return &r.TCPRmem }),
	col("route", 0, func(r *SweepCell) any { return &r.Route }),
	col("server", 0, func(r *SweepCell) any { return &r.Server }),
	col("slow_clients", 0, func(r *SweepCell) any { return &r.SlowClients }),
	col("size_bytes", whole, func(r *SweepCell) any { return &r.SizeBytes }),
	col("rate_bps", whole, func(r *SweepCell) any { return &r.RateBps }),
	col("runs", 0, func(r *SweepCell) any { return &r.Runs }),
	col("runs_ok", 0, func(r *SweepCell) any { return &r.RunsOK }),
	col("fast_p95_ms", usOfMS, func(r *SweepCell) any { return &r.FastP95MS }),
	col("app_send_s", msOfS, func(r *SweepCell) any { return &r.AppSendS }),
	col("client_receive_s", msOfS, func(r *SweepCell) any { return &r.ClientReceiveS }),
	col("capacity_bytes", whole, func(r *SweepCell) any { return &r.CapacityBytes }),
	col("predicted_app_send_s", msOfS, func(r *SweepCell) any { return &r.PredictedAppSendS }),
	col("prediction_error_pct", 1, func(r *SweepCell) any { return &r.PredictionErrorPct }),
	col("wake_step_bytes", whole, func(r *SweepCell) any { return &r.WakeStepBytes }),
	col("dir", 0, func(r *SweepCell) any { return &r.Dir }),
	col("capacity_predicted_bytes", whole, func(r *SweepCell) any { return &r.CapacityPredictedBytes }),
	col("capacity_measured_bytes", whole, func(r *SweepCell) any { return &r.CapacityMeasuredBytes }),
	col("app_send_predicted_s", msOfS, func(r *SweepCell) any { return &r.AppSendPredictedS }),
	col("app_send_measured_s", msOfS, func(r *SweepCell) any { return &r.AppSendMeasuredS }),
}}
