package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoHierarchy is wrapped by Detect's error when the root has no cgroup
// filesystem mounted.
var ErrNoHierarchy = errors.New("no cgroup v1 or v2 hierarchy")

// ErrUnavailable is wrapped by errors that come from the cgroup filesystem
// refusing to be written: not root, or mounted read-only.
var ErrUnavailable = errors.New("cgroups cannot be written here (they need root and a writable cgroup filesystem); --no-limits runs without limits")

// Cgroup is a cgroup slowlab created, at the same path below every
// hierarchy it needs (cpu, cpuacct and memory on v1; the one tree on v2),
// so the exporter's cgroup:PATH selector finds usage and limits.
type Cgroup struct {
	name    string            // path below each hierarchy root
	dirs    []string          // the cgroup in each hierarchy
	roots   []string          // the hierarchy of each dir
	ctrl    map[string]string // controller (cpu, cpuacct, memory) -> the cgroup's dir
	created []string          // directories New made, parents first
	ops     Ops
	layout  Layout
	removed bool
}

// Ops are the filesystem calls that differ between a real cgroup
// filesystem (where mkdir creates the interface files and rmdir removes a
// directory full of them) and a fixture tree. Tests give their own.
type Ops struct {
	Mkdir func(dir string) error
	Rmdir func(dir string) error
}

// KernelOps are the calls for a real cgroup filesystem.
var KernelOps = Ops{
	Mkdir: func(dir string) error { return os.Mkdir(dir, 0o755) },
	Rmdir: syscall.Rmdir,
}

// New creates the cgroup name (a relative path such as slowlab/<run>/app,
// parents created as needed) under the hierarchies mounted at root and
// applies l: CPU quota per CPUPeriod, memory limit, no swap where the
// kernel accounts it. A leftover empty cgroup of the same name is
// replaced; one that still has processes is an error. On error nothing it
// created is left behind.
func New(root, name string, l Limits) (*Cgroup, error) {
	return NewWithOps(root, name, l, KernelOps)
}

// NewWithOps is New with the filesystem calls given, for fixture trees.
func NewWithOps(root, name string, l Limits, ops Ops) (*Cgroup, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", name, err)
	}
	clean := filepath.Clean(name)
	if name == "" || filepath.IsAbs(name) || clean != name || clean == "." || strings.HasPrefix(clean, "..") {
		return nil, fmt.Errorf("cgroup name %q: want a clean relative path such as slowlab/run/app", name)
	}
	layout, err := Detect(root)
	if err != nil {
		return nil, err
	}
	cg := &Cgroup{name: name, ops: ops, ctrl: map[string]string{}, layout: layout}
	for _, ctrl := range []string{"cpu", "cpuacct", "memory"} {
		h, _ := layout.Hierarchy(ctrl)
		if h == "" {
			if ctrl == "cpuacct" {
				continue // only accounting; the exporter reports what it finds
			}
			return nil, fmt.Errorf("cgroup %s: no hierarchy under %s has the %s controller (%s mode)", name, root, ctrl, layout.Mode)
		}
		cg.ctrl[ctrl] = filepath.Join(h, name)
		if !slices.Contains(cg.roots, h) {
			cg.roots = append(cg.roots, h)
			cg.dirs = append(cg.dirs, filepath.Join(h, name))
		}
	}
	err = cg.create(layout)
	if err == nil {
		err = cg.apply(layout, l)
	}
	if err != nil {
		cg.undo()
		return nil, err
	}
	return cg, nil
}

// undo removes what a failed New created, deepest first, and nothing
// else: a cgroup that existed before is not ours.
func (cg *Cgroup) undo() {
	for i := len(cg.created) - 1; i >= 0; i-- {
		cg.ops.Rmdir(cg.created[i])
	}
	cg.removed = true
}

