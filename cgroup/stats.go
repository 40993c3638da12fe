package cgroup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Stats are one cgroup's figures; a nil field was not available (a file
// the kernel does not have, or no limit).
type Stats struct {
	CPUSeconds       *float64 // v1 cpuacct.usage, v2 cpu.stat usage_usec
	Periods          *float64 // cpu.stat nr_periods
	ThrottledPeriods *float64 // cpu.stat nr_throttled
	ThrottledSeconds *float64 // v1 throttled_time, v2 throttled_usec
	LimitCores       *float64 // quota / period; nil without a quota
	MemoryBytes      *float64 // v1 memory.usage_in_bytes, v2 memory.current
	MemoryPeakBytes  *float64 // v1 memory.max_usage_in_bytes, v2 memory.peak
	MemoryLimitBytes *float64 // nil when unlimited
	// OOMKills counts the processes the kernel killed for the cgroup's
	// memory limit (oom_kill of v2 memory.events, v1 memory.oom_control);
	// nil where the kernel does not count them.
	OOMKills *float64
}

// Read reads every figure of cgroup path it can; the error lists, on one
// line, what it could not.
func (l Layout) Read(path string) (Stats, error) {
	var s Stats
	var errs []error
	dir, v1 := l.Dir("cpu", path)
	if v1 {
		acct, _ := l.Dir("cpuacct", path)
		errs = append(errs, readCPUv1(dir, acct, &s))
	} else {
		errs = append(errs, readCPUv2(dir, &s))
	}
	if dir, v1 = l.Dir("memory", path); v1 {
		errs = append(errs, readMemoryV1(dir, &s))
	} else {
		errs = append(errs, readMemoryV2(dir, &s))
	}
	if dir != "" {
		if n, err := ReadOOMKills(dir); err == nil {
			s.OOMKills = ptr(float64(n))
		} else if !errors.Is(err, ErrNoOOMCount) {
			errs = append(errs, fmt.Errorf("read OOM kills: %w", err))
		}
	}
	return s, joinLine(errs...)
}

// Pids lists the processes in cgroup path.
func (l Layout) Pids(path string) ([]int, error) {
	return readValue(filepath.Join(l.ProcsDir(path), "cgroup.procs"), ParsePids)
}

// readValue opens file and parses it, naming the file in errors.
func readValue[T any](file string, parse func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(file)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		return v, fmt.Errorf("%s: %w", filepath.Base(file), err)
	}
	return v, nil
}

// missing reports whether err is an optional file that does not exist.
func missing(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func ptr(v float64) *float64 { return &v }

// joinLine joins the non-nil errors on one line (not errors.Join's line
// per error: they end up in a log line), each still wrapped.
func joinLine(errs ...error) error {
	var kept []any
	for _, e := range errs {
		if e != nil {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return fmt.Errorf(strings.Repeat("; %w", len(kept))[2:], kept...)
}

// AddPids adds to pids the processes of cgroup path and of every cgroup
// below it (a pod's containers, a unit's children). A child cgroup
// removed during the walk is skipped.
func (l Layout) AddPids(path string, pids map[int]bool) error {
	dir := l.ProcsDir(path)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("no such cgroup: %w", err)
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if missing(err) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		list, err := readValue(filepath.Join(p, "cgroup.procs"), ParsePids)
		if missing(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, pid := range list {
			pids[pid] = true
		}
		return nil
	})
}
