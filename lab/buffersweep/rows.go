package buffersweep

import "github.com/slowlab/slowlab/recorder"

// sweepFile is the sweep's summary, the results file this package
// declares: one row per cell and route.
const sweepFile = "sweep.csv"

// Cell is one row of sweep.csv: one cell of the size x rate x route x
// kernel-buffer grid, over its repetitions. Kernel labels the socket
// buffer settings the cell ran under ("host": the host's, no namespace;
// else the network namespace the run made, such as "wmem=1m
// rmem=default"); TCPWmem and TCPRmem are the settings read there ("min
// default max" bytes). Dir is the cell's own results directory (a
// slow-client one), relative to the sweep's.
//
// The path's capacity is the most bytes of one download the path between
// the app and the client holds. CapacityPredictedBytes is the path
// model's (package pathmodel), computed before the run from configuration
// only (the kernel's socket buffer settings of the cell's namespace, the
// buffers the app, the proxy and the client set), and AppSendPredictedS
// the app's send time it implies, max(0, size - capacity) / rate.
// CapacityMeasuredBytes is what the hop samples show: the most bytes one
// download had in flight (app_written - client_read in hops.csv), median
// over the cell's downloads; AppSendMeasuredS the app's send time from
// its send log, median over the same downloads.
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
type Cell struct {
	Kernel             string
	TCPWmem, TCPRmem   string
	Route, Server      string
	SlowClients        int
	SizeBytes          int64
	RateBps            int64
	Runs, RunsOK       int
	FastP95MS          recorder.Maybe
	AppSendS           recorder.Maybe
	ClientReceiveS     recorder.Maybe
	CapacityBytes      recorder.Maybe
	PredictedAppSendS  recorder.Maybe
	PredictionErrorPct recorder.Maybe
	WakeStepBytes      recorder.Maybe
	Dir                string
	// The model against the measurement (see above).
	CapacityPredictedBytes recorder.Maybe
	CapacityMeasuredBytes  recorder.Maybe
	AppSendPredictedS      recorder.Maybe
	AppSendMeasuredS       recorder.Maybe
}

func (Cell) Schema() *recorder.Schema[Cell] { return cellSchema }

var cellSchema = recorder.NewSchema(sweepFile,
	recorder.Col("kernel", 0, func(r *Cell) any { return &r.Kernel }),
	recorder.Col("tcp_wmem", 0, func(r *Cell) any { return &r.TCPWmem }),
	recorder.Col("tcp_rmem", 0, func(r *Cell) any { return &r.TCPRmem }),
	recorder.Col("route", 0, func(r *Cell) any { return &r.Route }),
	recorder.Col("server", 0, func(r *Cell) any { return &r.Server }),
	recorder.Col("slow_clients", 0, func(r *Cell) any { return &r.SlowClients }),
	recorder.Col("size_bytes", recorder.DecimalsWhole, func(r *Cell) any { return &r.SizeBytes }),
	recorder.Col("rate_bps", recorder.DecimalsWhole, func(r *Cell) any { return &r.RateBps }),
	recorder.Col("runs", 0, func(r *Cell) any { return &r.Runs }),
	recorder.Col("runs_ok", 0, func(r *Cell) any { return &r.RunsOK }),
	recorder.Col("fast_p95_ms", recorder.DecimalsMillis, func(r *Cell) any { return &r.FastP95MS }),
	recorder.Col("app_send_s", recorder.DecimalsSeconds, func(r *Cell) any { return &r.AppSendS }),
	recorder.Col("client_receive_s", recorder.DecimalsSeconds, func(r *Cell) any { return &r.ClientReceiveS }),
	recorder.Col("capacity_bytes", recorder.DecimalsWhole, func(r *Cell) any { return &r.CapacityBytes }),
	recorder.Col("predicted_app_send_s", recorder.DecimalsSeconds, func(r *Cell) any { return &r.PredictedAppSendS }),
	recorder.Col("prediction_error_pct", 1, func(r *Cell) any { return &r.PredictionErrorPct }),
	recorder.Col("wake_step_bytes", recorder.DecimalsWhole, func(r *Cell) any { return &r.WakeStepBytes }),
	recorder.Col("dir", 0, func(r *Cell) any { return &r.Dir }),
	recorder.Col("capacity_predicted_bytes", recorder.DecimalsWhole, func(r *Cell) any { return &r.CapacityPredictedBytes }),
	recorder.Col("capacity_measured_bytes", recorder.DecimalsWhole, func(r *Cell) any { return &r.CapacityMeasuredBytes }),
	recorder.Col("app_send_predicted_s", recorder.DecimalsSeconds, func(r *Cell) any { return &r.AppSendPredictedS }),
	recorder.Col("app_send_measured_s", recorder.DecimalsSeconds, func(r *Cell) any { return &r.AppSendMeasuredS }),
)
