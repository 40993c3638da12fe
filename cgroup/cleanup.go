package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/slowlab/slowlab/child"
)

// Sessions' cgroups live at slowlab/<pid>/<run-id>/<role> in every
// hierarchy (the lab names them; see lab/stack.CgroupName). A session that
// ends normally removes its own; one that was SIGKILLed (the OOM killer, a
// CI timeout) leaves them behind. This file finds and removes those of
// sessions that are gone.

// SessionsDir is the directory, below each hierarchy, that holds one
// directory per session, named by the session's process ID.
const SessionsDir = "slowlab"

// Leftover is one cgroup of a session that is no longer running.
type Leftover struct {
	Dir     string // the cgroup's directory in one hierarchy
	Session int    // the dead session's process ID
	Pids    []int  // processes still in it (it is then kept)
	Err     error  // why it could not be removed, if it could not
}

// Removed reports whether the cleanup removed the cgroup.
func (l Leftover) Removed() bool { return len(l.Pids) == 0 && l.Err == nil }

// CleanupOptions says what CleanupDead may treat as gone and how it
// removes directories.
type CleanupOptions struct {
	// Alive reports whether the process with this PID runs; by default
	// child.Alive.
	Alive func(pid int) bool
	// Ops are the filesystem calls (KernelOps by default).
	Ops Ops
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
}

// CleanupDead removes, in every hierarchy mounted under root, the empty
// cgroups below slowlab/<pid> of every session whose process is gone,
// deepest first, then slowlab/<pid> itself. A cgroup that still holds
// processes is kept and listed with them: it never kills or moves a
// process (a dead session's orphans are for their owner to end). A
// session that still runs, and any directory below slowlab/ not named by
// a PID, is left alone. It returns every leftover it found, removed or
// not; an error only when root has no cgroup hierarchy or one cannot be
// read.
func CleanupDead(root string, o CleanupOptions) ([]Leftover, error) {
	if o.Alive == nil {
		o.Alive = child.Alive
	}
	if o.Ops.Rmdir == nil {
		o.Ops = KernelOps
	}
	layout, err := Detect(root)
	if err != nil {
		return nil, err
	}
	var out []Leftover
	for _, h := range layout.hierarchies() {
		base := filepath.Join(h, SessionsDir)
		entries, err := os.ReadDir(base)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("cgroup cleanup: %w", err)
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if !e.IsDir() || err != nil || pid <= 0 || o.Alive(pid) {
				continue
			}
			out = append(out, cleanSession(filepath.Join(base, e.Name()), pid, o)...)
		}
	}
	return out, nil
}

// cleanSession removes the cgroups under dir, deepest first.
func cleanSession(dir string, pid int, o CleanupOptions) []Leftover {
	var dirs []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	slices.Reverse(dirs) // children after their parent in a walk: deepest first now
	var out []Leftover
	busy := map[string]bool{} // directories that must stay because a child stays
	for _, d := range dirs {
		l := Leftover{Dir: d, Session: pid}
		l.Pids, _ = readPids(d)
		switch {
		case len(l.Pids) > 0:
		case busy[d]:
			l.Err = errors.New("a cgroup below it is kept")
		case !o.DryRun:
			if err := o.Ops.Rmdir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
				l.Err = err
			}
		}
		if !l.Removed() {
			for p := filepath.Dir(d); p != filepath.Dir(dir); p = filepath.Dir(p) {
				busy[p] = true
			}
		}
		out = append(out, l)
	}
	return out
}

// hierarchies lists each mounted hierarchy once.
func (l Layout) hierarchies() []string {
	var hs []string
	if l.Unified != "" {
		hs = append(hs, l.Unified)
	}
	for _, h := range l.V1 {
		if !slices.Contains(hs, h) {
			hs = append(hs, h)
		}
	}
	slices.Sort(hs)
	return hs
}
