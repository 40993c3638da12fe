package stack

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/recorder"
)

// heldFunc is a HeldCounter that is a function.
type heldFunc func(context.Context) (map[string]int, error)

func (f heldFunc) LongPollsHeld(ctx context.Context) (map[string]int, error) { return f(ctx) }

// TestSampleHeld: the most held at once is the largest sum over the
// workers in one read, not the sum of each worker's largest; the most
// workers holding one counts only workers holding at least one; a failed
// read is counted and kept as the last error.
func TestSampleHeld(t *testing.T) {
	// Each read answers the script's next entry (nil: an error), then
	// its last again.
	script := []map[string]int{{"101": 3, "102": 0}, nil, {"101": 1, "102": 2, "103": 0}, {"101": 0, "102": 0}}
	var reads atomic.Int32
	stop := SampleHeld(context.Background(), heldFunc(func(context.Context) (map[string]int, error) {
		if next := script[min(int(reads.Add(1)), len(script))-1]; next != nil {
			return next, nil
		}
		return nil, errors.New("read failed")
	}))
	slowlabtest.WaitFor(t, "every scripted read taken", func() bool { return int(reads.Load()) > len(script) })
	st := stop()
	if st.Held != 3 || st.Workers != 2 {
		t.Errorf("held %d by %d workers, want 3 (one read's sum) and 2", st.Held, st.Workers)
	}
	if st.Failed != 1 || st.LastErr == nil || st.Samples < 3 {
		t.Errorf("%d samples, %d failed (%v); want at least 3 and the one scripted error", st.Samples, st.Failed, st.LastErr)
	}
	if n := reads.Load(); n != int32(st.Samples+st.Failed) {
		t.Errorf("%d reads, stats count %d", n, st.Samples+st.Failed)
	}
}

// logged keeps what SampleRunHeld logs.
type logged []string

func (l *logged) Logf(format string, args ...any) { *l = append(*l, format) }

// TestSampleRunHeldWithoutCounter: a run whose app counts nothing held
// leaves both figures unmeasured and logs nothing.
func TestSampleRunHeldWithoutCounter(t *testing.T) {
	var l logged
	held, workers := recorder.Some(7), recorder.Some(7)
	SampleRunHeld(context.Background(), &l, &Running{}, "run1", "streams")(&held, &workers)
	if held != recorder.Some(7) || workers != recorder.Some(7) || len(l) != 0 {
		t.Errorf("held %+v, workers %+v, logged %q: want both untouched and nothing logged", held, workers, l)
	}
}