// create makes the cgroup's directory in every hierarchy, with its parents.
func (cg *Cgroup) create(layout Layout) error {
	for i, dir := range cg.dirs {
		v2 := cg.roots[i] == layout.Unified
		parts := strings.Split(cg.name, string(filepath.Separator))
		for j := range parts {
			d := filepath.Join(cg.roots[i], filepath.Join(parts[:j+1]...))
			if v2 {
				// A v2 cgroup has a controller's files only if its
				// parent enables the controller for its children.
				if err := enableControllers(filepath.Dir(d), filepath.Dir(d) == cg.roots[i]); err != nil {
					return fmt.Errorf("cgroup %s: %w", cg.name, err)
				}
			}
			err := cg.ops.Mkdir(d)
			if errors.Is(err, os.ErrExist) && d == dir {
				err = cg.replaceStale(d)
			}
			if err == nil {
				cg.created = append(cg.created, d)
			} else if !errors.Is(err, os.ErrExist) {
				return writeError(fmt.Errorf("create cgroup %s: %w", d, err))
			}
		}
	}
	return nil
}

// replaceStale removes an empty cgroup left by an earlier run with the same
// name, so that its counters (CPU usage, memory peak) start from zero, and
// creates it again.
func (cg *Cgroup) replaceStale(dir string) error {
	if pids, _ := readPids(dir); len(pids) > 0 {
		return fmt.Errorf("cgroup %s exists and holds processes %v: another run is using it", dir, pids)
	}
	if err := cg.ops.Rmdir(dir); err != nil {
		return fmt.Errorf("cgroup %s exists and cannot be removed: %w", dir, err)
	}
	return cg.ops.Mkdir(dir)
}

// apply writes the limits in every hierarchy that holds their controller.
func (cg *Cgroup) apply(layout Layout, l Limits) error {
	for _, ctrl := range []string{"cpu", "memory"} {
		_, v1 := layout.Hierarchy(ctrl)
		dir := cg.ctrl[ctrl]
		var err error
		switch {
		case ctrl == "cpu" && v1:
			err = applyCPUv1(dir, l)
		case ctrl == "cpu":
			err = applyCPUv2(dir, l)
		case v1:
			err = applyMemoryV1(dir, l)
		default:
			err = applyMemoryV2(dir, l)
		}
		if err != nil {
			return fmt.Errorf("cgroup %s: limit %s: %w", cg.name, l, err)
		}
	}
	return nil
}

// LimitCPU sets the cgroup's CPU quota to cores per CPUPeriod (0 lifts
// it), whatever it was: the stack starts a component without a quota and
// limits it once it is ready, so that how long an interpreter takes to
// import its modules under a fraction of a CPU on a busy host is not what
// decides whether the component starts at all.
func (cg *Cgroup) LimitCPU(cores float64) error {
	l := Limits{CPUCores: cores}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("cgroup %s: %w", cg.name, err)
	}
	dir := cg.ctrl["cpu"]
	var err error
	_, v1 := cg.layout.Hierarchy("cpu")
	switch {
	case v1 && cores == 0:
		err = writeError(writeFile(filepath.Join(dir, "cpu.cfs_quota_us"), "-1"))
	case v1:
		err = applyCPUv1(dir, l)
	case cores == 0:
		err = writeError(writeFile(filepath.Join(dir, "cpu.max"), "max "+micros(CPUPeriod)))
	default:
		err = applyCPUv2(dir, l)
	}
	if err != nil {
		return fmt.Errorf("cgroup %s: limit CPU to %v cores: %w", cg.name, cores, err)
	}
	return nil
}

// Path is the cgroup's path below every hierarchy root: the exporter's
// cgroup:PATH selector.
func (cg *Cgroup) Path() string { return cg.name }

// Dirs are the cgroup's directories, one per hierarchy.
func (cg *Cgroup) Dirs() []string { return slices.Clone(cg.dirs) }

// ControllerDir is the cgroup's directory in the hierarchy of controller
// (cpu, cpuacct, memory), "" when none has it.
func (cg *Cgroup) ControllerDir(controller string) string { return cg.ctrl[controller] }

