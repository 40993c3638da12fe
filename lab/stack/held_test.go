package stack

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// gunicornRun.LongPollsHeld reads app.py's per-worker files: live workers
// only, fixed-width counts, a file created but not yet written as 0 (CI
// caught Node's worker between the two), a clear error for a file that is
// not a count.
func TestGunicornLongPollsHeld(t *testing.T) {
	slowlabtest.Timing(t)
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
	r := &appProcess{heldDir: dir}
	got, err := r.LongPollsHeld(context.Background())
	if err != nil || len(got) != 1 || got[me] != 16 {
		t.Fatalf("LongPollsHeld = %v, %v; want {%s: 16}", got, err, me)
	}
	write("held-"+me, "")
	if got, err := r.LongPollsHeld(context.Background()); err != nil || got[me] != 0 {
		t.Errorf("file not yet written: LongPollsHeld = %v, %v; want {%s: 0}", got, err, me)
	}
	write("held-"+me, "sixteen\n")
	if _, err := r.LongPollsHeld(context.Background()); err == nil || !strings.Contains(err.Error(), `held-`+me+`: "sixteen\n" is not a count`) {
		t.Errorf("malformed file: err = %v", err)
	}
}

// A held-<pid> file holds one count: one of 16 MiB (a count padded with
// spaces, which trimmed would read as 3) fails naming the file, having
// read no more than the bound, where reading it whole took its 16 MiB
// and the count.
func TestHeldFileBounded(t *testing.T) {
	dir := t.TempDir()
	name := "held-" + strconv.Itoa(os.Getpid())
	body := append(bytes.Repeat([]byte(" "), 16<<20), "3\n"...)
	if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
		t.Fatal(err)
	}
	body = nil
	r := &appProcess{heldDir: dir}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := r.LongPollsHeld(context.Background())
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	want := filepath.Join(dir, name) + ": over 64 bytes, not a count"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("LongPollsHeld = %v, %v; want an error ending %q", got, err, want)
	}
	if alloc > 1<<20 {
		t.Errorf("allocated %d bytes, want at most %d", alloc, 1<<20)
	}
}
