package workdir

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Left is a run's scratch directory (New) whose session no longer runs: killed (SIGKILL, the OOM killer, a CI timeout) before it
// could remove it.
type Left struct {
	Dir     string
	Session int   // the PID in its name
	Err     error // why it could not be removed; nil when it was (or, dry, would be)
}

// CleanupDead removes, under tmp (the system's temp dir when
// empty), the work directories of sessions whose process is gone, and
// lists them; with dryRun it removes nothing. A directory whose session's
// PID runs is kept, whatever runs under that PID now: a reused PID keeps a
// dead session's directory, never the reverse. Nothing else is touched.
func CleanupDead(tmp string, dryRun bool) ([]Left, error) {
	if tmp == "" {
		tmp = os.TempDir()
	}
	dirs, err := filepath.Glob(filepath.Join(tmp, Prefix+"*"))
	if err != nil {
		return nil, err
	}
	var left []Left
	for _, d := range dirs {
		pid, ok := workDirSession(filepath.Base(d))
		if !ok || processRuns(pid) {
			continue
		}
		l := Left{Dir: d, Session: pid}
		if !dryRun {
			l.Err = os.RemoveAll(d)
		}
		left = append(left, l)
	}
	return left, nil
}

// workDirSession is the session PID in a work directory's name
// (Prefix + PID + "-" + random), false when the name is not one.
func workDirSession(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return 0, false
	}
	p, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	return pid, err == nil && pid > 0
}

// processRuns reports whether a process with pid exists (a zombie
// included); a process of another user counts (EPERM).
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
