package cgroup

import (
	"fmt"
	"path/filepath"
)

// readCPUv2 reads cpu.stat and cpu.max. Without the cpu controller enabled
// for the cgroup, cpu.stat has usage only and cpu.max is missing:
// throttling then reads as zero (it cannot happen) and there is no limit.
func readCPUv2(dir string, s *Stats) error {
	st, err := readValue(filepath.Join(dir, "cpu.stat"), ParseKeyed)
	if err != nil {
		return fmt.Errorf("read cpu.stat: %w", err)
	}
	var errs []error
	if usec, ok := st["usage_usec"]; ok {
		s.CPUSeconds = ptr(float64(usec) / 1e6)
	} else {
		errs = append(errs, fmt.Errorf("read cpu.stat: no usage_usec"))
	}
	s.Periods = ptr(float64(st["nr_periods"]))
	s.ThrottledPeriods = ptr(float64(st["nr_throttled"]))
	s.ThrottledSeconds = ptr(float64(st["throttled_usec"]) / 1e6)
	m, err := readValue(filepath.Join(dir, "cpu.max"), parseCPUMax)
	switch {
	case err == nil && !m.unlimited:
		s.LimitCores = ptr(float64(m.quota) / float64(m.period))
	case err != nil && !missing(err):
		errs = append(errs, fmt.Errorf("read cpu.max: %w", err))
	}
	return joinLine(errs...)
}

// readMemoryV2 reads memory.current, memory.peak (Linux 5.19 and later;
// absent before) and memory.max.
func readMemoryV2(dir string, s *Stats) error {
	var errs []error
	if v, err := readValue(filepath.Join(dir, "memory.current"), parseUint); err == nil {
		s.MemoryBytes = ptr(float64(v))
	} else {
		errs = append(errs, fmt.Errorf("read memory.current: %w", err))
	}
	if v, err := readValue(filepath.Join(dir, "memory.peak"), parseUint); err == nil {
		s.MemoryPeakBytes = ptr(float64(v))
	} else if !missing(err) {
		errs = append(errs, fmt.Errorf("read memory.peak: %w", err))
	}
	m, err := readValue(filepath.Join(dir, "memory.max"), parseMax)
	switch {
	case err == nil && !m.unlimited:
		s.MemoryLimitBytes = ptr(float64(m.value))
	case err != nil && !missing(err):
		errs = append(errs, fmt.Errorf("read memory.max: %w", err))
	}
	return joinLine(errs...)
}
