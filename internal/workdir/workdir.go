// Package workdir names and makes a run's scratch directory (the stack's
// configs, sockets and temp files): Prefix, then the PID of the session
// that made it and "-", under the system's temp dir. It is its own
// package so that what makes the directories (lab) and what checks that
// a test left none behind (slowlabtest, which lab's tests import) share
// one name. Removing a run's directory is its owner's when the run ends;
// CleanupDead removes those of sessions that were killed before they
// could (`slowlab cleanup`).
package workdir

import (
	"fmt"
	"os"
	"strconv"
)

// Prefix starts the name of every run's scratch directory.
const Prefix = "slowlab-run-"

// New makes a scratch directory of this process: Prefix + PID + "-" and a
// random suffix.
func New() (string, error) {
	work, err := os.MkdirTemp("", Prefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", fmt.Errorf("work dir: %w", err)
	}
	return work, nil
}
