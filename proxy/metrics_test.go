package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestProxyBoundedSeriesBeforeTraffic: a fresh proxy's admin /metrics has
// the status codes the proxy produces itself (and 200) and every upstream
// error stage at 0, so rate() and alerts see them before the first request.
func TestProxyBoundedSeriesBeforeTraffic(t *testing.T) {
	p, _, admin := startProxyAdmin(t, testOptions(t, "127.0.0.1:1", true), listen(t, 0))
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, %v", resp.StatusCode, err)
	}
	for _, want := range []string{
		`slowlab_proxy_requests_total{code="200"} 0`,
		`slowlab_proxy_requests_total{code="502"} 0`,
		`slowlab_proxy_requests_total{code="503"} 0`,
		`slowlab_proxy_requests_total{code="504"} 0`,
		`slowlab_proxy_upstream_errors_total{stage="connect"} 0`,
		`slowlab_proxy_upstream_errors_total{stage="send"} 0`,
		`slowlab_proxy_upstream_errors_total{stage="header"} 0`,
		`slowlab_proxy_upstream_errors_total{stage="body"} 0`,
		"slowlab_proxy_in_flight_requests 0",
		"slowlab_proxy_upstream_response_seconds_count 0",
		"slowlab_proxy_client_disconnects_total 0",
		"slowlab_proxy_spooled_bytes_total 0",
		"slowlab_proxy_temp_files_open 0",
		"slowlab_proxy_buffering 1",
	} {
		if !strings.Contains(string(body), "\n"+want+"\n") {
			t.Errorf("fresh /metrics lacks %s", want)
		}
	}
	if problems, err := testutil.GatherAndLint(p.Registry()); err != nil {
		t.Fatal(err)
	} else {
		for _, pr := range problems {
			if strings.HasPrefix(pr.Metric, "slowlab_") {
				t.Errorf("%s: %s", pr.Metric, pr.Text)
			}
		}
	}
}
