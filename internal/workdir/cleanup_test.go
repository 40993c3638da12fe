package workdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// deadPID is the PID of a process that ran and was reaped.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestCleanupDead: of the work directories under a temp dir, those of a
// session whose process is gone are listed and, unless dry, removed; this
// session's and every name that is not a work directory's are kept.
func TestCleanupDead(t *testing.T) {
	tmp := t.TempDir()
	dead := deadPID(t)
	mine := Prefix + strconv.Itoa(os.Getpid()) + "-a"
	gone := Prefix + strconv.Itoa(dead) + "-b"
	others := []string{Prefix + "x-c", Prefix + strconv.Itoa(dead), "other-" + strconv.Itoa(dead) + "-d"}
	for _, d := range append([]string{mine, gone}, others...) {
		if err := os.Mkdir(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, dry := range []bool{true, false} {
		left, err := CleanupDead(tmp, dry)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 1 || left[0].Dir != filepath.Join(tmp, gone) || left[0].Session != dead || left[0].Err != nil {
			t.Fatalf("dry %v: left %+v, want only %s of session %d", dry, left, gone, dead)
		}
		_, err = os.Stat(filepath.Join(tmp, gone))
		if dry != (err == nil) {
			t.Errorf("dry %v: %s stat %v", dry, gone, err)
		}
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, e := range entries {
		kept = append(kept, e.Name())
	}
	want := append([]string{mine}, others...)
	slices.Sort(want)
	if !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
}
