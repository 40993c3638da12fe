package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Self puts this process into a limited cgroup, and back where it was
// afterwards, for an experiment whose load generator runs in-process (the
// published conditions limit the load generator too); one whose load
// generator is a child uses only the cgroup. Moving a process does not
// move what it had already charged elsewhere (v1): the limit then bounds
// only the memory it touches afterwards.
type Self struct {
	cg   *Cgroup
	back []string // the cgroup.procs files the process came from
}

// PrepareSelf creates cgroup name with l under root (DefaultRoot when
// empty) and remembers where this process is, without moving it yet, so
// children started before Enter stay outside.
func PrepareSelf(root, name string, l Limits) (*Self, error) {
	if root == "" {
		root = DefaultRoot
	}
	orig, err := readSelf("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	cg, err := New(root, name, l)
	if err != nil {
		return nil, err
	}
	s := &Self{cg: cg}
	for _, hier := range cg.roots {
		path, ok := origPath(orig, hier, root)
		if !ok {
			cg.Remove()
			return nil, fmt.Errorf("no entry for %s in /proc/self/cgroup", hier)
		}
		s.back = append(s.back, filepath.Join(hier, path, "cgroup.procs"))
	}
	return s, nil
}

// Cgroup is the cgroup the process enters.
func (s *Self) Cgroup() *Cgroup { return s.cg }

// Enter moves this process into the cgroup; on failure the cgroup is removed.
func (s *Self) Enter() error {
	if err := s.cg.AddProc(os.Getpid()); err != nil {
		s.Release()
		return err
	}
	return nil
}

// Release moves the process back and removes the cgroup.
func (s *Self) Release() error {
	var errs []error
	for _, f := range s.back {
		if err := writeFile(f, fmt.Sprint(os.Getpid())); err != nil {
			errs = append(errs, fmt.Errorf("move back to %s: %w", f, err))
		}
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
