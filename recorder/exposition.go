package recorder

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Families is one target's scrape: metric families by name, as
// ParseExposition returns them.
type Families map[string]*dto.MetricFamily

// AcceptHeader is what the Sampler asks a /metrics endpoint for: the
// Prometheus text format first, OpenMetrics only from targets that do not
// speak it. Unlike Prometheus, which prefers OpenMetrics, the Sampler must
// parse a page every 200 ms from inside a 0.2-CPU cgroup, and expfmt's
// OpenMetrics parser (a grammar-driven parser, common v0.73) takes about
// 74 ms and 90 MB of allocations for a 60-line page that the text parser
// reads in 50 µs. Protobuf is not offered, so every response is text a
// person can read back from a capture.
const AcceptHeader = `text/plain;version=0.0.4,application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,*/*;q=0.1`

// ParseExposition parses one /metrics response body. contentType is the
// response's Content-Type header: OpenMetrics 0.0.1 or 1.0.0, the
// Prometheus text format 0.0.4, or delimited protobuf; anything else
// (including no header) is parsed as the text format, as Prometheus does.
// A family that appears twice has its series merged.
func ParseExposition(r io.Reader, contentType string) (Families, error) {
	format := expfmt.ResponseFormat(http.Header{"Content-Type": {contentType}})
	if format.FormatType() == expfmt.TypeUnknown {
		format = expfmt.FmtText
	}
	dec := expfmt.NewDecoder(r, format)
	fams := Families{}
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return fams, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", formatName(format), err)
		}
		if prev, ok := fams[mf.GetName()]; ok {
			if prev.GetType() != mf.GetType() {
				return nil, fmt.Errorf("parse %s: family %q appears twice, as %s and %s",
					formatName(format), mf.GetName(), prev.GetType(), mf.GetType())
			}
			prev.Metric = append(prev.Metric, mf.Metric...)
			continue
		}
		fams[mf.GetName()] = mf
	}
}

// formatName names an exposition format in errors.
func formatName(f expfmt.Format) string {
	switch f.FormatType() {
	case expfmt.TypeOpenMetrics:
		return "OpenMetrics"
	case expfmt.TypeProtoDelim:
		return "protobuf"
	}
	return "text format"
}

// The exporter metrics resource-samples.csv is made of (exporter/README.md
// lists them), each with the label group naming a component.
const (
	groupLabel = "group"

	metricCgroupCPU          = "slowlab_cgroup_cpu_usage_seconds_total"
	metricProcessCPU         = "slowlab_process_cpu_seconds_total"
	metricThrottledPeriods   = "slowlab_cgroup_cpu_throttled_periods_total"
	metricThrottledSeconds   = "slowlab_cgroup_cpu_throttled_seconds_total"
	metricMemoryUsage        = "slowlab_cgroup_memory_usage_bytes"
	metricProcesses          = "slowlab_processes"
	metricResidentMemory     = "slowlab_process_resident_memory_bytes"
	metricTempFiles          = "slowlab_proxy_temp_files"
	metricTempLogicalBytes   = "slowlab_proxy_temp_logical_bytes"
	metricTempAllocatedBytes = "slowlab_proxy_temp_allocated_bytes"
	metricSendQueueBytes     = "slowlab_socket_send_queue_bytes"
	metricOpenFDs            = "slowlab_process_open_fds"
	metricSockets            = "slowlab_sockets"
	metricSocketsQuiet       = "slowlab_sockets_quiet"
)

// resourceColumn is one value column of resource-samples.csv and the
// metrics it is read from, in order of preference: the first metric that
// has a series for the component gives the cell.
type resourceColumn struct {
	name    string // CSV column
	metrics []string
	cell    func(*ResourceSample) *Maybe
	only    map[string]string // the series counted: these label values (nil: all)
}

