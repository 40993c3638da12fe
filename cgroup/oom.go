package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// ErrNoOOMCount is OOMKills' error where the kernel does not count OOM
// kills per cgroup (oom_kill in memory.oom_control since Linux 4.13 on
// v1, memory.events on v2).
var ErrNoOOMCount = errors.New("the kernel does not count OOM kills for this cgroup")

// OOMKills returns how many processes the kernel killed in the cgroup
// because it reached its memory limit: oom_kill of memory.events (v2) or
// memory.oom_control (v1).
func (cg *Cgroup) OOMKills() (int, error) {
	dir := cg.ControllerDir("memory")
	if dir == "" {
		return 0, fmt.Errorf("cgroup %s: no memory controller: %w", cg.name, ErrNoOOMCount)
	}
	return ReadOOMKills(dir)
}

// ReadOOMKills reads the OOM kill count of the memory cgroup directory dir.
func ReadOOMKills(dir string) (int, error) {
	for _, name := range []string{"memory.events", "memory.oom_control"} {
		m, err := readValue(filepath.Join(dir, name), ParseKeyed)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		n, ok := m["oom_kill"]
		if !ok {
			return 0, fmt.Errorf("%s: no oom_kill: %w", name, ErrNoOOMCount)
		}
		return int(n), nil
	}
	return 0, fmt.Errorf("%s: no memory.events or memory.oom_control: %w", dir, ErrNoOOMCount)
}
