package exporter

import (
	"context"
	"flag"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// stubSettings is the stub collector's own setting, declared and read in
// its "file" (this test) only.
type stubSettings struct{ value float64 }

var stubDesc = newGroupDesc("slowlab_stub_value", "The stub collector's --collector.stub.value, per group.")

type stubCollector struct{ s *stubSettings }

func (c stubCollector) Update(_ context.Context, targets []Target, ch chan<- prometheus.Metric) error {
	for _, t := range targets {
		ch <- t.metric(stubDesc, prometheus.GaugeValue, c.s.value)
	}
	return nil
}

// TestCollectorIsOneFile: a collector registered with its own flag, as a
// collector file does, gets --collector.NAME, --no-collector.NAME and its
// flag on the command line (CollectorFlags, what the exporter command
// calls), its setting reaches its factory, and its metric is served;
// nothing else in the package was changed for it.
func TestCollectorIsOneFile(t *testing.T) {
	registerCollector("stub", "a collector of a test", false,
		func(env collectorEnv) (Collector, error) {
			return stubCollector{env.opts.Own["stub"].(*stubSettings)}, nil
		},
		func(fs *flag.FlagSet, o *Options) {
			s := &stubSettings{value: 1}
			o.Own["stub"] = s
			fs.Func("collector.stub.value", "the value the stub reports", func(v string) (err error) {
				s.value, err = strconv.ParseFloat(v, 64)
				return err
			})
		})
	t.Cleanup(func() { delete(collectors, "stub") })

	scrape := func(args ...string) map[string]float64 {
		t.Helper()
		fs := flag.NewFlagSet("exporter", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var o Options
		CollectorFlags(fs, &o)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		e, err := New(Config{Groups: []Group{{Name: "self", Selectors: []string{"pid:" + strconv.Itoa(os.Getpid())}}}}, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		return values(t, e)
	}
	if v, ok := scrape()["slowlab_stub_value{self}"]; ok {
		t.Errorf("disabled by default, yet served %v", v)
	}
	if v := scrape("--collector.stub", "--collector.stub.value", "2.5")["slowlab_stub_value{self}"]; v != 2.5 {
		t.Errorf("slowlab_stub_value = %v, want the flag's 2.5", v)
	}
	if v, ok := scrape("--collector.stub", "--no-collector.stub")["slowlab_stub_value{self}"]; ok {
		t.Errorf("--no-collector.stub given last, yet served %v", v)
	}
}
