package buffersweep

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// sweep.csv keeps its earlier columns where they were and has the path
// model's prediction and the measurement after them.
func TestSweepColumns(t *testing.T) {
	earlier := []string{"kernel", "tcp_wmem", "tcp_rmem", "route", "server", "slow_clients", "size_bytes", "rate_bps", "runs",
		"runs_ok", "fast_p95_ms", "app_send_s", "client_receive_s", "capacity_bytes", "predicted_app_send_s",
		"prediction_error_pct", "wake_step_bytes", "dir"}
	want := append(slices.Clone(earlier), "capacity_predicted_bytes", "capacity_measured_bytes", "app_send_predicted_s", "app_send_measured_s")
	if got := recorder.Header[Cell](); !slices.Equal(got, want) {
		t.Errorf("sweep.csv header\n%v\nwant\n%v", got, want)
	}
	// A sweep.csv written before the model's columns is refused, naming
	// the first one it lacks.
	b, err := os.ReadFile(filepath.Join("testdata", "sweep-invalid-old-header.csv"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = recorder.ReadAll[Cell](strings.NewReader(string(b)))
	if !errors.Is(err, recorder.ErrHeader) || !strings.Contains(err.Error(), `column 19 "capacity_predicted_bytes" is missing`) {
		t.Errorf("old header: %v", err)
	}
}

// TestSweepColumnsKeepLayout: sweep.csv keeps every column's name, place
// and precision (the layout is recorder's SweepCell's, before the row
// moved here).
func TestSweepColumnsKeepLayout(t *testing.T) {
	const published = "kernel/0 tcp_wmem/0 tcp_rmem/0 route/0 server/0 slow_clients/0 size_bytes/0 rate_bps/0 runs/0 runs_ok/0 fast_p95_ms/3 app_send_s/3 client_receive_s/3 capacity_bytes/0 predicted_app_send_s/3 prediction_error_pct/1 wake_step_bytes/0 dir/0 capacity_predicted_bytes/0 capacity_measured_bytes/0 app_send_predicted_s/3 app_send_measured_s/3"
	if got := recordertest.Layout[Cell](); got != published {
		t.Errorf("%s:\n got %s\nwant %s", sweepFile, got, published)
	}
}

// The fuzzer's seed sweep.csv (the report's fixture) reads with the new
// columns in their fields.
func TestSweepSeed(t *testing.T) {
	rows, err := recorder.ReadFile[Cell](filepath.Join("testdata", sweepFile))
	if err != nil || len(rows) != 8 {
		t.Fatalf("testdata/sweep.csv: %d rows, %v", len(rows), err)
	}
	if r := rows[0]; r.CapacityPredictedBytes != recorder.Some(4210688) || r.CapacityMeasuredBytes != recorder.Some(2621440) ||
		r.AppSendPredictedS != recorder.Some(3.984) || r.AppSendMeasuredS != recorder.Some(5.62) {
		t.Errorf("first row %+v", r)
	}
}

// TestRowContract: sweep.csv's rows read back as written, and every field
// has one column.
func TestRowContract(t *testing.T) { recordertest.Contract[Cell](t) }

func FuzzReadSweep(f *testing.F) { recordertest.FuzzRead[Cell](f) }
