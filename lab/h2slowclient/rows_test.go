package h2slowclient

import (
	"testing"

	"github.com/slowlab/slowlab/recorder/recordertest"
)

// TestRowContract: h2-streams.csv's and h2-runs.csv's rows read back as
// written, and every field of each has one column.
func TestRowContract(t *testing.T) {
	recordertest.Contract[Stream](t)
	recordertest.Contract[RunRow](t)
}

func FuzzReadStreams(f *testing.F) { recordertest.FuzzRead[Stream](f) }
func FuzzReadRuns(f *testing.F)    { recordertest.FuzzRead[RunRow](f) }
