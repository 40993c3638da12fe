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
	Kernel             string         `csv:"kernel"`
	TCPWmem            string         `csv:"tcp_wmem"`
	TCPRmem            string         `csv:"tcp_rmem"`
	Route              string         `csv:"route"`
	Server             string         `csv:"server"`
	SlowClients        int            `csv:"slow_clients"`
	SizeBytes          int64          `csv:"size_bytes"`
	RateBps            int64          `csv:"rate_bps"`
	Runs               int            `csv:"runs"`
	RunsOK             int            `csv:"runs_ok"`
	FastP95MS          recorder.Maybe `csv:"fast_p95_ms,millis"`
	AppSendS           recorder.Maybe `csv:"app_send_s,seconds"`
	ClientReceiveS     recorder.Maybe `csv:"client_receive_s,seconds"`
	CapacityBytes      recorder.Maybe `csv:"capacity_bytes"`
	PredictedAppSendS  recorder.Maybe `csv:"predicted_app_send_s,seconds"`
	PredictionErrorPct recorder.Maybe `csv:"prediction_error_pct,1"`
	WakeStepBytes      recorder.Maybe `csv:"wake_step_bytes"`
	Dir                string         `csv:"dir"`
	// The model against the measurement (see above).
	CapacityPredictedBytes recorder.Maybe `csv:"capacity_predicted_bytes"`
	CapacityMeasuredBytes  recorder.Maybe `csv:"capacity_measured_bytes"`
	AppSendPredictedS      recorder.Maybe `csv:"app_send_predicted_s,seconds"`
	AppSendMeasuredS       recorder.Maybe `csv:"app_send_measured_s,seconds"`
}

func (Cell) Schema() *recorder.Schema[Cell] { return cellSchema }

var cellSchema = recorder.Tagged[Cell](sweepFile)
