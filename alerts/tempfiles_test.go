package alerts

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// The proxy temp-file alerts in a real Prometheus scraping the exporter
// watching the embedded buffering proxy (its temp dirs and error log)
// while one slow reader downloads /large through it (every `for` cut to
// 2 s):
//   - 40 MiB responses: the proxy spools 32 MiB (its
//     proxy_max_temp_file_size) into one temp file and relays the rest at
//     the client's pace: SlowlabProxyTempFilesNearMax fires;
//   - 16 MiB responses with the temp path on a 2 MiB tmpfs: the proxy's
//     temp write fails (ENOSPC) and it logs it:
//     SlowlabProxyTempWriteFailed fires.
//
// Before the reader neither is pending or firing.
func TestProxyTempAlertsOnRealPrometheus(t *testing.T) {
	for _, tc := range []struct {
		alert string
		large int64
		tmpfs int64
	}{
		{"SlowlabProxyTempFilesNearMax", 40 << 20, 0},
		{"SlowlabProxyTempWriteFailed", 16 << 20, 2 << 20},
	} {
		t.Run(tc.alert, func(t *testing.T) {
			if tc.tmpfs > 0 {
				slowlabtest.RequireRoot(t, "the proxy's temp path on a tmpfs of its own")
			}
			r := labtest.StartOwnWith(t, stack.NameEmbedded, stack.RouteBufferingOn, "sync-2", tc.large, func(_ *stack.Stack, d *stack.Deployment) {
				d.TempTmpfs = tc.tmpfs
			})
			metricsURL := serveExporter(t, exporter.Config{Groups: []exporter.Group{
				{Name: "proxy", Selectors: r.Groups()["proxy"], TempDirs: r.TempDirs(), ErrorLogs: r.ProxyErrorLogs()},
			}}, exporter.Options{})
			prom := rulesPrometheus(t, metricsURL, nil)
			slowlabtest.WaitFor(t, "3 scrapes of the proxy's temp files and failed writes", func() bool {
				return len(prom.Query(`count_over_time(slowlab_proxy_temp_write_errors_total{group="proxy"}[1m]) >= 3`)) == 1 &&
					len(prom.Query(`count_over_time(slowlab_proxy_temp_files{group="proxy"}[1m]) >= 3`)) == 1
			}, func() string {
				return fmt.Sprint(prom.Query(`{group="proxy",__name__=~"slowlab_proxy_temp.*"}`))
			})
			if v := prom.Query(fmt.Sprintf(`ALERTS{alertname=%q}`, tc.alert)); len(v) > 0 {
				t.Fatalf("%s before any reader: %v", tc.alert, v)
			}

			ctx, cancel := context.WithCancel(context.Background())
			large, err := url.Parse(r.URL() + "/large")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan loadgen.Download, 1)
			sr := loadgen.SlowReader{URL: large, RcvBuf: 8 << 10, ReadSize: 16 << 10, Rate: 256 << 10, Timeout: 10 * time.Minute}
			go func() { done <- sr.Run(ctx, 0) }()
			t.Cleanup(func() { cancel(); <-done })

			slowlabtest.WaitFor(t, tc.alert+" firing for the proxy", func() bool {
				return len(prom.Query(fmt.Sprintf(`ALERTS{alertname=%q,alertstate="firing",group="proxy"}`, tc.alert))) > 0
			}, func() string {
				return fmt.Sprint(prom.Query(`{group="proxy",__name__=~"slowlab_proxy_temp.*"}`))
			})
		})
	}
}
