package websocket

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

func TestMain(m *testing.M) { slowlabtest.Main(m) }

func wsURL(t *testing.T, base string, p appserver.WSParams) *url.URL {
	t.Helper()
	u, err := url.Parse("ws" + strings.TrimPrefix(base, "http") + "/ws?" + p.Query())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A WSGI app on Gunicorn cannot hold a WebSocket: its /ws answers the
// upgrade, as a plain GET, with 426 and what to run instead, and the
// sync worker is free again at once.
func TestGunicornRefusesWebSocket(t *testing.T) {
	slowlabtest.Timing(t)
	running := labtest.StartOwn(t, "gunicorn+embedded", stack.RouteDirect, "sync-1", 0)
	r := loadgen.WSHolder{WSDial: loadgen.WSDial{URL: wsURL(t, running.URL(), appserver.WSParams{Mode: appserver.WSEcho}), Timeout: time.Minute},
		Hold: time.Hour}.Run(context.Background())
	if r.Err == nil || !strings.Contains(r.Err.Error(), "status 426") {
		t.Errorf("WebSocket on gunicorn sync: %+v, want refused with 426", r)
	}
	resp, err := http.Get(running.URL() + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || !strings.Contains(string(b), "run uvicorn, node or the embedded app") {
		t.Errorf("GET /ws: %d %q", resp.StatusCode, b)
	}
}

// TestAppsServeWebSocket: the apps that can hold a WebSocket serve /ws
// alike: pushes in order, each stamped when written and delivered on
// loopback well within its interval, then the close that says how many;
// echo gives a message back; a GET without an upgrade is a 426. The
// refusal of a bad query before the upgrade is each server's: 400 with
// the embedded app's text, 403 from Uvicorn (ASGI closes before accept).
func TestAppsServeWebSocket(t *testing.T) {
	slowlabtest.Timing(t)
	for _, tc := range []struct {
		stack, server string
		badStatus     int
	}{
		{"embedded+embedded", "async", http.StatusBadRequest},
		{"uvicorn+embedded", "uvicorn-1", http.StatusForbidden},
		{"node+embedded", "node-1", http.StatusBadRequest},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			running := labtest.StartOwn(t, tc.stack, stack.RouteDirect, tc.server, 0)
			base := running.URL()
			p := appserver.WSParams{Mode: appserver.WSPush, Interval: 20 * time.Millisecond, Count: 10, Pad: 3, Queue: appserver.WSQueueWait}
			var got []loadgen.WSDelivery
			r := loadgen.WSConsumer{WSDial: loadgen.WSDial{URL: wsURL(t, base, p), Timeout: time.Minute},
				OnMessage: func(d loadgen.WSDelivery) { got = append(got, d) }}.Run(context.Background())
			if r.Err != nil || r.End != "closed" || r.CloseCode != 1000 || r.Expected != p.Count || len(got) != p.Count {
				t.Fatalf("push: %+v, %d stamped: want %d and the app's normal close saying so", r, len(got), p.Count)
			}
			for i, d := range got {
				if d.Seq != i || d.Delay() < -time.Millisecond || d.Bytes != len(appserver.WSMessage(i, d.SentUS, "aaa")) {
					t.Errorf("message %d: %+v (delay %v)", i, d, d.Delay())
				}
			}
			echo := loadgen.WSHolder{WSDial: loadgen.WSDial{URL: wsURL(t, base, appserver.WSParams{Mode: appserver.WSEcho}), Timeout: time.Minute},
				Hold: 100 * time.Millisecond, Ping: 20 * time.Millisecond}.Run(context.Background())
			if echo.End != "held" || echo.Pings == 0 || echo.Pongs != echo.Pings {
				t.Errorf("echo held with pings: %+v", echo)
			}
			bad, _ := url.Parse("ws" + strings.TrimPrefix(base, "http") + "/ws?interval=0s")
			if r := (loadgen.WSHolder{WSDial: loadgen.WSDial{URL: bad, Timeout: time.Minute}, Hold: time.Hour}).Run(context.Background()); r.Err == nil ||
				!strings.Contains(r.Err.Error(), "status "+strconv.Itoa(tc.badStatus)) {
				t.Errorf("bad query: %+v, want refused with %d", r, tc.badStatus)
			}
			resp, err := http.Get(base + "/ws")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUpgradeRequired {
				t.Errorf("GET /ws without an upgrade: %d, want 426", resp.StatusCode)
			}
		})
	}
}

// Through each proxy a WebSocket is a tunnel: pushes and the app's close
// come through; a socket nobody uses is closed once the app was silent
// for proxy_read_timeout (3 s here), and one whose client pings every
// 100 ms is held to the end of its hold, the app's pongs crossing it.
func TestProxiesTunnelWebSocket(t *testing.T) {
	slowlabtest.Timing(t)
	const readTimeout = 3 * time.Second
	for _, name := range []string{"embedded+embedded", "embedded+nginx"} {
		t.Run(name, func(t *testing.T) {
			running := labtest.StartOwnWith(t, name, stack.RouteBufferingOn, "async", 0, func(_ *stack.Stack, d *stack.Deployment) { d.ProxyReadTimeout = readTimeout })
			base := running.URL()
			p := appserver.WSParams{Mode: appserver.WSPush, Interval: time.Millisecond, Count: 20, Pad: 64 << 10, Queue: appserver.WSQueueWait}
			r := loadgen.WSConsumer{WSDial: loadgen.WSDial{URL: wsURL(t, base, p), Timeout: time.Minute}}.Run(context.Background())
			if r.Err != nil || r.CloseCode != 1000 || r.Messages != p.Count || r.Expected != p.Count {
				t.Errorf("push through the proxy: %+v", r)
			}
			echo := wsURL(t, base, appserver.WSParams{Mode: appserver.WSEcho})
			start := time.Now()
			idle := loadgen.WSHolder{WSDial: loadgen.WSDial{URL: echo, Timeout: time.Minute}, Hold: time.Hour}.Run(context.Background())
			if idle.End == "held" || time.Since(start) < readTimeout {
				t.Errorf("idle through the proxy: %+v after %v, want it closed by the proxy after %v", idle, time.Since(start), readTimeout)
			}
			pinged := loadgen.WSHolder{WSDial: loadgen.WSDial{URL: echo, Timeout: time.Minute}, Hold: readTimeout + time.Second, Ping: 100 * time.Millisecond}.Run(context.Background())
			if pinged.End != "held" || pinged.Pongs == 0 {
				t.Errorf("pinging through the proxy: %+v, want held to the end of its hold", pinged)
			}
		})
	}
}
