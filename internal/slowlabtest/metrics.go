package slowlabtest

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Values gathers c once: each series as NAME{label values, in the order
// Gather gives them, comma-separated} to its value (a gauge's, counter's
// or untyped value).
func Values(t testing.TB, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var lv []string
			for _, l := range m.GetLabel() {
				lv = append(lv, l.GetValue())
			}
			out[mf.GetName()+"{"+strings.Join(lv, ",")+"}"] = m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return out
}

// WmemMax is the most a TCP socket's send buffer grows to here
// (net.ipv4.tcp_wmem's maximum).
func WmemMax(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	n, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}
