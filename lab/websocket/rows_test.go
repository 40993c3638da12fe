package websocket

import (
	"testing"

	"github.com/slowlab/slowlab/recorder/recordertest"
)

// TestRowContract: ws-sessions.csv's and ws-runs.csv's rows read back as
// written, and every field of each has one column.
func TestRowContract(t *testing.T) {
	recordertest.Contract[Session](t)
	recordertest.Contract[RunRow](t)
}

func FuzzReadSessions(f *testing.F) { recordertest.FuzzRead[Session](f) }
func FuzzReadRuns(f *testing.F)     { recordertest.FuzzRead[RunRow](f) }
