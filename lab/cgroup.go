package lab

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CgroupMode is which cgroup hierarchies are mounted under a root.
type CgroupMode string

// Cgroup modes; hybrid is v1 controller hierarchies plus a v2 tree at
// "unified", in which the controllers stay on v1.
const (
	CgroupV1     CgroupMode = "v1"
	CgroupV2     CgroupMode = "v2"
	CgroupHybrid CgroupMode = "hybrid"
)

// DefaultCgroupRoot is where the cgroup filesystems are mounted.
const DefaultCgroupRoot = "/sys/fs/cgroup"

// CPUPeriod is the CPU quota period of every limited cgroup (EXPERIMENTS.md
// section 1: 10 ms), so 0.25 CPU is 2.5 ms of CPU time per 10 ms.
const CPUPeriod = 10 * time.Millisecond

// minQuota is the smallest CPU quota the kernel accepts (1 ms).
const minQuota = time.Millisecond

// ErrCgroupsUnavailable is wrapped by errors that come from the cgroup
// filesystem refusing to be written: not root, or mounted read-only.
var ErrCgroupsUnavailable = errors.New("cgroups cannot be written here (they need root and a writable cgroup filesystem); --no-limits runs without limits")

// Limits are one component's resource limits. Swap is never allowed.
type Limits struct {
	CPUCores    float64 // 0 means no CPU limit
	MemoryBytes int64   // 0 means no memory limit
}

// DefaultLimits returns the limits of EXPERIMENTS.md section 1 by component:
// app 0.25 CPU / 128 MiB, proxy 0.20 CPU / 96 MiB, loadgen (with the
// controller) 0.20 CPU / 128 MiB.
func DefaultLimits() map[string]Limits {
	return map[string]Limits{
		"app":     {CPUCores: 0.25, MemoryBytes: 128 << 20},
		"proxy":   {CPUCores: 0.20, MemoryBytes: 96 << 20},
		"loadgen": {CPUCores: 0.20, MemoryBytes: 128 << 20},
	}
}

// Validate reports a limit the kernel would refuse or that makes no sense.
func (l Limits) Validate() error {
	switch {
	case math.IsNaN(l.CPUCores) || math.IsInf(l.CPUCores, 0) || l.CPUCores < 0:
		return fmt.Errorf("CPU limit %v cores: must be 0 (unlimited) or a positive number", l.CPUCores)
	case l.CPUCores > 0 && l.quota() < minQuota:
		return fmt.Errorf("CPU limit %v cores: below the kernel's minimum quota of %s per %s period (%.2f cores)",
			l.CPUCores, minQuota, CPUPeriod, float64(minQuota)/float64(CPUPeriod))
	case l.MemoryBytes < 0:
		return fmt.Errorf("memory limit %d bytes: must be 0 (unlimited) or more", l.MemoryBytes)
	case l.MemoryBytes > 0 && l.MemoryBytes < 4<<20:
		return fmt.Errorf("memory limit %d bytes: must be at least 4 MiB", l.MemoryBytes)
	}
	return nil
}

// quota is the CPU time allowed per CPUPeriod.
func (l Limits) quota() time.Duration {
	return time.Duration(math.Round(l.CPUCores*float64(CPUPeriod/time.Microsecond))) * time.Microsecond
}

// String is how environment.json and errors show the limits: "0.25 CPU / 128 MiB".
func (l Limits) String() string {
	cpu, mem := "unlimited CPU", "unlimited memory"
	if l.CPUCores > 0 {
		cpu = strconv.FormatFloat(l.CPUCores, 'f', -1, 64) + " CPU"
	}
	if l.MemoryBytes > 0 {
		mem = strconv.FormatFloat(float64(l.MemoryBytes)/(1<<20), 'f', -1, 64) + " MiB"
	}
	return cpu + " / " + mem
}

// cgroupLayout is where each controller a Cgroup needs is mounted. It is
// found from the tree alone (not /proc/mounts) so that fixtures work.
type cgroupLayout struct {
	mode    CgroupMode
	unified string            // the v2 hierarchy; "" if none
	v1      map[string]string // v1 controller -> its hierarchy's directory
}

// DetectCgroups tells which cgroup hierarchies are mounted under root.
func DetectCgroups(root string) (CgroupMode, error) {
	l, err := detectLayout(root)
	return l.mode, err
}

