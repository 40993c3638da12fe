package buffersweep

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab/slowclient"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// modelConfig is a path of route under tcp_wmem max wmem: tcp_rmem's
// default 128 KiB, wmem_max and rmem_max 4 MiB, the slow client's 8 KiB
// SO_RCVBUF, the lab's proxy buffers.
func modelConfig(route stack.Route, wmem int64) pathConfig {
	return pathConfig{Route: route, TCPWmem: recorder.TCPMem{Min: 4096, Default: 16384, Max: wmem},
		TCPRmem: recorder.TCPMem{Min: 4096, Default: 131072, Max: 32 << 20}, WmemMax: 4 << 20, RmemMax: 4 << 20,
		ClientRcvBuf: 8 << 10, Proxy: stack.Deployment{}.ResponseBuffers()}
}

// Each hop as the kernel or the proxy's configuration sizes it.
func TestPredictCapacity(t *testing.T) {
	const k, m = 1 << 10, 1 << 20
	for _, tc := range []struct {
		name   string
		change func(*pathConfig)
		want   pathCapacity
	}{
		{"direct: autotuned send buffer up to tcp_wmem max, SO_RCVBUF doubled", func(c *pathConfig) {},
			pathCapacity{AppSend: 1 * m, ClientRecv: 16 * k}},
		{"buffering off: the proxy's receive buffer at tcp_rmem's default, proxy_buffer_size, its send buffer autotuned",
			func(c *pathConfig) { c.Route = stack.RouteBufferingOff },
			pathCapacity{AppSend: 1 * m, ProxyRecv: 128 * k, ProxyMemory: 16 * k, ProxySend: 1 * m, ClientRecv: 16 * k}},
		{"buffering on: proxy_buffer_size + proxy_buffers in memory, proxy_max_temp_file_size on disk",
			func(c *pathConfig) { c.Route = stack.RouteBufferingOn },
			pathCapacity{AppSend: 1 * m, ProxyRecv: 128 * k, ProxyMemory: 80 * k, ProxyTempFile: 32 * m, ProxySend: 1 * m, ClientRecv: 16 * k}},
		{"buffering on without a temp file", func(c *pathConfig) {
			c.Route, c.Proxy.MaxTempFileSize = stack.RouteBufferingOn, 0
		}, pathCapacity{AppSend: 1 * m, ProxyRecv: 128 * k, ProxyMemory: 80 * k, ProxySend: 1 * m, ClientRecv: 16 * k}},
		{"the app sets SO_SNDBUF 64k: doubled", func(c *pathConfig) { c.AppSndBuf = 64 * k },
			pathCapacity{AppSend: 128 * k, ClientRecv: 16 * k}},
		{"SO_SNDBUF above wmem_max: capped, then doubled", func(c *pathConfig) { c.AppSndBuf = 64 * m },
			pathCapacity{AppSend: 8 * m, ClientRecv: 16 * k}},
		{"SO_SNDBUF 1: the kernel's minimum", func(c *pathConfig) { c.AppSndBuf = 1 },
			pathCapacity{AppSend: 4608, ClientRecv: 16 * k}},
		{"SO_RCVBUF above rmem_max: capped, then doubled", func(c *pathConfig) { c.ClientRcvBuf = 64 * m },
			pathCapacity{AppSend: 1 * m, ClientRecv: 8 * m}},
		{"no SO_RCVBUF: tcp_rmem's default", func(c *pathConfig) { c.ClientRcvBuf = 0 },
			pathCapacity{AppSend: 1 * m, ClientRecv: 128 * k}},
	} {
		c := modelConfig(stack.RouteDirect, 1*m)
		tc.change(&c)
		got, err := predictCapacity(c)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v (%v), want %+v", tc.name, got, err, tc.want)
		}
	}
	if p := (pathCapacity{AppSend: 1 << 20, ClientRecv: 16 << 10}); p.Total() != 1<<20+16<<10 ||
		p.String() != "1.02 MiB: app send 1m + client receive 16k" {
		t.Errorf("total %d, %q", p.Total(), p.String())
	}
}

