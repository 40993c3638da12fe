package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --resume directory that no session wrote (missing, a file, or without
// its scenario.yaml) is a usage error before anything starts: the
// directory is neither created nor written into.
func TestResumeRefusesADirectoryNoSessionWrote(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(tmp, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{filepath.Join(tmp, "missing"), "no such directory"},
		{file, "not a directory"},
		{empty, "it has no scenario.yaml"},
	} {
		for _, args := range [][]string{
			{"reproduce", "slow-client", "--stack", "embedded", "--resume", tc.dir},
			{"run", filepath.Join("..", "..", "examples", "own-workers.yaml"), "--stack", "embedded", "--resume", tc.dir},
		} {
			code, _, stderr := runCmd(t, args...)
			if code != 2 || !strings.Contains(stderr, "--resume "+tc.dir+": "+tc.want) {
				t.Errorf("%s: exit %d, want 2 and %q: %s", strings.Join(args, " "), code, tc.want, stderr)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "missing")); !os.IsNotExist(err) {
		t.Errorf("--resume of a missing directory made it (%v)", err)
	}
	if left, _ := os.ReadDir(empty); len(left) > 0 {
		t.Errorf("--resume of an empty directory wrote into it: %v", left)
	}
}
