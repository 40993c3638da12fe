package idleconn

import (
	"math"
	"testing"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

func TestSummarizeRun(t *testing.T) {
	conns := []Conn{
		{End: "fin", HeldS: recorder.Some(3.1)},
		{End: "fin", HeldS: recorder.Some(3.5), ReceivedBytes: 120},
		{End: "reset", HeldS: recorder.Some(9)},
		{End: "bound", HeldS: recorder.Some(20)},
		{End: "connect-error", Error: "i/o timeout"},
	}
	fast := []recorder.Request{
		{Status: 200, StartS: 1, LatencyMS: 2},
		{Status: 200, StartS: 1.1, LatencyMS: 4000},
		{Status: 0, StartS: 1.2, LatencyMS: 5000, Error: "EOF"},
		{StartS: math.NaN(), LatencyMS: math.NaN()}, // never sent
	}
	got := SummarizeRun(RunRow{}, conns, fast)
	want := RunRow{Connected: 4, ConnectErrors: 1, FIN: 2, Reset: 1, Bound: 1, Responded: 1,
		ServerClosedP50S: recorder.Some(3.5), ServerClosedMaxS: recorder.Some(9), FastSent: 3, FastOK: 2, FastP50MS: recorder.Some(2), FastP95MS: recorder.Some(4000)}
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestRowContract: idle-conns.csv's and idle-runs.csv's rows read back as
// written, and every field of each has one column.
func TestRowContract(t *testing.T) {
	recordertest.Contract[Conn](t)
	recordertest.Contract[RunRow](t)
}

func FuzzReadConns(f *testing.F) { recordertest.FuzzRead[Conn](f) }
func FuzzReadRuns(f *testing.F)  { recordertest.FuzzRead[RunRow](f) }
