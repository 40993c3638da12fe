package recorder

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sweep.csv keeps its earlier columns where they were and has the path
// model's prediction and the measurement after them.
func TestSweepColumns(t *testing.T) {
	earlier := []string{"kernel", "tcp_wmem", "tcp_rmem", "route", "server", "slow_clients", "size_bytes", "rate_bps", "runs",
		"runs_ok", "fast_p95_ms", "app_send_s", "client_receive_s", "capacity_bytes", "predicted_app_send_s",
		"prediction_error_pct", "wake_step_bytes", "dir"}
	want := append(slices.Clone(earlier), "capacity_predicted_bytes", "capacity_measured_bytes", "app_send_predicted_s", "app_send_measured_s")
	if got := Header[SweepCell](); !slices.Equal(got, want) {
		t.Errorf("sweep.csv header\n%v\nwant\n%v", got, want)
	}
	// A sweep.csv written before the model's columns is refused, naming
	// the first one it lacks.
	b, err := os.ReadFile(filepath.Join("testdata", "sweep-invalid-old-header.csv"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadAll[SweepCell](strings.NewReader(string(b)))
	if !errors.Is(err, ErrHeader) || !strings.Contains(err.Error(), `column 19 "capacity_predicted_bytes" is missing`) {
		t.Errorf("old header: %v", err)
	}
}

// The fuzzer's seed sweep.csv reads with the new columns in their fields.
func TestSweepSeed(t *testing.T) {
	rows, err := ReadFile[SweepCell](filepath.Join("testdata", "sweep.csv"))
	if err != nil || len(rows) != 8 {
		t.Fatalf("testdata/sweep.csv: %d rows, %v", len(rows), err)
	}
	if r := rows[0]; r.CapacityPredictedBytes != Some(4210688) || r.CapacityMeasuredBytes != Some(2621440) ||
		r.AppSendPredictedS != Some(3.984) || r.AppSendMeasuredS != Some(5.62) {
		t.Errorf("first row %+v", r)
	}
}
