package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/slowlab/slowlab/cgroup"
)

// This file is the stack's side of cgroups: where each run's components'
// cgroups are and how the exporter selects them.

// root is the cgroup mount root the stack creates its cgroups under.
func (s Stack) root() string {
	if s.CgroupRoot != "" {
		return s.CgroupRoot
	}
	return cgroup.DefaultRoot
}

// cgroup creates role's cgroup of the run, if the stack uses cgroups,
// with role's memory limit and no CPU quota yet: limitCPU sets that once
// the component is ready. Starting is not part of any measurement, and
// under a quarter of a CPU on a busy host an interpreter's imports alone
// can take longer than a component is given to start (Gunicorn sync-2
// was throttled 838 periods before it was ready at 0.25 CPU here); the
// memory limit holds from the first instruction, so a component too big
// for it still fails to start.
func (s Stack) cgroup(r *Running, d Deployment, role string) (*cgroup.Cgroup, error) {
	if !s.Cgroups {
		return nil, nil
	}
	if err := s.Limits[role].Validate(); err != nil {
		return nil, fmt.Errorf("%s cgroup: %w", role, err)
	}
	cg, err := cgroup.New(s.root(), CgroupName(d.RunID, role), cgroup.Limits{MemoryBytes: s.Limits[role].MemoryBytes})
	if err != nil {
		return nil, fmt.Errorf("%s cgroup: %w", role, err)
	}
	r.cgroups[role] = cg
	return cg, nil
}

// limitCPU sets role's CPU quota on its cgroup, once the component in it
// is ready (see cgroup).
func (s Stack) limitCPU(cg *cgroup.Cgroup, role string) error {
	if cg == nil || s.Limits[role].CPUCores == 0 {
		return nil
	}
	if err := cg.LimitCPU(s.Limits[role].CPUCores); err != nil {
		return fmt.Errorf("%s cgroup: %w", role, err)
	}
	return nil
}

// CgroupName is where role's cgroup of a run is, below the mount root:
// slowlab/<pid>/<run-id>/<role>. The pid of this process keeps two
// sessions on one host apart (run ids repeat from session to session; a
// shared cgroup would mix their counters or fail the second one's run).
func CgroupName(runID, role string) string {
	return filepath.Join("slowlab", strconv.Itoa(os.Getpid()), runID, role)
}

// CgroupsUsable reports whether this process can create cgroups under
// root (cgroup.DefaultRoot when empty): as root, with a cgroup hierarchy
// mounted.
func CgroupsUsable(root string) bool {
	if os.Geteuid() != 0 {
		return false
	}
	if root == "" {
		root = cgroup.DefaultRoot
	}
	_, err := cgroup.Detect(root)
	return err == nil
}

// selector is the exporter's selector of a component: its cgroup, else
// its process tree.
func selector(cg *cgroup.Cgroup, c Started) []string {
	if cg != nil {
		return []string{"cgroup:" + cg.Path()}
	}
	return []string{"tree:" + strconv.Itoa(c.Process().PID())}
}
