package recorder

import "testing"

func TestSummarizeResources(t *testing.T) {
	// cpu builds a row of component c at ts with cpu_seconds and throttled_s.
	cpu := func(c string, ts float64, cpuS, throttledS Maybe) ResourceSample {
		return ResourceSample{TS: ts, Component: c, CPUSeconds: cpuS, ThrottledS: throttledS}
	}
	mem := func(c string, ts float64, memory, rss Maybe) ResourceSample {
		return ResourceSample{TS: ts, Component: c, MemoryBytes: memory, RSSBytes: rss}
	}
	temp := func(c string, ts float64, logical Maybe) ResourceSample {
		return ResourceSample{TS: ts, Component: c, TempLogicalBytes: logical, TempAllocatedBytes: Some(1e12)}
	}
	failed := func(c string, ts float64) ResourceSample {
		return ResourceSample{TS: ts, Component: c, Error: "scrape: connection refused"}
	}
	none := None()
	for _, tc := range []struct {
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
				cpu("app", 0.5, Some(1), Some(0)), // before the window
				cpu("app", 1, Some(2), Some(0.1)),
				failed("app", 1.2),
				cpu("app", 2, none, none), // not measured: no effect
				cpu("app", 3, Some(2.5), Some(0.25)),
				cpu("app", 5, Some(3), Some(0.4)),
				cpu("app", 5.2, Some(9), Some(9)), // after the window
				cpu("proxy", 1, Some(10), none),
				cpu("proxy", 3, Some(10.5), none),
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
				cpu("loadgen", 4, Some(3), Some(1)),
				cpu("loadgen", 2, Some(2), Some(0.5)),
				cpu("loadgen", 3, Some(2.2), Some(0.9)),
			},
			from: 0, to: 10,
			want: [3]ComponentSummary{{}, {}, {CPUCores: Some(0.5), ThrottledMS: Some(500)}},
		},
		{
			name: "one sample is no rate",
			samples: []ResourceSample{
				cpu("app", 2, Some(5), Some(0.5)),
				mem("app", 2, Some(100), Some(50)),
			},
			from: 0, to: 10,
			want: [3]ComponentSummary{{MemoryPeakBytes: Some(100), RSSPeakBytes: Some(50)}},
		},
		{
			name: "counter reset is no rate",
			samples: []ResourceSample{
				cpu("app", 1, Some(5), Some(2)),
				cpu("app", 2, Some(0.1), Some(0)),
			},
			from: 0, to: 10,
		},
		{
			name: "zero use is a measured zero",
			samples: []ResourceSample{
				cpu("proxy", 1, Some(5), Some(0)),
				cpu("proxy", 3, Some(5), Some(0)),
				temp("proxy", 1, Some(0)),
			},
			from: 0, to: 10,
			want:     [3]ComponentSummary{{}, {CPUCores: Some(0), ThrottledMS: Some(0)}, {}},
			wantTemp: Some(0),
		},
		{
			name: "memory and rss peaks are the largest samples in the window",
			samples: []ResourceSample{
				mem("app", 0, Some(999), Some(999)), // before
				mem("app", 1, Some(100), none),
				mem("app", 2, Some(300), Some(20)),
				mem("app", 3, Some(200), Some(40)),
				mem("proxy", 2, none, Some(7)),
				failed("loadgen", 2),
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
				temp("proxy", 1, Some(8*mib)),
				temp("proxy", 2, Some(33.5*mib)),
				temp("proxy", 3, none),
				temp("proxy", 11, Some(64*mib)), // after
				temp("app", 2, Some(100*mib)),   // not the proxy
			},
			from: 0, to: 10,
			wantTemp: Some(33.5),
		},
		{
			name:    "unknown components are ignored",
			samples: []ResourceSample{cpu("db", 1, Some(1), none), cpu("db", 2, Some(2), none)},
			from:    0, to: 10,
		},
	} {
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
					if !sameCell(&c.want, &c.got, 6, 1) {
						t.Errorf("%s_%s: got %s, want %s", Components[i], c.name, show(&c.got), show(&c.want))
					}
				}
			}
			if !sameCell(&tc.wantTemp, &gotTemp, 6, 1) {
				t.Errorf("temp_peak_mib: got %s, want %s", show(&gotTemp), show(&tc.wantTemp))
			}
		})
	}
}
