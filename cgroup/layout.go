package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultRoot is where the cgroup filesystems are mounted.
const DefaultRoot = "/sys/fs/cgroup"

// Mode is which cgroup hierarchies are mounted under a root.
type Mode string

// Modes; hybrid is v1 controller hierarchies plus a v2 tree at "unified",
// in which the controllers stay on v1.
const (
	V1     Mode = "v1"
	V2     Mode = "v2"
	Hybrid Mode = "hybrid"
)

// Layout is where each controller's hierarchy is mounted under a root.
type Layout struct {
	Mode    Mode
	Unified string            // the v2 hierarchy; "" if none
	V1      map[string]string // v1 controller -> its hierarchy's directory
}

// Detect tells which hierarchies are mounted under root: v2
// (cgroup.controllers at the root), v1 (a directory per hierarchy with a
// cgroup.procs, possibly co-mounted as "cpu,cpuacct") or hybrid (v1
// hierarchies plus a v2 one at "unified"). A co-mounted hierarchy is
// resolved through its symlinks, so each is one directory whatever name
// reaches it.
func Detect(root string) (Layout, error) {
	if isFile(filepath.Join(root, "cgroup.controllers")) {
		return Layout{Mode: V2, Unified: root}, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return Layout{}, fmt.Errorf("detect cgroups under %s: %w", root, err)
	}
	l := Layout{V1: map[string]string{}}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if e.Name() == "unified" || !isFile(filepath.Join(dir, "cgroup.procs")) {
			continue
		}
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		for _, ctrl := range strings.Split(filepath.Base(dir), ",") {
			l.V1[ctrl] = dir
		}
	}
	if u := filepath.Join(root, "unified"); isFile(filepath.Join(u, "cgroup.controllers")) {
		l.Unified = u
	}
	switch {
	case len(l.V1) > 0 && l.Unified != "":
		l.Mode = Hybrid
	case len(l.V1) > 0:
		l.Mode = V1
	case l.Unified != "":
		l.Mode = V2
	default:
		return Layout{}, fmt.Errorf("detect cgroups: %w under %s", ErrNoHierarchy, root)
	}
	return l, nil
}

// Version tells which cgroup hierarchy is mounted at root, for the
// record: "v2", "v1", "hybrid" or "none".
func Version(root string) string {
	l, err := Detect(root)
	if err != nil {
		return "none"
	}
	return string(l.Mode)
}

// Hierarchy returns the root of the hierarchy that holds controller and
// whether it is v1; "" when no hierarchy has it. On v2 the cpu accounting
// (cpuacct on v1) is in every cgroup's cpu.stat.
func (l Layout) Hierarchy(controller string) (string, bool) {
	if d, ok := l.V1[controller]; ok {
		return d, true
	}
	if l.Unified == "" {
		return "", false
	}
	if controller == "cpuacct" {
		return l.Unified, false
	}
	b, _ := os.ReadFile(filepath.Join(l.Unified, "cgroup.controllers"))
	for _, c := range strings.Fields(string(b)) {
		if c == controller {
			return l.Unified, false
		}
	}
	return "", false
}

// Dir returns the directory of cgroup path in the hierarchy that holds
// controller (the v2 tree when no v1 hierarchy does), and whether that
// hierarchy is v1.
func (l Layout) Dir(controller, path string) (string, bool) {
	if d, ok := l.V1[controller]; ok {
		return filepath.Join(d, path), true
	}
	return filepath.Join(l.Unified, path), false
}

// ProcsDir returns the directory whose cgroup.procs lists the processes of
// cgroup path: the first v1 hierarchy that has the cgroup, else v2.
func (l Layout) ProcsDir(path string) string {
	for _, ctrl := range []string{"cpu", "cpuacct", "memory", "pids", "systemd", "name=systemd"} {
		if d, ok := l.V1[ctrl]; ok && isFile(filepath.Join(d, path)) {
			return filepath.Join(d, path)
		}
	}
	if l.Unified == "" {
		return filepath.Join(l.V1["cpu"], path) // reported as missing
	}
	return filepath.Join(l.Unified, path)
}

func isFile(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