// ProcsFiles are the cgroup.procs files a process must be written to, one
// per hierarchy, to be in the cgroup.
func (cg *Cgroup) ProcsFiles() []string {
	files := make([]string, len(cg.dirs))
	for i, d := range cg.dirs {
		files[i] = filepath.Join(d, "cgroup.procs")
	}
	return files
}

// Pids lists the processes in the cgroup (from its first hierarchy).
func (cg *Cgroup) Pids() ([]int, error) { return readPids(cg.dirs[0]) }

// AddProc moves process pid (all its threads) into the cgroup in every
// hierarchy. Processes it forks later inherit the cgroup; ones it forked
// before stay where they were, so prefer starting children with ExecArgv.
func (cg *Cgroup) AddProc(pid int) error {
	for _, f := range cg.ProcsFiles() {
		if err := writeFile(f, strconv.Itoa(pid)); err != nil {
			return writeError(fmt.Errorf("add process %d to cgroup %s: %w", pid, cg.name, err))
		}
	}
	return nil
}

// removeWait is how long Remove waits for exiting processes to leave (a
// test of the fake kernel's shortens it).
var removeWait = 2 * time.Second

// Remove deletes the cgroup in every hierarchy, then the parents it can
// (empty ones, such as slowlab/<run-id> once its last component is gone).
// It waits briefly for processes that are exiting to leave, but never
// kills or moves any: stop the processes first. Safe to call again.
func (cg *Cgroup) Remove() error {
	if cg.removed {
		return nil
	}
	var errs []error
	deadline := time.Now().Add(removeWait)
	for _, dir := range cg.dirs {
		for {
			pids, err := readPids(dir)
			if err != nil || len(pids) == 0 {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: processes %v are still in it", dir, pids))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := cg.rmdirRetry(dir, deadline); err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, h := range cg.roots {
		for p := filepath.Dir(cg.name); p != "." && p != "/"; p = filepath.Dir(p) {
			if cg.ops.Rmdir(filepath.Join(h, p)) != nil {
				break // still used by a sibling, or not ours to remove
			}
		}
	}
	cg.removed = true
	return nil
}

// rmdirRetry removes dir, retrying while the kernel reports it busy (a
// process that just exited can take a moment to leave).
func (cg *Cgroup) rmdirRetry(dir string, deadline time.Time) error {
	for {
		err := cg.ops.Rmdir(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readPids reads the processes listed in dir/cgroup.procs.
func readPids(dir string) ([]int, error) {
	return readValue(filepath.Join(dir, "cgroup.procs"), ParsePids)
}

// writeFile writes one value to an existing cgroup interface file (never
// creating one: a missing file is a missing controller).
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

// writeError marks permission and read-only errors as ErrUnavailable, so
// the message says what to do about them.
func writeError(err error) error {
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("%w: %w", err, ErrUnavailable)
	}
	return err
}

// v2Controllers are the controllers a v2 cgroup of slowlab needs: cpu for
// cpu.max and throttling counts, memory for memory.max and usage.
var v2Controllers = []string{"cpu", "memory"}

// enableControllers makes sure the v2 cgroup dir enables v2Controllers for
// its children. The hierarchy root is only checked: enabling controllers
// there is the system's business, so a root without them is an error.
func enableControllers(dir string, isRoot bool) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return writeError(err)
	}
	enabled := strings.Fields(string(b))
	var missing []string
	for _, c := range v2Controllers {
		if !slices.Contains(enabled, c) {
			missing = append(missing, "+"+c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if isRoot {
		return fmt.Errorf("%s enables %q for child cgroups, want %s", filepath.Join(dir, "cgroup.subtree_control"),
			strings.TrimSpace(string(b)), strings.Join(v2Controllers, " and "))
	}
	return writeError(writeFile(filepath.Join(dir, "cgroup.subtree_control"), strings.Join(missing, " ")))
}
