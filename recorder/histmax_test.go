package recorder_test

import (
	"testing"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// TestDurationHistMaxIsExact: p100 is the largest duration counted, not
// the middle of its bucket, even where that middle is below it (the
// upper half of a bucket 512 ns wide at 1 ms).
func TestDurationHistMaxIsExact(t *testing.T) {
	var h recorder.DurationHist
	h.Add(time.Millisecond)
	h.Add(1000447 * time.Nanosecond)
	if got := h.Percentile(100); got != 1.000447 {
		t.Errorf("p100 %v ms, want 1.000447 (the largest)", got)
	}
}