func detectLayout(root string) (cgroupLayout, error) {
	if isFile(filepath.Join(root, "cgroup.controllers")) {
		return cgroupLayout{mode: CgroupV2, unified: root}, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return cgroupLayout{}, fmt.Errorf("detect cgroups under %s: %w", root, err)
	}
	l := cgroupLayout{v1: map[string]string{}}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if e.Name() == "unified" || !isFile(filepath.Join(dir, "cgroup.procs")) {
			continue
		}
		// A co-mounted hierarchy appears as "cpu,cpuacct", usually with
		// "cpu" and "cpuacct" symlinks to it: resolve so each hierarchy
		// is written once.
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		for _, ctrl := range strings.Split(filepath.Base(dir), ",") {
			l.v1[ctrl] = dir
		}
	}
	if u := filepath.Join(root, "unified"); isFile(filepath.Join(u, "cgroup.controllers")) {
		l.unified = u
	}
	switch {
	case len(l.v1) > 0 && l.unified != "":
		l.mode = CgroupHybrid
	case len(l.v1) > 0:
		l.mode = CgroupV1
	case l.unified != "":
		l.mode = CgroupV2
	default:
		return cgroupLayout{}, fmt.Errorf("detect cgroups: no cgroup v1 or v2 hierarchy under %s", root)
	}
	return l, nil
}

// hierarchy returns the root of the hierarchy that holds controller and
// whether it is v1; "" when no hierarchy has it.
func (l cgroupLayout) hierarchy(controller string) (string, bool) {
	if d, ok := l.v1[controller]; ok {
		return d, true
	}
	if l.unified == "" {
		return "", false
	}
	if controller == "cpuacct" { // v2 accounts CPU in cpu.stat of every cgroup
		return l.unified, false
	}
	b, _ := os.ReadFile(filepath.Join(l.unified, "cgroup.controllers"))
	for _, c := range strings.Fields(string(b)) {
		if c == controller {
			return l.unified, false
		}
	}
	return "", false
}

// Cgroup is a cgroup the lab created, at the same path below every
// hierarchy it needs (cpu, cpuacct and memory on v1; the one tree on v2),
// so the exporter's cgroup:PATH selector finds usage and limits.
type Cgroup struct {
	name    string            // path below each hierarchy root
	dirs    []string          // the cgroup in each hierarchy
	roots   []string          // the hierarchy of each dir
	ctrl    map[string]string // controller (cpu, cpuacct, memory) -> the cgroup's dir
	created []string          // directories NewCgroup made, parents first
	ops     cgroupOps
	removed bool
}

// cgroupOps are the filesystem calls that differ between a real cgroup
// filesystem (where mkdir creates the interface files and rmdir removes a
// directory full of them) and a fixture tree.
type cgroupOps struct {
	mkdir func(dir string) error
	rmdir func(dir string) error
}

var kernelCgroupOps = cgroupOps{
	mkdir: func(dir string) error { return os.Mkdir(dir, 0o755) },
	rmdir: syscall.Rmdir,
}

// NewCgroup creates the cgroup name (a relative path such as
// slowlab/<run-id>/app, parents created as needed) under the hierarchies
// mounted at root and applies l: CPU quota per CPUPeriod, memory limit, no
// swap. A leftover empty cgroup of the same name is replaced; one that still
// has processes is an error. On error nothing it created is left behind.
func NewCgroup(root, name string, l Limits) (*Cgroup, error) {
	return newCgroup(root, name, l, kernelCgroupOps)
}

