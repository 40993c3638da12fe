package lab

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// selfLimit puts the lab's own process, which is the load generator and the
// controller, into a limited cgroup for one run, and back where it was
// afterwards, as EXPERIMENTS.md limits the load generator too.
type selfLimit struct {
	cg   *Cgroup
	back []string // the cgroup.procs files the process came from
}

// limitSelf creates cgroup name with l and moves this process into it.
func limitSelf(root, name string, l Limits) (*selfLimit, error) {
	s, err := prepareSelfLimit(root, name, l)
	if err != nil {
		return nil, err
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	return s, nil
}

// enter moves this process into the cgroup; on failure the cgroup is removed.
func (s *selfLimit) enter() error {
	if err := s.cg.AddProc(os.Getpid()); err != nil {
		s.release()
		return err
	}
	return nil
}

// prepareSelfLimit creates the cgroup and remembers where this process is,
// without moving it yet, so children started before enter stay outside.
func prepareSelfLimit(root, name string, l Limits) (*selfLimit, error) {
	if root == "" {
		root = DefaultCgroupRoot
	}
	orig, err := readSelfCgroups()
	if err != nil {
		return nil, err
	}
	cg, err := NewCgroup(root, name, l)
	if err != nil {
		return nil, err
	}
	s := &selfLimit{cg: cg}
	for _, hier := range cg.roots {
		path, ok := origPath(orig, hier, root)
		if !ok {
			cg.Remove()
			return nil, fmt.Errorf("limit the load generator: no entry for %s in /proc/self/cgroup", hier)
		}
		s.back = append(s.back, filepath.Join(hier, path, "cgroup.procs"))
	}
	return s, nil
}

// release moves the process back and removes the cgroup.
func (s *selfLimit) release() error {
	var errs []error
	for _, f := range s.back {
		if err := writeCgroupFile(f, fmt.Sprint(os.Getpid())); err != nil {
			errs = append(errs, fmt.Errorf("move the load generator back to %s: %w", f, err))
		}
	}
	return errors.Join(append(errs, s.cg.Remove())...)
}

// readSelfCgroups parses /proc/self/cgroup: "ID:CONTROLLERS:PATH" lines,
// CONTROLLERS empty for the v2 tree.
func readSelfCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
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

// origPath is this process's cgroup path in hierarchy hier: by the v1
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
