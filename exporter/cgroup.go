package exporter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

func init() {
	registerCollector("cgroup", "cgroup v1/v2 CPU usage, quota, throttling and memory of each group's cgroup: selector", true,
		func(env collectorEnv) (Collector, error) {
			return &cgroupCollector{root: env.opts.CgroupFS}, nil
		})
}

var (
	cgroupCPUUsage = prometheus.NewDesc("slowlab_cgroup_cpu_usage_seconds_total",
		"CPU time consumed by the group's cgroup (v1 cpuacct.usage, v2 cpu.stat usage_usec).", []string{"group"}, nil)
	cgroupCPUPeriods = prometheus.NewDesc("slowlab_cgroup_cpu_periods_total",
		"CFS enforcement periods that elapsed while the cgroup had runnable tasks (cpu.stat nr_periods; 0 without a quota).", []string{"group"}, nil)
	cgroupCPUThrottledPeriods = prometheus.NewDesc("slowlab_cgroup_cpu_throttled_periods_total",
		"CFS periods in which the cgroup used up its quota and was throttled (cpu.stat nr_throttled).", []string{"group"}, nil)
	cgroupCPUThrottledSeconds = prometheus.NewDesc("slowlab_cgroup_cpu_throttled_seconds_total",
		"Time the cgroup's tasks were held back by the CPU quota (v1 cpu.stat throttled_time, v2 throttled_usec).", []string{"group"}, nil)
	cgroupCPULimit = prometheus.NewDesc("slowlab_cgroup_cpu_limit_cores",
		"CPU quota divided by period, in cores; absent when the cgroup has no quota.", []string{"group"}, nil)
	cgroupMemUsage = prometheus.NewDesc("slowlab_cgroup_memory_usage_bytes",
		"Memory charged to the cgroup, page cache included (v2 memory.current, v1 memory.usage_in_bytes).", []string{"group"}, nil)
	cgroupMemPeak = prometheus.NewDesc("slowlab_cgroup_memory_peak_bytes",
		"Highest memory usage recorded for the cgroup (v2 memory.peak, v1 memory.max_usage_in_bytes); absent where the kernel lacks it.", []string{"group"}, nil)
	cgroupMemLimit = prometheus.NewDesc("slowlab_cgroup_memory_limit_bytes",
		"Memory limit of the cgroup (v2 memory.max, v1 memory.limit_in_bytes); absent when unlimited.", []string{"group"}, nil)
)

// cgroupCollector reads the cgroup of each group that has a cgroup: selector.
type cgroupCollector struct {
	root string
}

var _ Collector = (*cgroupCollector)(nil)

// cgroupSample holds what could be read; nil means not available.
type cgroupSample struct {
	usage, throttledSeconds, limitCores *float64
	periods, throttledPeriods           *float64
	memUsage, memPeak, memLimit         *float64
}

func (c *cgroupCollector) Update(ctx context.Context, targets []Target, ch chan<- prometheus.Metric) error {
	var (
		layout cgroupLayout
		ready  bool
		errs   partialErrors
	)
	for _, t := range targets {
		if t.Cgroup == "" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
		if !ready {
			var err error
			if layout, err = detectCgroups(c.root); err != nil {
				return err
			}
			ready = true
		}
		s, err := layout.read(t.Cgroup)
		if err != nil {
			errs.add(fmt.Errorf("group %s: cgroup:%s: %w", t.Group, t.Cgroup, err))
		}
		s.send(ch, t.Group)
	}
	return errs.err()
}

func (s cgroupSample) send(ch chan<- prometheus.Metric, group string) {
	emit := func(d *prometheus.Desc, typ prometheus.ValueType, v *float64) {
		if v != nil {
			ch <- prometheus.MustNewConstMetric(d, typ, *v, group)
		}
	}
	emit(cgroupCPUUsage, prometheus.CounterValue, s.usage)
	emit(cgroupCPUPeriods, prometheus.CounterValue, s.periods)
	emit(cgroupCPUThrottledPeriods, prometheus.CounterValue, s.throttledPeriods)
	emit(cgroupCPUThrottledSeconds, prometheus.CounterValue, s.throttledSeconds)
	emit(cgroupCPULimit, prometheus.GaugeValue, s.limitCores)
	emit(cgroupMemUsage, prometheus.GaugeValue, s.memUsage)
	emit(cgroupMemPeak, prometheus.GaugeValue, s.memPeak)
	emit(cgroupMemLimit, prometheus.GaugeValue, s.memLimit)
}

