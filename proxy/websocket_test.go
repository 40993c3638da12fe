package proxy

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/appserver/appservertest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/loadgen"
)

// wsApp serves the embedded app (async) on loopback: its base URL.
func wsApp(t *testing.T) string {
	t.Helper()
	o := appserver.DefaultOptions()
	o.Model = appserver.ModelAsync
	base, _ := appservertest.Serve(t, o)
	return base
}

func wsDial(t *testing.T, addr string, p appserver.WSParams) loadgen.WSDial {
	u, err := url.Parse("ws://" + strings.TrimPrefix(addr, "http://") + "/ws?" + p.Query())
	if err != nil {
		t.Fatal(err)
	}
	return loadgen.WSDial{URL: u, Timeout: slowlabtest.HangGuard}
}

// Through the proxy a WebSocket is a tunnel: every pushed message comes,
// the app's close too, and the proxy counts the tunnel while it is open.
func TestWebSocketTunnel(t *testing.T) {
	slowlabtest.Timing(t)
	p, addr := startProxy(t, testOptions(t, wsApp(t), true))
	got := 0
	r := loadgen.WSConsumer{WSDial: wsDial(t, addr, appserver.WSParams{Mode: appserver.WSPush, Interval: time.Millisecond, Count: 50, Pad: 10 << 10, Queue: appserver.WSQueueWait}),
		OnMessage: func(d loadgen.WSDelivery) {
			if d.Seq == got {
				got++
			}
			if v := testutil.ToFloat64(p.m.websockets); v != 1 {
				t.Errorf("slowlab_proxy_websockets %v during the session, want 1", v)
			}
		}}.Run(context.Background())
	if r.Err != nil || r.End != "closed" || r.CloseCode != 1000 || r.Expected != 50 || got != 50 {
		t.Fatalf("%+v (%d in order): want 50 pushes and the app's close through the proxy", r, got)
	}
	slowlabtest.WaitFor(t, "the tunnel to close", func() bool { return testutil.ToFloat64(p.m.websockets) == 0 })
	if v := testutil.ToFloat64(p.m.requests.WithLabelValues("101")); v != 1 {
		t.Errorf("requests_total{code=101} %v, want 1", v)
	}
}

// An idle tunnel ends once the upstream was silent for UpstreamTimeout
// (proxy_read_timeout); a holder that pings more often keeps it for its
// whole hold. Without Options.WebSocket the upgrade is not passed on: the
// app sees a plain GET and answers 426, which the client gets.
func TestWebSocketIdleTimeout(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it waits out a proxy timeout")
	app := wsApp(t)
	o := testOptions(t, app, true)
	o.UpstreamTimeout = 3 * time.Second
	_, addr := startProxy(t, o)
	echo := appserver.WSParams{Mode: appserver.WSEcho}

	start := time.Now()
	idle := loadgen.WSHolder{WSDial: wsDial(t, addr, echo), Hold: time.Hour}.Run(context.Background())
	if idle.End == "held" || idle.Duration < o.UpstreamTimeout || time.Since(start) < o.UpstreamTimeout {
		t.Errorf("idle through the proxy: %+v, want it ended by the proxy after %v", idle, o.UpstreamTimeout)
	}
	pinged := loadgen.WSHolder{WSDial: wsDial(t, addr, echo), Hold: o.UpstreamTimeout + time.Second, Ping: 100 * time.Millisecond}.Run(context.Background())
	if pinged.End != "held" || pinged.Pongs == 0 {
		t.Errorf("pinging every 100 ms through the proxy: %+v, want held to the end of its hold", pinged)
	}

	o.WebSocket = false
	_, plain := startProxy(t, o)
	if r := (loadgen.WSHolder{WSDial: wsDial(t, plain, echo), Hold: time.Hour}).Run(context.Background()); r.Err == nil || !strings.Contains(r.Err.Error(), "status 426") {
		t.Errorf("without WebSocket: %+v, want the app's 426 for a GET without an upgrade", r)
	}
}
