package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Self puts this process into a limited cgroup, and back where it was
// afterwards, for an experiment whose load generator runs in-process (the
// published conditions limit the load generator too); one whose load
// generator is a child uses only the cgroup. Moving a process does not
// move what it had already charged elsewhere (v1): the limit then bounds
// only the memory it touches afterwards.
//
// A process is in one cgroup at a time: of two runs in one process (tests
// in parallel), the second's Enter waits until the first's Release, and
// each remembers where the process was when it entered, so the process
// always goes back home and every cgroup can be removed. (Remembering it
// at PrepareSelf, a run prepared while another was entered went "back"
// into the other's removed cgroup and stayed in its own, limited, for the
// rest of the process.)
type Self struct {
	cg      *Cgroup
	root    string
	back    []string // the cgroup.procs files the process came from
	entered bool
}

// selfMu is held from a Self's Enter to its Release.
var selfMu sync.Mutex

// PrepareSelf creates cgroup name with l under root (DefaultRoot when
// empty), without moving this process yet, so children started before
// Enter stay outside.
func PrepareSelf(root, name string, l Limits) (*Self, error) {
	if root == "" {
		root = DefaultRoot
	}
	cg, err := New(root, name, l)
	if err != nil {
		return nil, err
	}
	return &Self{cg: cg, root: root}, nil
}

// Cgroup is the cgroup the process enters.
func (s *Self) Cgroup() *Cgroup { return s.cg }

// Enter moves this process into the cgroup, once no other Self of the
// process is entered; on failure the cgroup is removed.
func (s *Self) Enter() error {
	selfMu.Lock()
	s.entered = true
	orig, err := readSelf("/proc/self/cgroup")
	if err == nil {
		for _, hier := range s.cg.roots {
			path, ok := origPath(orig, hier, s.root)
			if !ok {
				err = fmt.Errorf("no entry for %s in /proc/self/cgroup", hier)
				break
			}
			s.back = append(s.back, filepath.Join(hier, path, "cgroup.procs"))
		}
	}
	if err == nil {
		err = s.cg.AddProc(os.Getpid())
	}
	if err != nil {
		s.Release()
		return err
	}
	return nil
}

// Release moves the process back where it was at Enter and removes the
// cgroup. A process started while this one was entered inherited the
// cgroup (a fork lands in its parent's cgroup; v1 has no way to start one
// elsewhere): it goes back too, so the cgroup can be removed. Only a
// process that ran here meanwhile can be in it: the cgroup is this run's
// own. (Left in, it kept the cgroup from being removed: the run cgroups
// TestExamplesRun's parallel experiments left behind, one's exporter
// started while another's run had the process entered.)
func (s *Self) Release() error {
	var errs []error
	if s.entered {
		for i, f := range s.back {
			if err := writeFile(f, fmt.Sprint(os.Getpid())); err != nil {
				errs = append(errs, fmt.Errorf("move back to %s: %w", f, err))
				continue
			}
			pids, _ := readPids(s.cg.dirs[i])
			for _, pid := range pids {
				// A process that exits meanwhile cannot be moved, and
				// need not be (ESRCH).
				if err := writeFile(f, fmt.Sprint(pid)); err != nil && !errors.Is(err, syscall.ESRCH) {
					errs = append(errs, fmt.Errorf("move started process %d back to %s: %w", pid, f, err))
				}
			}
		}
		s.entered, s.back = false, nil
		selfMu.Unlock()
	}
	return errors.Join(append(errs, s.cg.Remove())...)
}

func readSelf(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseProcCgroup(f)
}

// ParseProcCgroup parses /proc/PID/cgroup: "ID:CONTROLLERS:PATH" lines,
// CONTROLLERS empty for the v2 tree (key "" in the result).
func ParseProcCgroup(r io.Reader) (map[string]string, error) {
	m := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			m[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			m[c] = parts[2]
		}
	}
	return m, sc.Err()
}

// origPath is the process's cgroup path in hierarchy hier: by the v1
// hierarchy's controller names, or the v2 entry for the unified tree.
func origPath(orig map[string]string, hier, root string) (string, bool) {
	base := filepath.Base(hier)
	if hier == root || base == "unified" {
		p, ok := orig[""]
		return p, ok
	}
	for _, c := range strings.Split(base, ",") {
		if p, ok := orig[c]; ok {
			return p, true
		}
	}
	return "", false
}
