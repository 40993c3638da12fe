package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// ProcPath is the cgroup path (below the mount root, as Layout takes it)
// of process pid, read from procFS/PID/cgroup: its memory controller's on
// v1, the unified tree's on v2.
func (l Layout) ProcPath(procFS string, pid int) (string, error) {
	f, err := os.Open(filepath.Join(procFS, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	m, err := ParseProcCgroup(f)
	if err != nil {
		return "", fmt.Errorf("pid %d: %w", pid, err)
	}
	key := ""
	if _, v1 := l.V1["memory"]; v1 {
		key = "memory"
	}
	p, ok := m[key]
	if !ok {
		return "", fmt.Errorf("pid %d: no %q entry in its cgroup file", pid, key)
	}
	return p, nil
}

// Limits reads the CPU quota and memory limit of cgroup path: what a
// cgroup slowlab did not create holds its processes to. A zero field is
// no limit.
func (l Layout) Limits(path string) (Limits, error) {
	s, err := l.Read(path)
	var out Limits
	if s.LimitCores != nil {
		out.CPUCores = *s.LimitCores
	}
	if s.MemoryLimitBytes != nil {
		out.MemoryBytes = int64(*s.MemoryLimitBytes)
	}
	return out, err
}
