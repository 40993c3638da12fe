package cgroup

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"time"
)

// CPUPeriod is the CPU quota period of every limited cgroup (docs/experiments.md
// section 1: 10 ms), so 0.25 CPU is 2.5 ms of CPU time per 10 ms.
const CPUPeriod = 10 * time.Millisecond

// minQuota is the smallest CPU quota the kernel accepts (1 ms).
const minQuota = time.Millisecond

// Limits are one cgroup's resource limits. Swap is limited to none where
// the kernel accounts swap in cgroups (see SwapEnforcement).
type Limits struct {
	CPUCores    float64 // 0 means no CPU limit
	MemoryBytes int64   // 0 means no memory limit
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

// applyCPUv1 sets the CFS period, then the quota (the order the kernel
// needs when the quota shrinks below an old period).
func applyCPUv1(dir string, l Limits) error {
	if l.CPUCores == 0 {
		return nil
	}
	if err := writeFile(filepath.Join(dir, "cpu.cfs_period_us"), micros(CPUPeriod)); err != nil {
		return writeError(err)
	}
	return writeError(writeFile(filepath.Join(dir, "cpu.cfs_quota_us"), micros(l.quota())))
}

// applyMemoryV1 sets the memory limit and, where the kernel accounts swap
// (memory.memsw.*, swapaccount=1), memory+swap to the same value: no swap.
// memsw must never be below the memory limit, so it is written second.
func applyMemoryV1(dir string, l Limits) error {
	if l.MemoryBytes == 0 {
		return nil
	}
	v := strconv.FormatInt(l.MemoryBytes, 10)
	if err := writeFile(filepath.Join(dir, "memory.limit_in_bytes"), v); err != nil {
		return writeError(err)
	}
	if memsw := filepath.Join(dir, "memory.memsw.limit_in_bytes"); isFile(memsw) {
		return writeError(writeFile(memsw, v))
	}
	return nil
}

// applyCPUv2 writes cpu.max as "QUOTA PERIOD" in microseconds.
func applyCPUv2(dir string, l Limits) error {
	if l.CPUCores == 0 {
		return nil
	}
	return writeError(writeFile(filepath.Join(dir, "cpu.max"), micros(l.quota())+" "+micros(CPUPeriod)))
}

// applyMemoryV2 writes memory.max (when limited) and, where the kernel has
// swap accounting, memory.swap.max 0; without it swap is not limited
// (SwapEnforcement says so for the record).
func applyMemoryV2(dir string, l Limits) error {
	if l.MemoryBytes > 0 {
		if err := writeFile(filepath.Join(dir, "memory.max"), strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return writeError(err)
		}
	}
	if swap := filepath.Join(dir, "memory.swap.max"); isFile(swap) {
		return writeError(writeFile(swap, "0"))
	}
	return nil
}

// micros formats d in whole microseconds, the unit of the CPU files.
func micros(d time.Duration) string {
	return strconv.FormatInt(d.Microseconds(), 10)
}