func newCgroup(root, name string, l Limits, ops cgroupOps) (*Cgroup, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", name, err)
	}
	clean := filepath.Clean(name)
	if name == "" || filepath.IsAbs(name) || clean != name || clean == "." || strings.HasPrefix(clean, "..") {
		return nil, fmt.Errorf("cgroup name %q: want a clean relative path such as slowlab/run/app", name)
	}
	layout, err := detectLayout(root)
	if err != nil {
		return nil, err
	}
	cg := &Cgroup{name: name, ops: ops, ctrl: map[string]string{}}
	seen := map[string]bool{}
	for _, ctrl := range []string{"cpu", "cpuacct", "memory"} {
		h, _ := layout.hierarchy(ctrl)
		if h == "" {
			if ctrl == "cpuacct" {
				continue // only accounting; the exporter reports what it finds
			}
			return nil, fmt.Errorf("cgroup %s: no hierarchy under %s has the %s controller (%s mode)", name, root, ctrl, layout.mode)
		}
		cg.ctrl[ctrl] = filepath.Join(h, name)
		if !seen[h] {
			seen[h] = true
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

// undo removes what a failed NewCgroup created, deepest first, and nothing
// else: a cgroup that existed before is not ours.
func (cg *Cgroup) undo() {
	for i := len(cg.created) - 1; i >= 0; i-- {
		cg.ops.rmdir(cg.created[i])
	}
	cg.removed = true
}

// create makes the cgroup's directory in every hierarchy, with its parents.
func (cg *Cgroup) create(layout cgroupLayout) error {
	for i, dir := range cg.dirs {
		v2 := cg.roots[i] == layout.unified
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
			err := cg.ops.mkdir(d)
			if errors.Is(err, os.ErrExist) && d == dir {
				err = cg.replaceStale(d)
			}
			if err == nil {
				cg.created = append(cg.created, d)
			} else if !errors.Is(err, os.ErrExist) {
				return cgroupWriteError(fmt.Errorf("create cgroup %s: %w", d, err))
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
	if err := cg.ops.rmdir(dir); err != nil {
		return fmt.Errorf("cgroup %s exists and cannot be removed: %w", dir, err)
	}
	return cg.ops.mkdir(dir)
}

// apply writes the limits in every hierarchy that holds their controller.
func (cg *Cgroup) apply(layout cgroupLayout, l Limits) error {
	for _, ctrl := range []string{"cpu", "memory"} {
		_, v1 := layout.hierarchy(ctrl)
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

// Path is the cgroup's path below every hierarchy root: the exporter's
// cgroup:PATH selector.
func (cg *Cgroup) Path() string { return cg.name }

// procsFiles are the cgroup.procs files a process must be written to, one
// per hierarchy, to be in the cgroup.
func (cg *Cgroup) procsFiles() []string {
	files := make([]string, len(cg.dirs))
	for i, d := range cg.dirs {
		files[i] = filepath.Join(d, "cgroup.procs")
	}
	return files
}

// AddProc moves process pid (all its threads) into the cgroup in every
// hierarchy. Processes it forks later inherit the cgroup; ones it forked
// before stay where they were, so prefer starting children with
// cgroupExecArgv.
func (cg *Cgroup) AddProc(pid int) error {
	for _, f := range cg.procsFiles() {
		if err := writeCgroupFile(f, strconv.Itoa(pid)); err != nil {
			return cgroupWriteError(fmt.Errorf("add process %d to cgroup %s: %w", pid, cg.name, err))
		}
	}
	return nil
}

// Remove deletes the cgroup in every hierarchy, then the parents it can
// (empty ones, such as slowlab/<run-id> once its last component is gone).
// It waits briefly for processes that are exiting to leave, but never
// kills or moves any: stop the children first. Safe to call more than once.
func (cg *Cgroup) Remove() error {
	if cg.removed {
		return nil
	}
	var errs []error
	deadline := time.Now().Add(2 * time.Second)
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
			if cg.ops.rmdir(filepath.Join(h, p)) != nil {
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
		err := cg.ops.rmdir(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cgroupExecArgv wraps argv so that the process joins the cgroups whose
// cgroup.procs files are given before it execs argv: a shell writes its own
// PID ($$) to each file, prints the "ready" line startChild waits for, and
// execs argv in the same process. Everything argv forks later (Gunicorn's
// workers) is therefore born inside the cgroups, with no window in which it
// runs unlimited, and this works on v1, where clone3's CLONE_INTO_CGROUP
// does not exist. If a write fails the shell exits 125 before argv runs.
// The readiness line only means the process is in place; callers still
// check that the service answers.
func cgroupExecArgv(procsFiles, argv []string) []string {
	const script = `while [ "$1" != -- ]; do echo $$ >"$1" || exit 125; shift; done; shift; echo "ready pid=$$"; exec "$@"`
	out := []string{"/bin/sh", "-c", script, "slowlab-cgexec"}
	out = append(out, procsFiles...)
	out = append(out, "--")
	return append(out, argv...)
}

// readPids reads the processes listed in dir/cgroup.procs.
func readPids(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// writeCgroupFile writes one value to an existing cgroup interface file
// (never creating one: a missing file is a missing controller).
func writeCgroupFile(path, value string) error {
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

// cgroupWriteError marks permission and read-only errors as
// ErrCgroupsUnavailable, so the message says what to do about them.
func cgroupWriteError(err error) error {
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("%w: %w", err, ErrCgroupsUnavailable)
	}
	return err
}

func isFile(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
