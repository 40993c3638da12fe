package lab

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedHeld answers LongPollsHeld from a script, one entry per call,
// repeating the last; an entry of nil is an error.
type scriptedHeld struct {
	script []map[string]int
	calls  atomic.Int32
}

func (s *scriptedHeld) LongPollsHeld(context.Context) (map[string]int, error) {
	i := min(int(s.calls.Add(1))-1, len(s.script)-1)
	if s.script[i] == nil {
		return nil, errors.New("scrape failed")
	}
	return s.script[i], nil
}

func TestSampleHeld(t *testing.T) {
	full, spread := map[string]int{"101": 16, "102": 4}, map[string]int{"101": 10, "102": 10}
	hc := &scriptedHeld{script: []map[string]int{full, full, full, nil, spread}}
	start := time.Now()
	window := 20 * heldEvery
	st := sampleHeld(context.Background(), hc, 16, start, start.Add(window))()
	// stop right away: at most the first sample was taken
	if st.samples+st.failed > 1 {
		t.Errorf("stopped at once, yet %d samples", st.samples+st.failed)
	}

	hc.calls.Store(0)
	stop := sampleHeld(context.Background(), hc, 16, start, start.Add(window))
	time.Sleep(window + 2*heldEvery)
	st = stop()
	if st.max != 16 {
		t.Errorf("max = %d, want 16", st.max)
	}
	if st.failed != 1 || st.lastErr == nil {
		t.Errorf("failed = %d (%v), want the one scripted error", st.failed, st.lastErr)
	}
	if st.full <= 0 || st.full > window {
		t.Errorf("full = %s, want some of the %s window", st.full, window)
	}
	if n := int(hc.calls.Load()); n > int(window/heldEvery)+2 {
		t.Errorf("%d samples in a window of %d periods: sampling did not stop at the end", n, window/heldEvery)
	}

	none := &scriptedHeld{script: []map[string]int{spread}}
	start = time.Now()
	stop = sampleHeld(context.Background(), none, 16, start, start.Add(5*heldEvery))
	time.Sleep(7 * heldEvery)
	if st := stop(); st.full != 0 || st.max != 10 || st.samples == 0 {
		t.Errorf("spread 10/10 of 16 threads: %+v, want max 10, never full", st)
	}
}

// gunicornRun.LongPollsHeld reads app.py's per-worker files: live workers
// only, fixed-width counts, a clear error for a file that is not a count.
func TestGunicornLongPollsHeld(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("held-"+me, "        16\n")
	write("held-"+strconv.Itoa(dead.Process.Pid), "         3\n") // exited worker: skipped
	write("other-file", "x")
	r := &gunicornRun{heldDir: dir}
	got, err := r.LongPollsHeld(context.Background())
	if err != nil || len(got) != 1 || got[me] != 16 {
		t.Fatalf("LongPollsHeld = %v, %v; want {%s: 16}", got, err, me)
	}
	write("held-"+me, "sixteen\n")
	if _, err := r.LongPollsHeld(context.Background()); err == nil || !strings.Contains(err.Error(), `held-`+me+`: "sixteen\n" is not a count`) {
		t.Errorf("malformed file: err = %v", err)
	}
}
