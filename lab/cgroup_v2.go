package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// v2Controllers are the controllers a v2 cgroup of the lab needs: cpu for
// cpu.max and throttling counts, memory for memory.max and usage.
var v2Controllers = []string{"cpu", "memory"}

// enableControllers makes sure the v2 cgroup dir enables v2Controllers for
// its children. The hierarchy root is only checked: enabling controllers
// there is the system's business, so a root without them is an error.
func enableControllers(dir string, isRoot bool) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return cgroupWriteError(err)
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
	return cgroupWriteError(writeCgroupFile(filepath.Join(dir, "cgroup.subtree_control"), strings.Join(missing, " ")))
}

// applyCPUv2 writes cpu.max as "QUOTA PERIOD" in microseconds.
func applyCPUv2(dir string, l Limits) error {
	if l.CPUCores == 0 {
		return nil
	}
	return cgroupWriteError(writeCgroupFile(filepath.Join(dir, "cpu.max"), micros(l.quota())+" "+micros(CPUPeriod)))
}

// applyMemoryV2 writes memory.max (when limited) and, where the kernel has
// swap accounting, memory.swap.max 0: no swap either way.
func applyMemoryV2(dir string, l Limits) error {
	if l.MemoryBytes > 0 {
		if err := writeCgroupFile(filepath.Join(dir, "memory.max"), strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return cgroupWriteError(err)
		}
	}
	if swap := filepath.Join(dir, "memory.swap.max"); isFile(swap) {
		return cgroupWriteError(writeCgroupFile(swap, "0"))
	}
	return nil
}

// micros formats d in whole microseconds, the unit of the CPU files.
func micros(d time.Duration) string {
	return strconv.FormatInt(d.Microseconds(), 10)
}