// cgroupLayout says where each controller's hierarchy is mounted. Detection
// looks at the tree only (not /proc/mounts) so that fixtures work.
type cgroupLayout struct {
	version string            // "v1", "v2" or "hybrid"
	unified string            // root of the v2 hierarchy; "" if none
	v1      map[string]string // v1 controller (cpu, memory, ...) -> hierarchy root
}

// detectCgroups finds v2 (cgroup.controllers at the root), v1 (one directory
// per hierarchy, possibly co-mounted as "cpu,cpuacct") or hybrid (v1
// hierarchies plus a v2 one at "unified"). Controllers found in a v1
// hierarchy are read there, all others from the v2 hierarchy.
func detectCgroups(root string) (cgroupLayout, error) {
	if fileExists(filepath.Join(root, "cgroup.controllers")) {
		return cgroupLayout{version: "v2", unified: root}, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return cgroupLayout{}, fmt.Errorf("detect cgroups: %w", err)
	}
	l := cgroupLayout{v1: map[string]string{}}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if e.Name() == "unified" || !fileExists(filepath.Join(dir, "cgroup.procs")) {
			continue
		}
		for _, ctrl := range strings.Split(e.Name(), ",") {
			// "cpu" wins over "cpu,cpuacct" when both exist (one is usually a
			// symlink to the other).
			if _, ok := l.v1[ctrl]; !ok || ctrl == e.Name() {
				l.v1[ctrl] = dir
			}
		}
	}
	if u := filepath.Join(root, "unified"); fileExists(filepath.Join(u, "cgroup.controllers")) {
		l.unified = u
	}
	switch {
	case len(l.v1) > 0 && l.unified != "":
		l.version = "hybrid"
	case len(l.v1) > 0:
		l.version = "v1"
	case l.unified != "":
		l.version = "v2"
	default:
		return cgroupLayout{}, fmt.Errorf("detect cgroups: no cgroup v1 or v2 hierarchy under %s", root)
	}
	return l, nil
}

// controllerDir returns the directory of cgroup path in the hierarchy that
// holds controller, and whether that hierarchy is v1.
func (l cgroupLayout) controllerDir(controller, path string) (string, bool) {
	if d, ok := l.v1[controller]; ok {
		return filepath.Join(d, path), true
	}
	return filepath.Join(l.unified, path), false
}

// procsDir returns the directory whose cgroup.procs lists the cgroup's
// processes: the first v1 hierarchy that has the cgroup, else v2.
func (l cgroupLayout) procsDir(path string) string {
	for _, ctrl := range []string{"cpu", "cpuacct", "memory", "pids", "systemd"} {
		if d, ok := l.v1[ctrl]; ok && fileExists(filepath.Join(d, path)) {
			return filepath.Join(d, path)
		}
	}
	if l.unified == "" {
		return filepath.Join(l.v1["cpu"], path) // reported as missing
	}
	return filepath.Join(l.unified, path)
}

// read reads every cgroup value it can; the error lists what it could not.
func (l cgroupLayout) read(path string) (cgroupSample, error) {
	var s cgroupSample
	var errs []error
	dir, v1 := l.controllerDir("cpu", path)
	if v1 {
		acct, _ := l.controllerDir("cpuacct", path)
		errs = append(errs, readCPUv1(dir, acct, &s))
	} else {
		errs = append(errs, readCPUv2(dir, &s))
	}
	if dir, v1 = l.controllerDir("memory", path); v1 {
		errs = append(errs, readMemoryV1(dir, &s))
	} else {
		errs = append(errs, readMemoryV2(dir, &s))
	}
	return s, joinLine(errs...)
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

// parseCPUStat parses a flat keyed file ("key value" per line) such as
// cpu.stat; it is used for both v1 and v2.
func parseCPUStat(r io.Reader) (map[string]uint64, error) {
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

// parseInt parses a file holding one signed integer (cpu.cfs_quota_us is -1
// when unlimited).
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

// limit is a parsed limit file; unlimited when the kernel says "max".
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

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// optional turns a missing optional file into ErrNoData.
func optional(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return ErrNoData
	}
	return err
}

func ptr(v float64) *float64 { return &v }

// joinLine joins non-nil errors on one line.
func joinLine(errs ...error) error {
	var p partialErrors
	for _, e := range errs {
		p.add(e)
	}
	return p.err()
}
