package recorder

import "testing"

// Sample rows for the SummarizeResources cases: sampleCPU sets
// cpu_seconds and throttled_s, sampleMem memory_bytes and rss_bytes,
// sampleTemp temp_logical_bytes; sampleFailed is a failed scrape.
func sampleCPU(c string, ts float64, cpuS, throttledS Maybe) ResourceSample {
	return ResourceSample{TS: ts, Component: c, CPUSeconds: cpuS, ThrottledS: throttledS}
}

func sampleMem(c string, ts float64, memory, rss Maybe) ResourceSample {
	return ResourceSample{TS: ts, Component: c, MemoryBytes: memory, RSSBytes: rss}
}

func sampleTemp(c string, ts float64, logical Maybe) ResourceSample {
	return ResourceSample{TS: ts, Component: c, TempLogicalBytes: logical, TempAllocatedBytes: Some(1e12)}
}

func sampleFailed(c string, ts float64) ResourceSample {
	return ResourceSample{TS: ts, Component: c, Error: "scrape: connection refused"}
}

// summarizeResourcesCases are the windows TestSummarizeResources checks.
var summarizeResourcesCases = []struct {
	name     string
	samples  []ResourceSample
	from, to float64
	want     [3]ComponentSummary
	wantTemp Maybe
}{
	{name: "no samples", from: 0, to: 10},
	{
		name: "cpu cores and throttling from the first and last valid samples in the window",
		samples: []ResourceSample{
			sampleCPU("app", 0.5, Some(1), Some(0)), // before the window
			sampleCPU("app", 1, Some(2), Some(0.1)),
			sampleFailed("app", 1.2),
			sampleCPU("app", 2, None(), None()), // not measured: no effect
			sampleCPU("app", 3, Some(2.5), Some(0.25)),
			sampleCPU("app", 5, Some(3), Some(0.4)),
			sampleCPU("app", 5.2, Some(9), Some(9)), // after the window
			sampleCPU("proxy", 1, Some(10), None()),
			sampleCPU("proxy", 3, Some(10.5), None()),
		},
		from: 1, to: 5,
		want: [3]ComponentSummary{
			{CPUCores: Some(0.25), ThrottledMS: Some(300)},
			{CPUCores: Some(0.25)},
			{},
		},
	},
	{
		name: "samples out of order",
		samples: []ResourceSample{
			sampleCPU("loadgen", 4, Some(3), Some(1)),
			sampleCPU("loadgen", 2, Some(2), Some(0.5)),
			sampleCPU("loadgen", 3, Some(2.2), Some(0.9)),
		},
		from: 0, to: 10,
		want: [3]ComponentSummary{{}, {}, {CPUCores: Some(0.5), ThrottledMS: Some(500)}},
	},
	{
		name: "one sample is no rate",
		samples: []ResourceSample{
			sampleCPU("app", 2, Some(5), Some(0.5)),
			sampleMem("app", 2, Some(100), Some(50)),
		},
		from: 0, to: 10,
		want: [3]ComponentSummary{{MemoryPeakBytes: Some(100), RSSPeakBytes: Some(50)}},
	},
	{
		name: "counter reset is no rate",
		samples: []ResourceSample{
			sampleCPU("app", 1, Some(5), Some(2)),
			sampleCPU("app", 2, Some(0.1), Some(0)),
		},
		from: 0, to: 10,
	},
	{
		name: "zero use is a measured zero",
		samples: []ResourceSample{
			sampleCPU("proxy", 1, Some(5), Some(0)),
			sampleCPU("proxy", 3, Some(5), Some(0)),
			sampleTemp("proxy", 1, Some(0)),
		},
		from: 0, to: 10,
		want:     [3]ComponentSummary{{}, {CPUCores: Some(0), ThrottledMS: Some(0)}, {}},
		wantTemp: Some(0),
	},
	{
		name: "memory and rss peaks are the largest samples in the window",
		samples: []ResourceSample{
			sampleMem("app", 0, Some(999), Some(999)), // before
			sampleMem("app", 1, Some(100), None()),
			sampleMem("app", 2, Some(300), Some(20)),
			sampleMem("app", 3, Some(200), Some(40)),
			sampleMem("proxy", 2, None(), Some(7)),
			sampleFailed("loadgen", 2),
		},
		from: 1, to: 3,
		want: [3]ComponentSummary{
			{MemoryPeakBytes: Some(300), RSSPeakBytes: Some(40)},
			{RSSPeakBytes: Some(7)},
			{},
		},
	},
	{
		name: "temp peak is the proxy's largest logical size in MiB",
		samples: []ResourceSample{
			sampleTemp("proxy", 1, Some(8*mib)),
			sampleTemp("proxy", 2, Some(33.5*mib)),
			sampleTemp("proxy", 3, None()),
			sampleTemp("proxy", 11, Some(64*mib)), // after
			sampleTemp("app", 2, Some(100*mib)),   // not the proxy
		},
		from: 0, to: 10,
		wantTemp: Some(33.5),
	},
	{
		name:    "unknown components are ignored",
		samples: []ResourceSample{sampleCPU("db", 1, Some(1), None()), sampleCPU("db", 2, Some(2), None())},
		from:    0, to: 10,
	},
}

func TestSummarizeResources(t *testing.T) {
	for _, tc := range summarizeResourcesCases {
		t.Run(tc.name, func(t *testing.T) {
			got, gotTemp := SummarizeResources(tc.samples, tc.from, tc.to)
			for i := range got {
				for _, c := range []struct {
					name      string
					got, want Maybe
				}{
					{"cpu_cores", got[i].CPUCores, tc.want[i].CPUCores},
					{"throttled_ms", got[i].ThrottledMS, tc.want[i].ThrottledMS},
					{"memory_peak_bytes", got[i].MemoryPeakBytes, tc.want[i].MemoryPeakBytes},
					{"rss_peak_bytes", got[i].RSSPeakBytes, tc.want[i].RSSPeakBytes},
				} {
					if !nearMaybe(c.want, c.got) {
						t.Errorf("%s_%s: got %s, want %s", Components[i], c.name, showMaybe(c.got), showMaybe(c.want))
					}
				}
			}
			if !nearMaybe(tc.wantTemp, gotTemp) {
				t.Errorf("temp_peak_mib: got %s, want %s", showMaybe(gotTemp), showMaybe(tc.wantTemp))
			}
		})
	}
}
