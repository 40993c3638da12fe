package recorder

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

var (
	contentTypeText        = string(expfmt.FmtText)
	contentTypeOpenMetrics = string(expfmt.FmtOpenMetrics_1_0_0)
)

// fixtureRows are the rows testdata/exposition-{text.prom,openmetrics.txt}
// give at t=1.5: app and proxy have cgroups, loadgen is selected by PID
// (CPU from its processes, no cgroup columns), only the proxy has temp
// files.
func fixtureRows() []ResourceSample {
	return []ResourceSample{
		{RunID: "r1", TS: 1.5, Component: "app",
			CPUSeconds: Some(12.345678), ThrottledPeriods: Some(42), ThrottledS: Some(0.5),
			MemoryBytes: Some(104857600), RSSBytes: Some(52428800), Processes: Some(3),
			SendQueueBytes: Some(16384), Established: Some(5), QuietClients: Some(2)},
		{RunID: "r1", TS: 1.5, Component: "proxy",
			CPUSeconds: Some(3.25), ThrottledPeriods: Some(7), ThrottledS: Some(0.07),
			MemoryBytes: Some(20971520), RSSBytes: Some(10485760), Processes: Some(1),
			TempFiles: Some(2), TempLogicalBytes: Some(33554432), TempAllocatedBytes: Some(33558528),
			SendQueueBytes: Some(2621440)},
		{RunID: "r1", TS: 1.5, Component: "loadgen",
			CPUSeconds: Some(1.5), RSSBytes: Some(31457280), Processes: Some(5), SendQueueBytes: Some(0)},
	}
}

func parseFixture(t *testing.T, name, contentType string) Families {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fams, err := ParseExposition(f, contentType)
	if err != nil {
		t.Fatalf("ParseExposition(%s): %v", name, err)
	}
	return fams
}

func TestSamplesFromFixtures(t *testing.T) {
	for _, tc := range []struct{ file, contentType string }{
		{"exposition-text.prom", contentTypeText},
		{"exposition-text.prom", ""}, // no Content-Type: text, as Prometheus assumes
		{"exposition-text.prom", "text/html"},
		{"exposition-openmetrics.txt", contentTypeOpenMetrics},
		{"exposition-openmetrics.txt", "application/openmetrics-text; version=0.0.1; charset=utf-8"},
	} {
		t.Run(tc.file+" as "+tc.contentType, func(t *testing.T) {
			fams := parseFixture(t, tc.file, tc.contentType)
			got := SamplesFromFamilies("r1", 1.5, Components[:], fams)
			if d := diffRows(fixtureRows(), got); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestParseExpositionErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, contentType, want string }{
		{"text value", "slowlab_processes{group=\"app\"} lots\n", contentTypeText, "parse text format: "},
		{"text duplicate TYPE", "# TYPE x gauge\n# TYPE x counter\nx 1\n", contentTypeText, "parse text format: "},
		{"openmetrics without EOF", "# TYPE x gauge\nx 1\n", contentTypeOpenMetrics, "parse OpenMetrics: "},
		{"openmetrics after EOF", "x 1\n# EOF\nx 2\n", contentTypeOpenMetrics, "parse OpenMetrics: "},
		{"text sent as openmetrics", "# TYPE x_total counter\nx_total 1\n# EOF\n", contentTypeOpenMetrics, "parse OpenMetrics: "},
		{"protobuf garbage", "\x05garbage", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited", "parse protobuf: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fams, err := ParseExposition(strings.NewReader(tc.body), tc.contentType)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want an error starting %q", fams, err, tc.want)
			}
		})
	}
}

