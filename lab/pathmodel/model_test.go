package pathmodel

import (
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// modelConfig is a path of route under tcp_wmem max wmem: tcp_rmem's
// default 128 KiB, wmem_max and rmem_max 4 MiB, the slow client's 8 KiB
// SO_RCVBUF, the lab's proxy buffers.
func modelConfig(route stack.Route, wmem int64) Config {
	return Config{Route: route, TCPWmem: recorder.TCPMem{Min: 4096, Default: 16384, Max: wmem},
		TCPRmem: recorder.TCPMem{Min: 4096, Default: 131072, Max: 32 << 20}, WmemMax: 4 << 20, RmemMax: 4 << 20,
		ClientRcvBuf: 8 << 10, Proxy: stack.Deployment{}.ResponseBuffers()}
}

// Each hop as the kernel or the proxy's configuration sizes it.
func TestPredictCapacity(t *testing.T) {
	const k, m = 1 << 10, 1 << 20
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   Capacity
	}{
		{"direct: autotuned send buffer up to tcp_wmem max, SO_RCVBUF doubled", func(c *Config) {},
			Capacity{AppSend: 1 * m, ClientRecv: 16 * k}},
		{"buffering off: the proxy's receive buffer at tcp_rmem's default (growing to its max), proxy_buffer_size, its send buffer autotuned",
			func(c *Config) { c.Route = stack.RouteBufferingOff },
			Capacity{AppSend: 1 * m, ProxyRecv: 128 * k, ProxyMemory: 16 * k, ProxySend: 1 * m, ClientRecv: 16 * k, ProxyRecvMax: 32 * m}},
		{"buffering on: proxy_buffer_size + proxy_buffers in memory, proxy_max_temp_file_size on disk",
			func(c *Config) { c.Route = stack.RouteBufferingOn },
			Capacity{AppSend: 1 * m, ProxyRecv: 128 * k, ProxyMemory: 80 * k, ProxyTempFile: 32 * m, ProxySend: 1 * m, ClientRecv: 16 * k, ProxyRecvMax: 32 * m}},
		{"buffering on without a temp file", func(c *Config) {
			c.Route, c.Proxy.MaxTempFileSize = stack.RouteBufferingOn, 0
		}, Capacity{AppSend: 1 * m, ProxyRecv: 128 * k, ProxyMemory: 80 * k, ProxySend: 1 * m, ClientRecv: 16 * k, ProxyRecvMax: 32 * m}},
		{"the app sets SO_SNDBUF 64k: doubled", func(c *Config) { c.AppSndBuf = 64 * k },
			Capacity{AppSend: 128 * k, ClientRecv: 16 * k}},
		{"SO_SNDBUF above wmem_max: capped, then doubled", func(c *Config) { c.AppSndBuf = 64 * m },
			Capacity{AppSend: 8 * m, ClientRecv: 16 * k}},
		{"SO_SNDBUF 1: the kernel's minimum", func(c *Config) { c.AppSndBuf = 1 },
			Capacity{AppSend: 4608, ClientRecv: 16 * k}},
		{"SO_RCVBUF above rmem_max: capped, then doubled", func(c *Config) { c.ClientRcvBuf = 64 * m },
			Capacity{AppSend: 1 * m, ClientRecv: 8 * m}},
		{"no SO_RCVBUF: tcp_rmem's default", func(c *Config) { c.ClientRcvBuf = 0 },
			Capacity{AppSend: 1 * m, ClientRecv: 128 * k}},
	} {
		c := modelConfig(stack.RouteDirect, 1*m)
		tc.change(&c)
		got, err := Predict(c)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v (%v), want %+v", tc.name, got, err, tc.want)
		}
	}
	if p := (Capacity{AppSend: 1 << 20, ProxyRecv: 128 << 10, ProxyRecvMax: 6 << 20}); p.Total() != 1<<20+128<<10 || p.Most() != 7<<20 {
		t.Errorf("total %d, most %d: want the proxy's receive buffer at its default, then at its max", p.Total(), p.Most())
	}
	if p := (Capacity{AppSend: 1 << 20, ClientRecv: 16 << 10}); p.Total() != 1<<20+16<<10 || p.Most() != p.Total() ||
		p.String() != "1.02 MiB: app send 1m + client receive 16k" {
		t.Errorf("total %d, %q", p.Total(), p.String())
	}
}

// A configuration the model cannot read is refused, naming what is wrong.
func TestPredictCapacityRefuses(t *testing.T) {
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Route = "sideways" }, `route "sideways"`},
		{func(c *Config) { c.TCPWmem.Max = 0 }, "tcp_wmem max 0"},
		{func(c *Config) { c.TCPRmem.Default = 0 }, "tcp_rmem default 0"},
		{func(c *Config) { c.AppSndBuf = -1 }, "SO_SNDBUF -1"},
		{func(c *Config) { c.AppSndBuf, c.WmemMax = 64<<10, 0 }, "wmem_max 0"},
		{func(c *Config) { c.RmemMax = 0 }, "rmem_max 0"},
	} {
		c := modelConfig(stack.RouteDirect, 1<<20)
		tc.change(&c)
		if _, err := Predict(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}

// NetConfig reads the namespace's settings as the environment records
// them, and names the one it cannot read.
func TestNetConfig(t *testing.T) {
	n := recorder.NetSettings{TCPWmem: "4096\t16384\t1048576\n", TCPRmem: "4096 131072 33554432", WmemMax: "4194304", RmemMax: "212992"}
	var c Config
	if err := NetConfig(&n, &c); err != nil || c.TCPWmem.Max != 1<<20 || c.TCPRmem.Default != 131072 || c.WmemMax != 4<<20 || c.RmemMax != 212992 {
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
		if err := NetConfig(&bad, &Config{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
	if err := NetConfig(nil, &Config{}); err == nil {
		t.Error("no settings: no error")
	}
}

// AppSend is clamped at 0 where the path holds the whole response.
func TestPredictAppSend(t *testing.T) {
	if got := AppSend(16<<20, 2<<20, 4<<20); got != 6 {
		t.Errorf("16 MiB, 4 MiB path, 2 MiB/s: %v s, want 6", got)
	}
	if got := AppSend(8<<20, 1<<20, 34<<20); got != 0 {
		t.Errorf("8 MiB through a 34 MiB path: %v s, want 0", got)
	}
}
