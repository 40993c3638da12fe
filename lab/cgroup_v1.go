package lab

import (
	"path/filepath"
	"strconv"
)

// applyCPUv1 sets the CFS period, then the quota (the order the kernel
// needs when the quota shrinks below an old period).
func applyCPUv1(dir string, l Limits) error {
	if l.CPUCores == 0 {
		return nil
	}
	if err := writeCgroupFile(filepath.Join(dir, "cpu.cfs_period_us"), micros(CPUPeriod)); err != nil {
		return cgroupWriteError(err)
	}
	return cgroupWriteError(writeCgroupFile(filepath.Join(dir, "cpu.cfs_quota_us"), micros(l.quota())))
}

// applyMemoryV1 sets the memory limit and, where the kernel accounts swap
// (memory.memsw.*, swapaccount=1), memory+swap to the same value: no swap.
// memsw must never be below the memory limit, so it is written second.
func applyMemoryV1(dir string, l Limits) error {
	if l.MemoryBytes == 0 {
		return nil
	}
	v := strconv.FormatInt(l.MemoryBytes, 10)
	if err := writeCgroupFile(filepath.Join(dir, "memory.limit_in_bytes"), v); err != nil {
		return cgroupWriteError(err)
	}
	if memsw := filepath.Join(dir, "memory.memsw.limit_in_bytes"); isFile(memsw) {
		return cgroupWriteError(writeCgroupFile(memsw, v))
	}
	return nil
}
