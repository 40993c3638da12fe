package exporter

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowlab/slowlab/cgroup"
)

func init() {
	registerCollector("cgroup", "cgroup v1/v2 CPU usage, quota, throttling and memory of each group's cgroup: selector", true,
		func(env collectorEnv) (Collector, error) {
			counters := env.opts.Counters
			if counters == nil {
				counters = newCounterState(env.opts.MaxDynamicGroups)
			}
			counters.mu.Lock()
			counters.maxAbsent = env.opts.MaxDynamicGroups
			counters.mu.Unlock()
			return &cgroupCollector{root: env.opts.CgroupFS, counters: counters}, nil
		}, nil)
}

var (
	cgroupCPUUsage = newGroupDesc("slowlab_cgroup_cpu_usage_seconds_total",
		"CPU time consumed by the group's cgroup (v1 cpuacct.usage, v2 cpu.stat usage_usec).")
	cgroupCPUPeriods = newGroupDesc("slowlab_cgroup_cpu_periods_total",
		"CFS enforcement periods that elapsed while the cgroup had runnable tasks (cpu.stat nr_periods; 0 without a quota).")
	cgroupCPUThrottledPeriods = newGroupDesc("slowlab_cgroup_cpu_throttled_periods_total",
		"CFS periods in which the cgroup used up its quota and was throttled (cpu.stat nr_throttled).")
	cgroupCPUThrottledSeconds = newGroupDesc("slowlab_cgroup_cpu_throttled_seconds_total",
		"Time the cgroup's tasks were held back by the CPU quota (v1 cpu.stat throttled_time, v2 throttled_usec).")
	cgroupCPULimit = newGroupDesc("slowlab_cgroup_cpu_limit_cores",
		"CPU quota divided by period, in cores; absent when the cgroup has no quota.")
	cgroupMemUsage = newGroupDesc("slowlab_cgroup_memory_usage_bytes",
		"Memory charged to the cgroup, page cache included (v2 memory.current, v1 memory.usage_in_bytes).")
	cgroupMemPeak = newGroupDesc("slowlab_cgroup_memory_peak_bytes",
		"Highest memory usage recorded for the cgroup (v2 memory.peak, v1 memory.max_usage_in_bytes); absent where the kernel lacks it.")
	cgroupMemLimit = newGroupDesc("slowlab_cgroup_memory_limit_bytes",
		"Memory limit of the cgroup (v2 memory.max, v1 memory.limit_in_bytes); absent when unlimited.")
	cgroupOOMKills = newGroupDesc("slowlab_cgroup_oom_kills_total",
		"Processes the kernel killed because the cgroup reached its memory limit (oom_kill of v2 memory.events, v1 memory.oom_control); absent where the kernel does not count them.")
)

// cgroupCollector reads the cgroup of each group that has a cgroup: selector.
// Its counters go through counters (counters.go), so they never go back
// when the cgroups behind a series change.
type cgroupCollector struct {
	root     string
	counters *Counters
}

var _ Collector = (*cgroupCollector)(nil)

func (c *cgroupCollector) Update(ctx context.Context, targets []Target, ch chan<- prometheus.Metric) error {
	var (
		layout cgroup.Layout
		ready  bool
		errs   partialErrors
	)
	c.counters.mu.Lock()
	defer c.counters.mu.Unlock()
	c.counters.begin()
	defer c.counters.end()
	for _, t := range targets {
		paths := t.Cgroups
		if t.Cgroup != "" {
			paths = []string{t.Cgroup}
		}
		if len(paths) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
		if !ready {
			var err error
			if layout, err = cgroup.Detect(c.root); err != nil {
				return err
			}
			ready = true
		}
		var (
			sum   cgroup.Stats
			reads = c.counters.reads[:0]
		)
		for _, p := range paths {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("cgroup: %w", err) // "other" sums thousands on a big node
			}
			s, err := layout.Read(p)
			if err != nil && t.dynamic() && dynamicGone(layout, p) {
				continue // matched by the walk, removed since: gone, as at the next scrape
			}
			if err != nil {
				errs.add(fmt.Errorf("group %s: cgroup:%s: %w", t.Group, p, err))
			}
			if reads = append(reads, memberRead{p, s}); len(reads) == 1 {
				sum = s
			} else {
				sum = addStats(sum, s)
			}
		}
		c.counters.reads = reads
		if len(reads) > 0 {
			key := dynMatch{name: t.Group, labels: t.Labels}.key()
			send(ch, c.counters.publish(key, reads, sum), t)
		}
	}
	return errs.err()
}

// dynamicGone reports whether a dynamic group's cgroup is missing from a
// hierarchy it is read in: a pod or unit that ended between the scrape's
// walk and its read (or is still being made: systemd and the kubelet make
// and remove a cgroup in one hierarchy after the other). Such a cgroup is
// no failure: it is simply not there.
func dynamicGone(l cgroup.Layout, path string) bool {
	for _, ctrl := range []string{"cpu", "cpuacct", "memory"} {
		dir, _ := l.Dir(ctrl, path)
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// addStats sums what sums over cgroups: CPU time, periods, throttling,
// memory in use and OOM kills. A sum of limits or of peaks is no limit or
// peak of anything, so those are left out.
func addStats(a, b cgroup.Stats) cgroup.Stats {
	add := func(x, y *float64) *float64 {
		switch {
		case x == nil:
			return y
		case y == nil:
			return x
		}
		v := *x + *y
		return &v
	}
	return cgroup.Stats{
		CPUSeconds:       add(a.CPUSeconds, b.CPUSeconds),
		Periods:          add(a.Periods, b.Periods),
		ThrottledPeriods: add(a.ThrottledPeriods, b.ThrottledPeriods),
		ThrottledSeconds: add(a.ThrottledSeconds, b.ThrottledSeconds),
		MemoryBytes:      add(a.MemoryBytes, b.MemoryBytes),
		OOMKills:         add(a.OOMKills, b.OOMKills),
	}
}

// send emits what could be read of a group's cgroup.
func send(ch chan<- prometheus.Metric, s cgroup.Stats, t Target) {
	emit := func(d *groupDesc, typ prometheus.ValueType, v *float64) {
		if v != nil {
			ch <- t.metric(d, typ, *v)
		}
	}
	emit(cgroupCPUUsage, prometheus.CounterValue, s.CPUSeconds)
	emit(cgroupCPUPeriods, prometheus.CounterValue, s.Periods)
	emit(cgroupCPUThrottledPeriods, prometheus.CounterValue, s.ThrottledPeriods)
	emit(cgroupCPUThrottledSeconds, prometheus.CounterValue, s.ThrottledSeconds)
	emit(cgroupCPULimit, prometheus.GaugeValue, s.LimitCores)
	emit(cgroupMemUsage, prometheus.GaugeValue, s.MemoryBytes)
	emit(cgroupMemPeak, prometheus.GaugeValue, s.MemoryPeakBytes)
	emit(cgroupMemLimit, prometheus.GaugeValue, s.MemoryLimitBytes)
	emit(cgroupOOMKills, prometheus.CounterValue, s.OOMKills)
}
