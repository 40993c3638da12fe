package cgroup

import (
	"fmt"
	"path/filepath"
)

// v1UnlimitedBytes: memory.limit_in_bytes reads as about 2^63
// (PAGE_COUNTER_MAX pages) when no limit is set; nothing real is this large.
const v1UnlimitedBytes = 1 << 62

// readCPUv1 reads usage from the cpuacct hierarchy and throttling and quota
// from the cpu hierarchy (they may be the same directory).
func readCPUv1(cpuDir, acctDir string, s *Stats) error {
	var errs []error
	if ns, err := readValue(filepath.Join(acctDir, "cpuacct.usage"), parseUint); err == nil {
		s.CPUSeconds = ptr(float64(ns) / 1e9)
	} else {
		errs = append(errs, fmt.Errorf("read cpuacct.usage: %w", err))
	}
	if st, err := readValue(filepath.Join(cpuDir, "cpu.stat"), ParseKeyed); err == nil {
		s.Periods = ptr(float64(st["nr_periods"]))
		s.ThrottledPeriods = ptr(float64(st["nr_throttled"]))
		s.ThrottledSeconds = ptr(float64(st["throttled_time"]) / 1e9)
	} else {
		errs = append(errs, fmt.Errorf("read cpu.stat: %w", err))
	}
	quota, err := readValue(filepath.Join(cpuDir, "cpu.cfs_quota_us"), parseInt)
	if err != nil {
		return joinLine(append(errs, fmt.Errorf("read cpu.cfs_quota_us: %w", err))...)
	}
	if quota > 0 {
		period, err := readValue(filepath.Join(cpuDir, "cpu.cfs_period_us"), parseUint)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("read cpu.cfs_period_us: %w", err))
		case period == 0:
			errs = append(errs, fmt.Errorf("read cpu.cfs_period_us: period is 0"))
		default:
			s.LimitCores = ptr(float64(quota) / float64(period))
		}
	}
	return joinLine(errs...)
}

// readMemoryV1 reads usage, peak (max_usage_in_bytes) and limit.
func readMemoryV1(dir string, s *Stats) error {
	var errs []error
	if v, err := readValue(filepath.Join(dir, "memory.usage_in_bytes"), parseUint); err == nil {
		s.MemoryBytes = ptr(float64(v))
	} else {
		errs = append(errs, fmt.Errorf("read memory.usage_in_bytes: %w", err))
	}
	if v, err := readValue(filepath.Join(dir, "memory.max_usage_in_bytes"), parseUint); err == nil {
		s.MemoryPeakBytes = ptr(float64(v))
	} else if !missing(err) {
		errs = append(errs, fmt.Errorf("read memory.max_usage_in_bytes: %w", err))
	}
	if v, err := readValue(filepath.Join(dir, "memory.limit_in_bytes"), parseUint); err == nil {
		if v < v1UnlimitedBytes {
			s.MemoryLimitBytes = ptr(float64(v))
		}
	} else {
		errs = append(errs, fmt.Errorf("read memory.limit_in_bytes: %w", err))
	}
	return joinLine(errs...)
}