// resourceColumns are the value columns of resource-samples.csv in CSV
// order. CPU time comes from the cgroup when the group has one, else from
// the summed utime+stime of the group's processes (groups selected by PID).
var resourceColumns = []resourceColumn{
	{"cpu_seconds", []string{metricCgroupCPU, metricProcessCPU}, func(r *ResourceSample) *Maybe { return &r.CPUSeconds }, nil},
	{"throttled_periods", []string{metricThrottledPeriods}, func(r *ResourceSample) *Maybe { return &r.ThrottledPeriods }, nil},
	{"throttled_s", []string{metricThrottledSeconds}, func(r *ResourceSample) *Maybe { return &r.ThrottledS }, nil},
	{"memory_bytes", []string{metricMemoryUsage}, func(r *ResourceSample) *Maybe { return &r.MemoryBytes }, nil},
	{"rss_bytes", []string{metricResidentMemory}, func(r *ResourceSample) *Maybe { return &r.RSSBytes }, nil},
	{"processes", []string{metricProcesses}, func(r *ResourceSample) *Maybe { return &r.Processes }, nil},
	{"temp_files", []string{metricTempFiles}, func(r *ResourceSample) *Maybe { return &r.TempFiles }, nil},
	{"temp_logical_bytes", []string{metricTempLogicalBytes}, func(r *ResourceSample) *Maybe { return &r.TempLogicalBytes }, nil},
	{"temp_allocated_bytes", []string{metricTempAllocatedBytes}, func(r *ResourceSample) *Maybe { return &r.TempAllocatedBytes }, nil},
	{"send_queue_bytes", []string{metricSendQueueBytes}, func(r *ResourceSample) *Maybe { return &r.SendQueueBytes }, nil},
	{"open_fds", []string{metricOpenFDs}, func(r *ResourceSample) *Maybe { return &r.OpenFDs }, nil},
	{"established", []string{metricSockets}, func(r *ResourceSample) *Maybe { return &r.Established }, map[string]string{"state": "established"}},
	{"quiet_clients", []string{metricSocketsQuiet}, func(r *ResourceSample) *Maybe { return &r.QuietClients }, map[string]string{"side": "accepted", "quiet": "10s"}},
}

// SamplesFromFamilies maps one tick's scrapes to resource-samples.csv
// rows: one row per component, in the order of components, at t seconds
// after the run start. A component's value is the sum of the series whose
// group label is the component's name (slowlab_processes is summed over
// its states). A metric with no such series leaves its cell None, never 0;
// so does a series that is not a counter, gauge or untyped sample, or
// whose value is NaN or infinite. With several targets, the first target
// (in argument order) that has the metric for the component gives the
// cell, so one exporter's values are never added to another's.
func SamplesFromFamilies(runID string, t float64, components []string, targets ...Families) []ResourceSample {
	rows := make([]ResourceSample, len(components))
	for i, comp := range components {
		row := &rows[i]
		row.RunID, row.TS, row.Component = runID, t, comp
		for _, col := range resourceColumns {
			*col.cell(row) = lookup(col.metrics, comp, col.only, targets)
		}
	}
	return rows
}

// lookup returns the first of metrics, in the first target, that has a
// series for group (and the only label values).
func lookup(metrics []string, group string, only map[string]string, targets []Families) Maybe {
	for _, name := range metrics {
		for _, fams := range targets {
			if v, ok := groupSum(fams[name], group, only); ok {
				return Some(v)
			}
		}
	}
	return None()
}

// groupSum sums the values of mf's series labelled group and the only
// label values. ok is false when there is no such series with a value.
func groupSum(mf *dto.MetricFamily, group string, only map[string]string) (sum float64, ok bool) {
	for _, m := range mf.GetMetric() {
		match := hasLabel(m, groupLabel, group)
		for name, value := range only {
			match = match && hasLabel(m, name, value)
		}
		if v, has := sampleValue(mf.GetType(), m); match && has {
			sum += v
			ok = true
		}
	}
	return sum, ok
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}

// sampleValue returns the value of a counter, gauge or untyped series. The
// pointer checks matter: the generated getters return 0 for a missing
// value, which must not become a measurement.
func sampleValue(t dto.MetricType, m *dto.Metric) (float64, bool) {
	var v *float64
	switch {
	case t == dto.MetricType_COUNTER && m.GetCounter() != nil:
		v = m.GetCounter().Value
	case t == dto.MetricType_GAUGE && m.GetGauge() != nil:
		v = m.GetGauge().Value
	case t == dto.MetricType_UNTYPED && m.GetUntyped() != nil:
		v = m.GetUntyped().Value
	}
	if v == nil {
		return 0, false
	}
	return *v, true
}

// errorRows returns one row per component with every value None and err
// as the error: a tick whose values could not be measured.
func errorRows(runID string, t float64, components []string, err string) []ResourceSample {
	rows := make([]ResourceSample, len(components))
	for i, comp := range components {
		rows[i] = ResourceSample{RunID: runID, TS: t, Component: comp, Error: err}
	}
	return rows
}