// TestSamplesFromFamiliesNone checks that whatever is not a measurement
// stays None: absent groups and metrics, series without a value, types
// with no single value, NaN.
func TestSamplesFromFamiliesNone(t *testing.T) {
	group := func(g string) []*dto.LabelPair {
		return []*dto.LabelPair{{Name: proto.String("group"), Value: proto.String(g)}}
	}
	fams := Families{
		// A counter series whose value is missing: its getter returns 0.
		metricCgroupCPU: {Name: proto.String(metricCgroupCPU), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Label: group("app"), Counter: &dto.Counter{}}}},
		// A summary under a contract name has no single value.
		metricResidentMemory: {Name: proto.String(metricResidentMemory), Type: dto.MetricType_SUMMARY.Enum(),
			Metric: []*dto.Metric{{Label: group("app"), Summary: &dto.Summary{SampleSum: proto.Float64(5)}}}},
		metricMemoryUsage: {Name: proto.String(metricMemoryUsage), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{
				{Label: group("app"), Gauge: &dto.Gauge{Value: proto.Float64(1)}},
				{Label: group("app"), Gauge: &dto.Gauge{Value: proto.Float64(2)}},
				{Gauge: &dto.Gauge{Value: proto.Float64(100)}}, // no group label
			}},
		metricSendQueueBytes: {Name: proto.String(metricSendQueueBytes), Type: dto.MetricType_UNTYPED.Enum(),
			Metric: []*dto.Metric{{Label: group("app"), Untyped: &dto.Untyped{Value: proto.Float64(math.NaN())}}}},
		metricProcesses: {Name: proto.String(metricProcesses), Type: dto.MetricType_UNTYPED.Enum(),
			Metric: []*dto.Metric{{Label: group("app"), Untyped: &dto.Untyped{Value: proto.Float64(4)}}}},
	}
	got := SamplesFromFamilies("r", 2, []string{"app", "nobody"}, fams)
	want := []ResourceSample{
		{RunID: "r", TS: 2, Component: "app", MemoryBytes: Some(3), Processes: Some(4)},
		{RunID: "r", TS: 2, Component: "nobody"},
	}
	if d := diffRows(want, got); d != "" {
		t.Error(d)
	}
	if got := SamplesFromFamilies("r", 0, nil, fams); len(got) != 0 {
		t.Errorf("no components: got %d rows", len(got))
	}
}

// TestSamplesFromSeveralTargets checks that the first target with a metric
// for a component wins, and that the cgroup CPU counter beats the process
// one whichever target has it.
func TestSamplesFromSeveralTargets(t *testing.T) {
	first := mustParse(t, contentTypeText, `
slowlab_process_cpu_seconds_total{group="app"} 9
slowlab_processes{group="app",state="S"} 2
`)
	second := mustParse(t, contentTypeText, `
slowlab_cgroup_cpu_usage_seconds_total{group="app"} 4
slowlab_processes{group="app",state="S"} 7
slowlab_socket_send_queue_bytes{group="app"} 1
`)
	got := SamplesFromFamilies("r", 0, []string{"app"}, first, second)
	want := []ResourceSample{{RunID: "r", Component: "app", CPUSeconds: Some(4), Processes: Some(2), SendQueueBytes: Some(1)}}
	if d := diffRows(want, got); d != "" {
		t.Error(d)
	}
}

// TestSamplesOfConnections: established counts only that state's series,
// quiet clients only the accepted side's 10 s series, open fds all of the
// group's.
func TestSamplesOfConnections(t *testing.T) {
	fams := mustParse(t, contentTypeText, `
slowlab_process_open_fds{group="app"} 42
slowlab_sockets{group="app",state="established"} 12
slowlab_sockets{group="app",state="time_wait"} 100
slowlab_sockets{group="app",state="listen"} 1
slowlab_sockets_quiet{group="app",side="accepted",quiet="10s"} 10
slowlab_sockets_quiet{group="app",side="accepted",quiet="60s"} 4
slowlab_sockets_quiet{group="app",side="connected",quiet="10s"} 3
slowlab_sockets{group="proxy",state="time_wait"} 5
`)
	got := SamplesFromFamilies("r", 0, []string{"app", "proxy"}, fams)
	want := []ResourceSample{
		{RunID: "r", Component: "app", OpenFDs: Some(42), Established: Some(12), QuietClients: Some(10)},
		{RunID: "r", Component: "proxy"}, // no established series: not measured, not 0
	}
	if d := diffRows(want, got); d != "" {
		t.Error(d)
	}
}

func mustParse(t *testing.T, contentType, body string) Families {
	t.Helper()
	fams, err := ParseExposition(strings.NewReader(strings.TrimPrefix(body, "\n")), contentType)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}
