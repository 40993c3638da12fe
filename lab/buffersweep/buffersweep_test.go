package buffersweep

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/kernelnet"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

func TestValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Server = "sync" }, "server: "},
		{func(c *Config) { c.Routes = nil }, "routes: none given"},
		{func(c *Config) { c.Routes = []stack.Route{"sideways"} }, `routes[0] "sideways": allowed direct`},
		{func(c *Config) { c.Sizes = nil }, "sizes: none given"},
		{func(c *Config) { c.Sizes = []lab.Size{1 << 10} }, "sizes[0] 1k: allowed 64k to 1g"},
		{func(c *Config) { c.Rates = []lab.Size{1 << 20, 0} }, "rates[1] 0: allowed 16k to 1g"},
		{func(c *Config) { c.Rates = []lab.Size{1 << 20, 1 << 20} }, "rates[1] 1m: given twice"},
		{func(c *Config) { c.TCPWmemMax = []lab.Size{100} }, "tcp_wmem_max[0] 100: allowed 4k to 1g"},
		{func(c *Config) { c.TCPRmemMax = []lab.Size{2 << 30} }, "tcp_rmem_max[0] 2g: allowed 4k to 1g"},
		{func(c *Config) { c.SlowClients = 0 }, "slow_clients 0: allowed 1 to 100"},
		{func(c *Config) { c.FastRate = 0 }, "fast_rate 0: allowed"},
		{func(c *Config) { c.HopInterval = 0 }, "hop_interval 0s: allowed 10ms to 1s"},
		{func(c *Config) {
			c.Reps, c.TCPWmemMax, c.TCPRmemMax = 100, []lab.Size{1 << 20, 2 << 20, 4 << 20}, []lab.Size{1 << 20, 2 << 20, 4 << 20}
		}, "the grid has 43200 runs: allowed at most 10000"},
	} {
		c := Published()
		tc.change(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
	if err := Published().Validate(); err != nil {
		t.Errorf("published grid: %v", err)
	}
}

func TestKernels(t *testing.T) {
	c := Published()
	if ks := c.kernels(); len(ks) != 1 || !ks[0].host || ks[0].Label() != "host" || ks[0].dir() != "kernel-host" {
		t.Errorf("no limits: %+v, want the host's", ks)
	}
	c.TCPWmemMax = []lab.Size{1 << 20, 16 << 20}
	ks := c.kernels()
	if len(ks) != 2 || ks[0].Label() != "wmem=1m rmem=default" || ks[1].dir() != "kernel-wmem16m-rmemdefault" {
		t.Errorf("wmem list: %+v", ks)
	}
	c.TCPRmemMax = []lab.Size{4 << 20, 8 << 20}
	if ks := c.kernels(); len(ks) != 4 || ks[3].Label() != "wmem=16m rmem=8m" {
		t.Errorf("both lists: every pair, got %+v", ks)
	}
}

// A cell is a slow-client matrix of the routes with /fast for as long as
// the downloads take, within 2 s to 60 s.
func TestCellIsASlowClientMatrix(t *testing.T) {
	c := Published()
	sc := c.slowClient(16<<20, 2<<20)
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(sc.Conditions) != 3 || sc.Conditions[1].Route != stack.RouteBufferingOff || sc.Conditions[0].SlowClients != 2 || sc.Conditions[0].Server != "sync-2" {
		t.Errorf("conditions %+v", sc.Conditions)
	}
	if time.Duration(sc.Fast.Duration) != 8*time.Second || sc.Large.Size != 16<<20 || sc.SlowReader.ReadRate != 2<<20 || sc.Hops.Interval != c.HopInterval {
		t.Errorf("cell config %+v", sc)
	}
	if d := time.Duration(c.slowClient(1<<20, 4<<20).Fast.Duration); d != 2*time.Second {
		t.Errorf("a 0.25 s download: /fast for %s, want the 2 s minimum", d)
	}
}

// The measured capacity is the most a download had in flight, from
// samples whose app_written is known; the cell's measured columns are the
// medians over its downloads of the route.
func TestMeasuredCapacity(t *testing.T) {
	h := func(ts float64, d int, hop string, b int64, src string) recorder.Hop {
		return recorder.Hop{RunID: "r", TS: ts, Download: d, Hop: hop, Bytes: b, Source: src}
	}
	rows := []recorder.Hop{
		h(0.1, 0, recorder.HopAppWritten, 0, recorder.HopSourceMissing), h(0.1, 0, recorder.HopClientRead, 0, "sock_diag"),
		h(0.2, 0, recorder.HopAppWritten, 5<<20, "sock_diag"), h(0.2, 0, recorder.HopClientRead, 1<<20, "sock_diag"),
		h(0.3, 0, recorder.HopAppWritten, 6<<20, "sock_diag"), h(0.3, 0, recorder.HopClientRead, 3<<20, "sock_diag"),
		h(0.2, 1, recorder.HopAppWritten, 2<<20, "derived"), h(0.2, 1, recorder.HopClientRead, 1<<20, "sock_diag"),
	}
	ps := paths(rows)
	if ps["r"][0].capacity != 4<<20 || ps["r"][1].capacity != 1<<20 {
		t.Fatalf("paths %v, want capacities 4 MiB and 1 MiB", ps)
	}
	// Full (within 90% of the peak) from 0.2 s on; then the app wrote 1 MiB.
	if ps["r"][0].step != 1<<20 {
		t.Errorf("wake-up step %d, want 1 MiB", ps["r"][0].step)
	}
	cell := Cell{Route: "direct"}
	summarize(&cell, []download{
		{route: "direct", appSendS: recorder.Some(2.2), capacity: recorder.Some(4 << 20)},
		{route: "direct", appSendS: recorder.Some(1.8), capacity: recorder.Some(4 << 20)},
		{route: "proxy-buffering-on", appSendS: recorder.Some(0.01)},
	})
	if cell.AppSendS != recorder.Some(2) || cell.AppSendMeasuredS != recorder.Some(2) || cell.CapacityBytes != recorder.Some(4<<20) ||
		cell.CapacityMeasuredBytes != recorder.Some(4<<20) {
		t.Errorf("cell %+v", cell)
	}
	if cell.PredictedAppSendS.Valid || cell.AppSendPredictedS.Valid || cell.CapacityPredictedBytes.Valid || cell.PredictionErrorPct.Valid {
		t.Errorf("the samples filled a predicted column: %+v", cell)
	}
}

// TestPrint: the cells table a kernel at a time, its settings above, the
// legend once below.
func TestPrint(t *testing.T) {
	var b bytes.Buffer
	cells := []Cell{{Kernel: "host", TCPWmem: "4096 16384 4194304", TCPRmem: "4096 131072 6291456", Route: "direct",
		SizeBytes: 16 << 20, RateBps: 2 << 20, Runs: 1, RunsOK: 1, FastP95MS: recorder.Some(3786), AppSendS: recorder.Some(4.4),
		PredictedAppSendS: recorder.Some(5.9), PredictionErrorPct: recorder.Some(-25), CapacityBytes: recorder.Some(3 << 20),
		CapacityPredictedBytes: recorder.Some(4 << 20), CapacityMeasuredBytes: recorder.Some(3 << 20),
		AppSendPredictedS: recorder.Some(5.9), AppSendMeasuredS: recorder.Some(4.4)}}
	(&Result{Cells: cells}).Print(&b)
	words := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{"kernel host: tcp_wmem 4096 16384 4194304", "capacity predicted MiB measured MiB error % app_send predicted s measured s error %"} {
		if !strings.Contains(words, want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	// The row: capacity predicted, measured and its error, then app_send's.
	row := "direct 16m 2m 1/1 3786.0 4.00 3.00 -25 5.90 4.40 -25"
	if !slices.ContainsFunc(strings.Split(b.String(), "\n"), func(l string) bool { return strings.Join(strings.Fields(l), " ") == row }) {
		t.Errorf("table lacks the row %q:\n%s", row, b.String())
	}
	// A second kernel: its own settings and header above its rows, the
	// legend once, after both.
	second := cells[0]
	second.Kernel, second.TCPWmem = "wmem=1m rmem=default", "4096 16384 1048576"
	b.Reset()
	(&Result{Cells: append(cells, second)}).Print(&b)
	if n := strings.Count(strings.Join(strings.Fields(b.String()), " "), "route size rate/s"); n != 2 || strings.Count(b.String(), "predicted: before the run") != 1 ||
		!strings.Contains(b.String(), "\nkernel wmem=1m rmem=default: tcp_wmem 4096 16384 1048576") {
		t.Errorf("two kernels: %d headers, want 2 and the legend once:\n%s", n, b.String())
	}
	b.Reset()
	(&Result{}).Print(&b)
	if !strings.Contains(b.String(), "no cell completed") {
		t.Errorf("empty sweep: %q", b.String())
	}
}

// A session that says it is in a namespace but is in its parent's does
// not touch a sysctl.
func TestChildRefusesTheHostNamespace(t *testing.T) {
	ino, err := netnsInode()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(kernelnet.NetnsEnv, "wmem=1m rmem=default")
	t.Setenv(parentEnv, strconv.FormatUint(ino, 10))
	before, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem")
	c := Published()
	c.TCPWmemMax = []lab.Size{1 << 20}
	if err := c.enterKernel(); err == nil || !strings.Contains(err.Error(), "refusing to change the host's socket buffer settings") {
		t.Errorf("enterKernel in the parent's namespace: %v", err)
	}
	os.Unsetenv(parentEnv)
	if err := c.enterKernel(); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("enterKernel without the parent's namespace: %v", err)
	}
	if after, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem"); !bytes.Equal(before, after) {
		t.Errorf("tcp_wmem changed: %q -> %q", before, after)
	}
}

// TestFastHeldRefuses feeds checkFastHeld the p95 of the run
// TestBufferSweepRealWmem saw (3,755 ms with the first worker freed after
// 4.376 s) and corrupted ones: /fast unblocked while both workers were
// held, /fast waiting long after one was freed, a missing app_send, a
// download missing.
func TestFastHeldRefuses(t *testing.T) {
	sc := Published().slowClient(16<<20, 2<<20)
	cell := func(p95 float64) Cell {
		return Cell{Kernel: "wmem=4m", Runs: 1, FastP95MS: recorder.Some(p95)}
	}
	seen := []download{{appSendS: recorder.Some(4.376)}, {appSendS: recorder.Some(4.928)}}
	if err := checkFastHeld(sc, cell(3755.2), seen); err != nil {
		t.Errorf("the measured run: %v", err)
	}
	for _, tc := range []struct {
		cell Cell
		ds   []download
		want string
	}{
		{cell(2), seen, "/fast p95 {2 true} ms, both workers held 4.38 s: want 3076 to 4751 ms"},
		{cell(6000), seen, "want 3076 to 4751 ms"},
		{cell(3755.2), []download{seen[0], {}}, "a download without app_send"},
		{cell(3755.2), seen[:1], "1 downloads: want one run of 2"},
	} {
		if err := checkFastHeld(sc, tc.cell, tc.ds); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("p95 %v, downloads %+v: %v, want %q", tc.cell.FastP95MS, tc.ds, err, tc.want)
		}
	}
}
