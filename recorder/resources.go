package recorder

// mib is the byte count of the MiB in temp_peak_mib.
const mib = 1 << 20

// proxyComponent is the component whose temp files give temp_peak_mib.
const proxyComponent = "proxy"

// SummarizeResources summarizes a run's resource samples for runs.csv:
// the component columns, indexed like Components, and temp_peak_mib. Only
// samples with from <= TS <= to count, and within them only valid cells
// (a failed scrape's row has none), so a run's summary covers its own
// window whatever else the file holds. Every figure is None when the
// window has no data for it.
//
//   - CPUCores is the CPU time between the first and the last valid
//     cpu_seconds sample divided by the time between them: the mean number
//     of cores used. It is None with fewer than two samples, and when the
//     counter went backwards (the process or cgroup was replaced).
//   - ThrottledMS is the throttled time between those two samples of
//     throttled_s, in milliseconds; None as for CPUCores.
//   - MemoryPeakBytes is the largest sampled memory_bytes (cgroup usage).
//     The kernel's own peak (slowlab_cgroup_memory_peak_bytes) is not used:
//     it covers the cgroup's whole life, including what happened before
//     from (another run, start-up), so it cannot be confined to the window;
//     a sampled peak can miss a spike shorter than the interval instead.
//   - RSSPeakBytes is the largest sampled rss_bytes.
//
// tempPeakMiB is the largest temp_logical_bytes of the "proxy" component,
// in MiB: the total size of the proxy's open temp files, which is what
// docs/experiments.md compares (allocated bytes can be smaller for sparse
// files).
func SummarizeResources(samples []ResourceSample, from, to float64) (comps [3]ComponentSummary, tempPeakMiB Maybe) {
	var temp peak
	for i, name := range Components {
		var cpu, throttled counterDelta
		var mem, rss peak
		for _, s := range samples {
			if s.Component != name || !(s.TS >= from && s.TS <= to) {
				continue
			}
			cpu.add(s.TS, s.CPUSeconds)
			throttled.add(s.TS, s.ThrottledS)
			mem.add(s.MemoryBytes)
			rss.add(s.RSSBytes)
			if name == proxyComponent {
				temp.add(s.TempLogicalBytes)
			}
		}
		c := &comps[i]
		if d, dt, ok := cpu.delta(); ok && dt > 0 {
			c.CPUCores = Some(d / dt)
		}
		if d, _, ok := throttled.delta(); ok {
			c.ThrottledMS = Some(d * 1000)
		}
		c.MemoryPeakBytes, c.RSSPeakBytes = mem.max, rss.max
	}
	if temp.max.Valid {
		tempPeakMiB = Some(temp.max.Value / mib)
	}
	return comps, tempPeakMiB
}

// counterDelta tracks the first and the last valid sample of a counter,
// by time.
type counterDelta struct {
	first, last   Maybe
	tFirst, tLast float64
}

func (c *counterDelta) add(t float64, v Maybe) {
	if !v.Valid {
		return
	}
	if !c.first.Valid || t < c.tFirst {
		c.first, c.tFirst = v, t
	}
	if !c.last.Valid || t >= c.tLast {
		c.last, c.tLast = v, t
	}
}

// delta returns the counter's increase over dt seconds; ok is false with
// fewer than two samples or when the counter went backwards.
func (c *counterDelta) delta() (d, dt float64, ok bool) {
	if !c.first.Valid || c.tLast <= c.tFirst {
		return 0, 0, false
	}
	d = c.last.Value - c.first.Value
	if d < 0 {
		return 0, 0, false
	}
	return d, c.tLast - c.tFirst, true
}

// peak tracks the largest valid value.
type peak struct{ max Maybe }

func (p *peak) add(v Maybe) {
	if v.Valid && (!p.max.Valid || v.Value > p.max.Value) {
		p.max = v
	}
}

// PeakOf is the largest value of a column among component's samples
// (None when none was measured).
func PeakOf(samples []ResourceSample, component string, value func(ResourceSample) Maybe) Maybe {
	var p peak
	for _, s := range samples {
		if s.Component == component {
			p.add(value(s))
		}
	}
	return p.max
}