// A configuration the model cannot read is refused, naming what is wrong.
func TestPredictCapacityRefuses(t *testing.T) {
	for _, tc := range []struct {
		change func(*pathConfig)
		want   string
	}{
		{func(c *pathConfig) { c.Route = "sideways" }, `route "sideways"`},
		{func(c *pathConfig) { c.TCPWmem.Max = 0 }, "tcp_wmem max 0"},
		{func(c *pathConfig) { c.TCPRmem.Default = 0 }, "tcp_rmem default 0"},
		{func(c *pathConfig) { c.AppSndBuf = -1 }, "SO_SNDBUF -1"},
		{func(c *pathConfig) { c.AppSndBuf, c.WmemMax = 64<<10, 0 }, "wmem_max 0"},
		{func(c *pathConfig) { c.RmemMax = 0 }, "rmem_max 0"},
	} {
		c := modelConfig(stack.RouteDirect, 1<<20)
		tc.change(&c)
		if _, err := predictCapacity(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}

// netConfig reads the namespace's settings as the environment records
// them, and names the one it cannot read.
func TestNetConfig(t *testing.T) {
	n := recorder.NetSettings{TCPWmem: "4096\t16384\t1048576\n", TCPRmem: "4096 131072 33554432", WmemMax: "4194304", RmemMax: "212992"}
	var c pathConfig
	if err := netConfig(&n, &c); err != nil || c.TCPWmem.Max != 1<<20 || c.TCPRmem.Default != 131072 || c.WmemMax != 4<<20 || c.RmemMax != 212992 {
		t.Errorf("%+v (%v)", c, err)
	}
	for _, tc := range []struct {
		change func(*recorder.NetSettings)
		want   string
	}{
		{func(n *recorder.NetSettings) { n.TCPWmem = "4096 16384" }, "tcp_wmem"},
		{func(n *recorder.NetSettings) { n.TCPRmem = "" }, "tcp_rmem"},
		{func(n *recorder.NetSettings) { n.WmemMax = "lots" }, `net.core.wmem_max "lots"`},
		{func(n *recorder.NetSettings) { n.RmemMax = "-1" }, `net.core.rmem_max "-1"`},
	} {
		bad := n
		tc.change(&bad)
		if err := netConfig(&bad, &pathConfig{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
	if err := netConfig(nil, &pathConfig{}); err == nil {
		t.Error("no settings: no error")
	}
}

// cellOf writes a cell's results directory: one ok run of route whose two
// downloads had inFlight bytes in flight at most and took appSend seconds
// to send, and returns the row cellRows makes of it with the model's
// prediction from c.
func cellOf(t *testing.T, c pathConfig, inFlight int64, appSend float64) recorder.SweepCell {
	t.Helper()
	const size, rate = 16 << 20, 2 << 20
	dir := t.TempDir()
	run := recorder.Run{RunID: "run1", Route: string(c.Route), Server: "sync-2", SlowClients: 2, Status: recorder.RunOK}
	var hops []recorder.Hop
	var larges []recorder.LargeResponse
	for d := range 2 {
		for i, ts := range []float64{0.05, 0.1, 0.15} {
			w := min(size, inFlight+int64(i)*rate/20)
			hops = append(hops, recorder.Hop{RunID: "run1", TS: ts, Download: d, Hop: recorder.HopAppWritten, Bytes: w, Source: "sock_diag"},
				recorder.Hop{RunID: "run1", TS: ts, Download: d, Hop: recorder.HopClientRead, Bytes: w - inFlight, Source: "sock_diag"})
		}
		larges = append(larges, recorder.LargeResponse{RunID: "run1", Route: run.Route, Server: "sync-2", SlowClients: 2, Client: d,
			Status: 200, Bytes: size, ReceiveS: 8, AppSendS: recorder.Some(appSend), Complete: true, Outcome: recorder.DownloadComplete})
	}
	write(t, dir, []recorder.Run{run})
	write(t, dir, hops)
	write(t, dir, larges)
	res := &slowclient.Result{Dir: dir, Runs: []recorder.Run{run},
		Conditions: []recorder.Condition{{Route: run.Route, Server: "sync-2", SlowClients: 2, Runs: 1, P95MS: recorder.Some(3000)}}}
	p, err := predictCapacity(c)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := cellRows(res, dir, "cell", size, rate, map[stack.Route]pathCapacity{c.Route: p})
	if err != nil || len(cells) != 1 {
		t.Fatalf("cellRows: %d cells, %v", len(cells), err)
	}
	return cells[0]
}

func write[T recorder.Row[T]](t *testing.T, dir string, rows []T) {
	t.Helper()
	w, err := recorder.CreateFile[T](dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := recorder.ReadFile[T](filepath.Join(dir, recorder.FileName[T]())); err != nil {
		t.Fatal(err)
	}
}

// The prediction comes from configuration: other samples (twice the bytes
// in flight, half the send time) change the measured columns and not the
// predicted ones; another tcp_wmem maximum or SO_RCVBUF changes the
// predicted ones and not the measured.
func TestPredictionIsFromConfigurationOnly(t *testing.T) {
	c := modelConfig(stack.RouteBufferingOff, 1<<20)
	a := cellOf(t, c, 3<<20, 6.5)
	pred := func(cell recorder.SweepCell) [4]recorder.Maybe {
		return [4]recorder.Maybe{cell.CapacityPredictedBytes, cell.AppSendPredictedS, cell.PredictedAppSendS, {}}
	}
	meas := func(cell recorder.SweepCell) [4]recorder.Maybe {
		return [4]recorder.Maybe{cell.CapacityMeasuredBytes, cell.AppSendMeasuredS, cell.CapacityBytes, cell.AppSendS}
	}
	// 1 MiB app send + 128 KiB + 16 KiB proxy + 1 MiB proxy send + 16 KiB client.
	wantCap := float64(2<<20 + 160<<10)
	if a.CapacityPredictedBytes != recorder.Some(wantCap) || a.AppSendPredictedS != recorder.Some((16<<20-wantCap)/(2<<20)) ||
		a.PredictedAppSendS != a.AppSendPredictedS || a.CapacityMeasuredBytes != recorder.Some(3<<20) || a.AppSendMeasuredS != recorder.Some(6.5) {
		t.Fatalf("cell %+v", a)
	}
	if want := (6.5 - a.AppSendPredictedS.Value) / a.AppSendPredictedS.Value * 100; a.PredictionErrorPct != recorder.Some(want) {
		t.Errorf("error %v, want %v%%", a.PredictionErrorPct, want)
	}

	b := cellOf(t, c, 6<<20, 3.2)
	if pred(b) != pred(a) {
		t.Errorf("other samples changed the prediction: %v -> %v", pred(a), pred(b))
	}
	if meas(b) == meas(a) || b.CapacityMeasuredBytes != recorder.Some(6<<20) || b.AppSendMeasuredS != recorder.Some(3.2) {
		t.Errorf("other samples: measured %v -> %v, want 6 MiB and 3.2 s", meas(a), meas(b))
	}

	wider := modelConfig(stack.RouteBufferingOff, 4<<20)
	w := cellOf(t, wider, 3<<20, 6.5)
	if w.CapacityPredictedBytes.Value != a.CapacityPredictedBytes.Value+2*(3<<20) || !(w.AppSendPredictedS.Value < a.AppSendPredictedS.Value) {
		t.Errorf("tcp_wmem max 1m -> 4m: capacity %v -> %v, app_send %v -> %v; want 6 MiB more (two send buffers) and a shorter send",
			a.CapacityPredictedBytes, w.CapacityPredictedBytes, a.AppSendPredictedS, w.AppSendPredictedS)
	}
	rcv := modelConfig(stack.RouteBufferingOff, 1<<20)
	rcv.ClientRcvBuf = 1 << 20
	r := cellOf(t, rcv, 3<<20, 6.5)
	if r.CapacityPredictedBytes.Value != a.CapacityPredictedBytes.Value+(2<<20)-(16<<10) {
		t.Errorf("SO_RCVBUF 8k -> 1m: capacity %v -> %v, want 2 MiB - 16 KiB more", a.CapacityPredictedBytes, r.CapacityPredictedBytes)
	}
	if meas(w) != meas(a) || meas(r) != meas(a) {
		t.Errorf("the configuration changed the measured columns: %v, %v, %v", meas(a), meas(w), meas(r))
	}
}

// predictAppSend is clamped at 0 where the path holds the whole response.
func TestPredictAppSend(t *testing.T) {
	if got := predictAppSend(16<<20, 2<<20, 4<<20); got != 6 {
		t.Errorf("16 MiB, 4 MiB path, 2 MiB/s: %v s, want 6", got)
	}
	if got := predictAppSend(8<<20, 1<<20, 34<<20); got != 0 {
		t.Errorf("8 MiB through a 34 MiB path: %v s, want 0", got)
	}
}
