package cgroup

import (
	"fmt"
	"path/filepath"

	"github.com/prometheus/procfs"
)

// SwapEnforcement says what slowlab's cgroups under root do about swap, as
// environment.json records it: New writes memory+swap (v1) or
// memory.swap.max (v2) only where the kernel accounts swap in cgroups, so
// elsewhere a memory limit can spill into swap if the host has any
// (procRoot's meminfo says).
func SwapEnforcement(root, procRoot string) string {
	host := "the host's swap is unknown"
	if fs, err := procfs.NewFS(procRoot); err == nil {
		if mi, err := fs.Meminfo(); err == nil && mi.SwapTotal != nil {
			host = fmt.Sprintf("the host has %d MiB of swap", *mi.SwapTotal>>10)
			if *mi.SwapTotal == 0 {
				host = "the host has no swap"
			}
		}
	}
	l, err := Detect(root)
	if err != nil {
		return "not limited (no cgroup hierarchy); " + host
	}
	dir, v1 := l.Hierarchy("memory")
	switch {
	case dir == "":
		return "not limited (no memory controller); " + host
	case v1 && isFile(filepath.Join(dir, "memory.memsw.limit_in_bytes")):
		return "none allowed (memory+swap limited to the memory limit); " + host
	case v1:
		return "not limited (the kernel does not account swap in cgroups: no memory.memsw.limit_in_bytes, swapaccount=0); " + host
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*", "memory.swap.max")); len(m) > 0 {
		return "none allowed (memory.swap.max 0); " + host
	}
	return "not limited (the kernel does not account swap in cgroups: no memory.swap.max); " + host
}
