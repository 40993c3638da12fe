package appserver

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/coder/websocket"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// scrape GETs admin/metrics and returns every sample keyed
// name{label="value",...} (labels sorted; histograms as name_count).
func scrape(t *testing.T, admin string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			key := "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[name+key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name+key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"+key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// withPrefix keeps the samples whose key starts with one of prefixes.
func withPrefix(samples map[string]float64, prefixes ...string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range samples {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				out[k] = v
			}
		}
	}
	return out
}

// TestBoundedSeriesBeforeTraffic: a fresh server's /metrics has every
// series with a bounded label at 0 (each endpoint with each status code it
// can count, each worker), so rate() and alerts see them before the first
// request.
func TestBoundedSeriesBeforeTraffic(t *testing.T) {
	for _, o := range []Options{
		DefaultOptions(),
		{Model: ModelGthread, Workers: 2, Threads: 3, LargeSize: 10, BlockSize: 4},
		{Model: ModelAsync, Workers: 1, Threads: 1, LargeSize: 10, BlockSize: 4},
	} {
		t.Run(o.Name(), func(t *testing.T) {
			_, _, admin := startServer(t, o)
			got := scrape(t, admin)
			want := []string{
				`slowlab_target_requests_total{code="200",endpoint="fast"}`,
				`slowlab_target_requests_total{code="200",endpoint="large"}`,
				`slowlab_target_requests_total{code="400",endpoint="large"}`,
				`slowlab_target_requests_total{code="200",endpoint="bytes"}`,
				`slowlab_target_requests_total{code="400",endpoint="bytes"}`,
				`slowlab_target_requests_total{code="204",endpoint="longpoll"}`,
				`slowlab_target_requests_total{code="400",endpoint="longpoll"}`,
				`slowlab_target_requests_total{code="499",endpoint="longpoll"}`,
				`slowlab_target_response_write_seconds_count{endpoint="fast"}`,
				`slowlab_target_response_write_seconds_count{endpoint="large"}`,
				`slowlab_target_response_write_seconds_count{endpoint="bytes"}`,
				`slowlab_target_response_write_seconds_count{endpoint="longpoll"}`,
				`slowlab_target_queued_requests{}`,
			}
			workers := o.Workers
			if o.Model == ModelAsync {
				workers = 1 // everything is served as worker 0
			} else {
				want = append(want, `slowlab_target_slots{}`)
			}
			for w := range workers {
				want = append(want,
					fmt.Sprintf(`slowlab_target_busy_slots{worker="%d"}`, w),
					fmt.Sprintf(`slowlab_target_longpolls_in_progress{worker="%d"}`, w))
			}
			for _, k := range want {
				v, ok := got[k]
				switch {
				case !ok:
					t.Errorf("%s missing before any request", k)
				case v != 0 && !strings.HasPrefix(k, "slowlab_target_slots"):
					t.Errorf("%s = %v before any request, want 0", k, v)
				}
			}
		})
	}
}

// TestTrafficAddsNoSeries drives every status code of every endpoint and
// checks that each was counted in a series that existed from the start:
// the initialised label values are the complete set.
func TestTrafficAddsNoSeries(t *testing.T) {
	o := Options{Model: ModelGthread, Workers: 1, Threads: 2, LargeSize: 10, BlockSize: 4}
	s, base, admin := startServer(t, o)
	families := []string{"slowlab_target_requests_total", "slowlab_target_response_write_seconds_count", "slowlab_target_busy_slots", "slowlab_target_longpolls_in_progress"}
	before := withPrefix(scrape(t, admin), families...)
	ctx0 := context.Background()

	get := func(path string, want int) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	get("/fast", 200)
	get("/large", 200)
	get("/large?size=x", 400)
	get("/bytes?n=10", 200)
	get("/bytes?n=x", 400)
	get("/longpoll?wait=0s", 204)
	get("/longpoll?wait=x", 400)
	get("/page?n=2&size=1", 200)
	get("/page?n=x", 400)
	get("/redirect?to=x", 400)
	for _, status := range []int{301, 302} { // not followed: each hop counts once
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Get(fmt.Sprintf("%s/redirect?status=%d&to=%%2Fnowhere", base, status))
		if err != nil || resp.StatusCode != status {
			t.Fatalf("GET /redirect?status=%d: %v %v", status, resp, err)
		}
		resp.Body.Close()
	}
	// A long-poll whose client leaves is counted as 499.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/longpoll?wait=10m", nil)
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	slowlabtest.WaitFor(t, "the long-poll to be held", func() bool { return gauges(s, "slowlab_target_longpolls_in_progress")["0"] == 1 })
	cancel()
	<-gone
	slowlabtest.WaitFor(t, "the abandoned long-poll to be counted", func() bool {
		return scrape(t, admin)[`slowlab_target_requests_total{code="499",endpoint="longpoll"}`] == 1
	})

	// An upload read whole is a 200; one whose client leaves mid-body, 499.
	resp, err := http.Post(base+"/upload", "application/octet-stream", strings.NewReader("0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
	conn.Close()
	slowlabtest.WaitFor(t, "the cut upload to be counted", func() bool {
		return scrape(t, admin)[`slowlab_target_requests_total{code="499",endpoint="upload"}`] == 1
	})

	// A stream that ends is a 200, a bad query a 400, one whose client
	// leaves a 499.
	get("/events?interval=10ms&duration=20ms", 200)
	get("/events?interval=1ms", 400)
	sse, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(sse, "GET /events?interval=10ms&duration=5m HTTP/1.1\r\nHost: x\r\n\r\n")
	slowlabtest.WaitFor(t, "the stream to be held", func() bool { return gauges(s, "slowlab_target_longpolls_in_progress")["0"] == 1 })
	sse.Close()
	slowlabtest.WaitFor(t, "the abandoned stream to be counted", func() bool {
		return scrape(t, admin)[`slowlab_target_requests_total{code="499",endpoint="events"}`] == 1
	})

	// A WebSocket that ends as asked is a 101, a bad query a 400, a GET
	// without an upgrade a 426, one whose connection breaks a 499.
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/ws"
	ws, _, err := websocket.Dial(ctx0, wsURL+"?mode=push&count=1&interval=1ms", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.Read(ctx0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.Read(ctx0); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after the one push: %v, want the app's normal close", err)
	}
	get("/ws?count=x", 400)
	get("/ws", 426)
	broken, _, err := websocket.Dial(ctx0, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	slowlabtest.WaitFor(t, "the socket to be held", func() bool { return gauges(s, "slowlab_target_longpolls_in_progress")["0"] == 1 })
	broken.CloseNow() // no close frame: the connection just ends
	slowlabtest.WaitFor(t, "the broken socket to be counted", func() bool {
		return scrape(t, admin)[`slowlab_target_requests_total{code="499",endpoint="ws"}`] == 1
	})

	after := withPrefix(scrape(t, admin), families...)
	if added := slices.DeleteFunc(slices.Sorted(maps.Keys(after)), func(k string) bool { _, ok := before[k]; return ok }); len(added) > 0 {
		t.Errorf("series created by traffic rather than at start: %v", added)
	}
	for k, v := range withPrefix(after, "slowlab_target_requests_total") {
		if v != 1 {
			t.Errorf("%s = %v after one request of each kind, want 1", k, v)
		}
	}
}
