package exporter

import (
	"fmt"
	"path/filepath"
)

// v1UnlimitedBytes: memory.limit_in_bytes reads as about 2^63 (PAGE_COUNTER_MAX
// pages) when no limit is set; nothing real is this large.
const v1UnlimitedBytes = 1 << 62

// readCPUv1 reads usage from the cpuacct hierarchy and throttling and quota
// from the cpu hierarchy (they may be the same directory).
func readCPUv1(cpuDir, acctDir string, s *cgroupSample) error {
	var errs []error
	if ns, err := readValue(filepath.Join(acctDir, "cpuacct.usage"), parseUint); err == nil {
		s.usage = ptr(float64(ns) / 1e9)
	} else {
		errs = append(errs, fmt.Errorf("read cpuacct.usage: %w", err))
	}
	if st, err := readValue(filepath.Join(cpuDir, "cpu.stat"), parseCPUStat); err == nil {
		s.periods = ptr(float64(st["nr_periods"]))
		s.throttledPeriods = ptr(float64(st["nr_throttled"]))
		s.throttledSeconds = ptr(float64(st["throttled_time"]) / 1e9)
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
			s.limitCores = ptr(float64(quota) / float64(period))
		}
	}
	return joinLine(errs...)
}

// readMemoryV1 reads usage, peak (max_usage_in_bytes) and limit.
func readMemoryV1(dir string, s *cgroupSample) error {
	var errs []error
	if v, err := readValue(filepath.Join(dir, "memory.usage_in_bytes"), parseUint); err == nil {
		s.memUsage = ptr(float64(v))
	} else {
		errs = append(errs, fmt.Errorf("read memory.usage_in_bytes: %w", err))
	}
	if v, err := readValue(filepath.Join(dir, "memory.max_usage_in_bytes"), parseUint); err == nil {
		s.memPeak = ptr(float64(v))
	} else if err = optional(err); err != ErrNoData {
		errs = append(errs, fmt.Errorf("read memory.max_usage_in_bytes: %w", err))
	}
	if v, err := readValue(filepath.Join(dir, "memory.limit_in_bytes"), parseUint); err == nil {
		if v < v1UnlimitedBytes {
			s.memLimit = ptr(float64(v))
		}
	} else {
		errs = append(errs, fmt.Errorf("read memory.limit_in_bytes: %w", err))
	}
	return joinLine(errs...)
}
