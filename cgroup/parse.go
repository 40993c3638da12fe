package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseKeyed parses a flat keyed file ("KEY VALUE" per line) such as
// cpu.stat, on v1 and v2 alike.
func ParseKeyed(r io.Reader) (map[string]uint64, error) {
	m := map[string]uint64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("bad line %q: want KEY VALUE", line)
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad value in line %q: %w", line, err)
		}
		m[fields[0]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// parseUint parses a file holding one unsigned integer.
func parseUint(r io.Reader) (uint64, error) {
	s, err := readSmall(r)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want an unsigned integer: %w", err)
	}
	return v, nil
}

// parseInt parses a file holding one signed integer (cpu.cfs_quota_us is
// -1 when unlimited).
func parseInt(r io.Reader) (int64, error) {
	s, err := readSmall(r)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want an integer: %w", err)
	}
	return v, nil
}

// limit is a parsed v2 limit file; unlimited when the kernel says "max".
type limit struct {
	value     uint64
	unlimited bool
}

// parseMax parses a v2 limit such as memory.max: a number or "max".
func parseMax(r io.Reader) (limit, error) {
	s, err := readSmall(r)
	if err != nil {
		return limit{}, err
	}
	if s == "max" {
		return limit{unlimited: true}, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return limit{}, fmt.Errorf(`want a number or "max": %w`, err)
	}
	return limit{value: v}, nil
}

// cpuMax is a parsed v2 cpu.max.
type cpuMax struct {
	quota     uint64 // microseconds per period; 0 when unlimited
	period    uint64 // microseconds
	unlimited bool
}

// parseCPUMax parses v2 cpu.max: "QUOTA PERIOD" or "max PERIOD".
func parseCPUMax(r io.Reader) (cpuMax, error) {
	s, err := readSmall(r)
	if err != nil {
		return cpuMax{}, err
	}
	fields := strings.Fields(s)
	if len(fields) != 2 {
		return cpuMax{}, fmt.Errorf("bad content %q: want QUOTA|max PERIOD", s)
	}
	period, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil || period == 0 {
		return cpuMax{}, fmt.Errorf("bad period %q", fields[1])
	}
	if fields[0] == "max" {
		return cpuMax{period: period, unlimited: true}, nil
	}
	quota, err := strconv.ParseUint(fields[0], 10, 64)
	if err != nil {
		return cpuMax{}, fmt.Errorf("bad quota %q", fields[0])
	}
	return cpuMax{quota: quota, period: period}, nil
}

// ParsePids parses cgroup.procs: one process id per line.
func ParsePids(r io.Reader) ([]int, error) {
	var pids []int
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.TrimSpace(sc.Text())
		if f == "" {
			continue
		}
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("bad process id %q", f)
		}
		pids = append(pids, pid)
	}
	return pids, sc.Err()
}

// readSmall reads a one-value file, trimmed.
func readSmall(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", errors.New("empty file")
	}
	return s, nil
}
