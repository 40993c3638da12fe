package websocket

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
)

// TestExporterSeesSlowWebSocketConsumers: what an operator's exporter
// shows of slow WebSocket consumers on an app that queues without limit,
// from the metrics it already has: the app's established sockets (one a
// consumer), its accepted sockets' send queues filled, and its resident
// memory grown by what its queues hold beyond the path: four consumers
// at 256 KiB/s of 40 x 256 KiB pushes make the app hold more than half of
// 4 x (10 MiB - what the path holds). On the embedded app and Node.js.
func TestExporterSeesSlowWebSocketConsumers(t *testing.T) {
	slowlabtest.Timing(t)
	for _, tc := range []struct{ stack, server string }{{"embedded+embedded", "async"}, {"node+embedded", "node-1"}} {
		t.Run(tc.stack, func(t *testing.T) {
			running := labtest.StartOwn(t, tc.stack, stack.RouteDirect, tc.server, 0)
			e, err := exporter.New(exporter.Config{Groups: []exporter.Group{{Name: "app", Selectors: running.Groups()["app"]}}},
				exporter.Options{Collectors: map[string]bool{"cgroup": false, "tempfiles": false}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			const consumers, count, pad, rcvbuf = 4, 40, 256 << 10, 64 << 10
			before := slowlabtest.Values(t, e)["slowlab_process_resident_memory_bytes{app}"]
			beyond := float64(count*pad - slowlabtest.WmemMax(t) - 2*rcvbuf - 2*pad)
			want := before + consumers*beyond/2
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			u := wsURL(t, running.URL(), appserver.WSParams{Mode: appserver.WSPush, Interval: time.Millisecond, Count: count, Pad: pad, Queue: appserver.WSQueueUnbounded})
			for range consumers {
				wg.Go(func() {
					loadgen.WSConsumer{WSDial: loadgen.WSDial{URL: u, RcvBuf: rcvbuf, Timeout: time.Minute}, Rate: 256 << 10}.Run(ctx)
				})
			}
			var v map[string]float64
			slowlabtest.WaitFor(t, "the app's sockets, send queues and memory to show the consumers", func() bool {
				v = slowlabtest.Values(t, e)
				return v["slowlab_sockets{app,established}"] >= consumers && v["slowlab_socket_send_queue_bytes{app,accepted}"] >= consumers*float64(rcvbuf) &&
					v["slowlab_process_resident_memory_bytes{app}"] >= want
			}, func() string {
				return fmt.Sprintf("established %v, send queues %v bytes, RSS %v (from %v, want %v)", v["slowlab_sockets{app,established}"],
					v["slowlab_socket_send_queue_bytes{app,accepted}"], v["slowlab_process_resident_memory_bytes{app}"], before, want)
			})
			t.Logf("%s: established %v, accepted send queues %.1f MiB, RSS %.1f MiB from %.1f MiB", tc.stack, v["slowlab_sockets{app,established}"],
				v["slowlab_socket_send_queue_bytes{app,accepted}"]/(1<<20), v["slowlab_process_resident_memory_bytes{app}"]/(1<<20), before/(1<<20))
		})
	}
}
