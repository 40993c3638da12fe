package buffersweep

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/kernelnet"
	"github.com/slowlab/slowlab/lab/slowclient"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

func TestMain(m *testing.M) { os.Exit(slowlabtest.Main(m)) }

// sweep runs c on stackName and returns its cells, checking what every
// sweep must have: sweep.csv as returned, every run ok, each cell's own
// results directory with bytes conserved at every hop sample.
func sweep(t *testing.T, c *Config, stackName string) (*lab.Env, []Cell) {
	t.Helper()
	env := labtest.Env(t, stackName)
	env.Scenario = nil
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	cells := r.(*Result).Cells
	onDisk, err := recorder.ReadFile[Cell](filepath.Join(env.Out, "sweep.csv"))
	if err != nil || len(onDisk) != len(cells) {
		t.Fatalf("sweep.csv: %d rows (%v), returned %d", len(onDisk), err, len(cells))
	}
	for _, cell := range cells {
		if cell.Runs != c.Reps || cell.RunsOK != cell.Runs {
			t.Errorf("%s %s %s: %d of %d runs ok", cell.Kernel, cell.Route, cell.Dir, cell.RunsOK, cell.Runs)
		}
		rows, err := recorder.ReadFile[recorder.Hop](filepath.Join(env.Out, cell.Dir, "hops.csv"))
		if err != nil || len(rows) == 0 {
			t.Fatalf("%s: hops.csv: %d rows, %v", cell.Dir, len(rows), err)
		}
		labtest.CheckConserved(t, cell.Dir, rows)
	}
	return env, cells
}

// checkPrediction checks what the samples say against the app's send log
// and logs the model's prediction beside them. The path model's columns
// must be there (they are made before the run) and are logged, not judged
// here (TestModelErrorEmbedded and TestModelErrorReal judge them, on
// cells whose path filled). The samples are judged:
// where the download is clearly larger than the measured capacity (by a
// quarter of its size or more), the app's measured send time lies between
// what that capacity implies, (size - capacity) / rate, and that plus the
// time to read one wake-up step (the most the app wrote between two
// samples once the path was full: a writer blocked on a full socket is
// woken only when a third of its buffer is free), each widened by 20% and
// two hop intervals (the samples' own resolution). Nearer the boundary the
// cells are logged, not judged.
func checkPrediction(t *testing.T, c *Config, cells []Cell) {
	t.Helper()
	res := time.Duration(c.HopInterval).Seconds()
	for _, c := range cells {
		if !c.CapacityPredictedBytes.Valid || !c.AppSendPredictedS.Valid || c.PredictedAppSendS != c.AppSendPredictedS {
			t.Errorf("%s %s: capacity predicted %v, app_send predicted %v (predicted_app_send_s %v): want the model's",
				c.Kernel, c.Route, c.CapacityPredictedBytes, c.AppSendPredictedS, c.PredictedAppSendS)
		}
		if !c.CapacityMeasuredBytes.Valid || !c.AppSendMeasuredS.Valid {
			t.Errorf("%s %s: capacity %v, app_send %v: want both measured", c.Kernel, c.Route, c.CapacityMeasuredBytes, c.AppSendMeasuredS)
			continue
		}
		obs := c.AppSendMeasuredS.Value
		implied := max(0, float64(c.SizeBytes)-c.CapacityMeasuredBytes.Value) / float64(c.RateBps)
		step := c.WakeStepBytes.Value / float64(c.RateBps)
		line := fmt.Sprintf("%s %s %s at %s/s: app_send %.2f s; the model: %.2f s from capacity %.2f MiB; the samples: %.2f s (+%.2f s for a %.2f MiB wake-up step) from capacity %.2f MiB",
			c.Kernel, c.Route, fmtSize(c.SizeBytes), fmtSize(c.RateBps), obs, c.AppSendPredictedS.Value, c.CapacityPredictedBytes.Value/(1<<20),
			implied, step, c.WakeStepBytes.Value/(1<<20), c.CapacityMeasuredBytes.Value/(1<<20))
		if float64(c.SizeBytes)-c.CapacityMeasuredBytes.Value < float64(c.SizeBytes)/4 {
			t.Logf("%s (near or within the path's capacity: not judged)", line)
			continue
		}
		if obs < 0.8*implied-2*res || obs > 1.2*(implied+step)+2*res {
			t.Errorf("%s: want within 20%% of what the samples imply", line)
		} else {
			t.Log(line)
		}
	}
}

func fmtSize(n int64) string { return fmt.Sprintf("%.1fm", float64(n)/(1<<20)) }

func byRoute(cells []Cell) map[string]Cell {
	m := map[string]Cell{}
	for _, c := range cells {
		m[c.Kernel+"/"+c.Route] = c
	}
	return m
}

// TestBufferSweepShape runs one cell (16 MiB at 4 MiB/s) on every route on
// the embedded stack under the host's socket buffers: behind a buffering
// proxy the whole response fits in the path and the app is released at
// once; directly it does not (the host's tcp_wmem max is well under
// 16 MiB). The model's capacities are what the host's settings give.
func TestBufferSweepShape(t *testing.T) {
	slowlabtest.Timing(t)
	c := Published()
	c.Sizes, c.Rates = []lab.Size{16 << 20}, []lab.Size{4 << 20}
	env, cells := sweep(t, c, stack.NameEmbedded)
	if len(cells) != 3 {
		t.Fatalf("%d cells, want one per route", len(cells))
	}
	got := byRoute(cells)
	on := got["host/"+string(stack.RouteBufferingOn)]
	// The whole response in the path, the app released long before the
	// reader would release it: a sample that saw the app done while the
	// client had read at most half. (Bounds from the clock, the app's send
	// time under 0.5 s and a capacity from it and two hop intervals,
	// failed on loaded machines: 0.83 s, a sample 0.1 s late.)
	read, sample := wholeInPath(t, filepath.Join(env.Out, on.Dir), string(stack.RouteBufferingOn), on.SizeBytes)
	if read > on.SizeBytes/2 || !(on.CapacityBytes.Value >= float64(on.SizeBytes)/2) {
		t.Errorf("buffering on: capacity %v, app_send %v; the client had read %d of %d bytes at the first sample with the app done (%s): want the whole response in the path, the app released before the client read half",
			on.CapacityBytes, on.AppSendS, read, on.SizeBytes, sample)
	}
	// The same check fails where the slow reader holds the app: directly,
	// the app finishes only once the client has read all but the send
	// buffer.
	if d := got["host/"+string(stack.RouteDirect)]; true {
		if read, sample := wholeInPath(t, filepath.Join(env.Out, d.Dir), string(stack.RouteDirect), d.SizeBytes); read <= d.SizeBytes/2 || read > d.SizeBytes {
			t.Errorf("direct: the client had read %d of %d bytes when the app was done (%s): want a sample of the app done, the client past half", read, d.SizeBytes, sample)
		}
	}
	// The model, from the host's tcp_wmem as sweep.csv records it: the
	// direct path is the app's send buffer (autotuned to tcp_wmem's
	// maximum) and the client's 8 KiB SO_RCVBUF doubled; buffering on
	// holds the whole response (its temp file alone is 32 MiB).
	wmem, err := recorder.NetSettings{TCPWmem: on.TCPWmem}.TCPMem("tcp_wmem")
	if err != nil {
		t.Fatal(err)
	}
	if d := got["host/direct"]; d.CapacityPredictedBytes != recorder.Some(float64(wmem.Max+16<<10)) ||
		!(on.CapacityPredictedBytes.Value > float64(on.SizeBytes)) || on.AppSendPredictedS != recorder.Some(0) {
		t.Errorf("predicted capacity: direct %v with tcp_wmem %q, buffering on %v (app_send %v): want tcp_wmem's max + 16 KiB, and more than the response",
			d.CapacityPredictedBytes, on.TCPWmem, on.CapacityPredictedBytes, on.AppSendPredictedS)
	}
	if d := got["host/direct"]; d.AppSendS.Value < 1 || d.FastP95MS.Value < 500 || !(d.CapacityBytes.Value < float64(d.SizeBytes)/2) {
		t.Errorf("direct: app_send %v s, /fast p95 %v ms, capacity %v: want the app held by the slow readers", d.AppSendS, d.FastP95MS, d.CapacityBytes)
	}
	checkPrediction(t, c, cells)
	sessions, err := recorder.ReadEnvironment(env.Out)
	if err != nil || sessions[0].Net == nil || sessions[0].Net.Namespace != kernelnet.HostNamespace || cells[0].TCPWmem != sessions[0].Net.TCPWmem {
		t.Errorf("environment %+v (%v): want the host's net settings, as in sweep.csv (%q)", sessions, err, cells[0].TCPWmem)
	}
}

// TestBufferSweepKernelNamespaces sweeps tcp_wmem's maximum (1 MiB, 16 MiB)
// for buffering off, each in a network namespace of its own: 16 MiB read
// at 4 MiB/s holds the app with 1 MiB socket buffers and not with 16 MiB,
// as the capacity measured in each namespace predicts, and the host's
// setting is never touched.
func TestBufferSweepKernelNamespaces(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "network namespaces for tcp_wmem")
	host, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem")
	c := Published()
	c.Routes, c.Sizes, c.Rates = []stack.Route{stack.RouteBufferingOff}, []lab.Size{16 << 20}, []lab.Size{4 << 20}
	c.TCPWmemMax = []lab.Size{1 << 20, 16 << 20}
	env, cells := sweep(t, c, stack.NameEmbedded)
	if after, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem"); string(after) != string(host) {
		t.Errorf("the host's tcp_wmem changed: %q -> %q", host, after)
	}
	got := byRoute(cells)
	small, big := got["wmem=1m rmem=default/proxy-buffering-off"], got["wmem=16m rmem=default/proxy-buffering-off"]
	if !strings.HasSuffix(small.TCPWmem, " 1048576") || !strings.HasSuffix(big.TCPWmem, " 16777216") {
		t.Fatalf("tcp_wmem recorded %q and %q, want maxima 1048576 and 16777216 (cells %+v)", small.TCPWmem, big.TCPWmem, cells)
	}
	// Held by the reader, the 1 MiB app sends for (size - capacity) / rate,
	// about 3.4 s, however idle the machine; released, the 16 MiB app's
	// send is the buffers' autotuning and its CPU (0.15 to 0.7 s seen):
	// judged as less than half of the held one's, not in idle-machine
	// figures.
	if !(small.AppSendS.Value > 2*big.AppSendS.Value) || !(small.CapacityBytes.Value < big.CapacityBytes.Value) {
		t.Errorf("app_send %v s (1 MiB) vs %v s (16 MiB), capacity %v vs %v: want the larger buffers to release the app (under half the app_send)",
			small.AppSendS, big.AppSendS, small.CapacityBytes, big.CapacityBytes)
	}
	checkPrediction(t, c, cells)
	// The model reads each namespace's tcp_wmem: 15 MiB more in each of
	// the two autotuned send buffers of the buffering-off path (the app's
	// and the proxy's to the client), whatever the samples say.
	if d := big.CapacityPredictedBytes.Value - small.CapacityPredictedBytes.Value; d != 2*15<<20 {
		t.Errorf("predicted capacity %v (1 MiB) and %v (16 MiB): %v bytes apart, want 30 MiB", small.CapacityPredictedBytes, big.CapacityPredictedBytes, d)
	}
	for _, k := range []string{"kernel-wmem1m-rmemdefault", "kernel-wmem16m-rmemdefault"} {
		sessions, err := recorder.ReadEnvironment(filepath.Join(env.Out, k))
		if err != nil || sessions[0].Net == nil || !strings.HasPrefix(sessions[0].Net.Namespace, "wmem=") {
			t.Errorf("%s: environment %+v (%v): want the namespace's net settings", k, sessions, err)
		} else if sessions[0].Stack != stack.NameEmbedded {
			t.Errorf("%s: the namespace's session ran on stack %q, want the parent's %q", k, sessions[0].Stack, stack.NameEmbedded)
		}
	}
}

// TestBufferSweepRealWmem reproduces, on real Gunicorn sync-2 and NGINX
// with buffering off, the tcp_wmem table of issue #19 (16 MiB read at
// 2 MiB/s by 2 slow clients): the larger the socket buffer maxima, the
// sooner the app is released and the less /fast waits. With 1 MiB the
// path holds at most 8 MiB (two 1 MiB send buffers and NGINX's upstream
// receive buffer, autotuned up to tcp_rmem's 6 MiB), so both workers are
// held for 4 s or more and /fast waits seconds; with 4 MiB the path holds
// 8 to 14 MiB, how much depending on how far the kernel grew that receive
// buffer in this run, so the app is held 1 to 4 s; with 16 MiB the
// response fits in the sockets. In every cell /fast waits exactly as long
// as both workers are held (fastHeldBounds), and the hop samples show the
// buffers that grew: the app's send queue and NGINX's to the client.
func TestBufferSweepRealWmem(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "network namespaces for tcp_wmem")
	c := Published()
	c.Routes, c.Sizes, c.Rates = []stack.Route{stack.RouteBufferingOff}, []lab.Size{16 << 20}, []lab.Size{2 << 20}
	c.TCPWmemMax = []lab.Size{1 << 20, 4 << 20, 16 << 20}
	env, cells := sweep(t, c, stack.NameReal)
	got := byRoute(cells)
	k := func(w string) Cell { return got["wmem="+w+" rmem=default/proxy-buffering-off"] }
	w1, w4, w16 := k("1m"), k("4m"), k("16m")
	sc := c.slowClient(16<<20, 2<<20)
	for _, cell := range []Cell{w1, w4, w16} {
		ds, err := downloads(filepath.Join(env.Out, cell.Dir))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: /fast p95 %.1f ms, app_send %.2f s, capacity %.2f MiB", cell.Kernel, cell.FastP95MS.Value, cell.AppSendS.Value, cell.CapacityBytes.Value/(1<<20))
		for i, d := range ds {
			t.Logf("  download %d: app_send %v s, capacity %v bytes", i, d.appSendS, d.capacity)
		}
		if err := checkFastHeld(sc, cell, ds); err != nil {
			t.Error(err)
		}
	}
	// The finding: /fast starved for seconds with 1 MiB, far less with
	// 16 MiB (on an idle machine p95 tens of ms; on a loaded one the app's
	// 0.25 CPU writes 16 MiB in up to 2.9 s, p95 then up to 2.3 s); the
	// app's send time falls as the buffers grow. (A p95 of seconds with
	// 4 MiB is not a property of the path: a CI run held one download
	// 1.2 s, p95 0.59 s, the other 4.4 s.)
	if !(w1.FastP95MS.Value > 1000 && w16.FastP95MS.Value < w1.FastP95MS.Value/3) {
		t.Errorf("/fast p95 %v, %v, %v ms: want seconds with 1 MiB, under a third of that with 16 MiB", w1.FastP95MS, w4.FastP95MS, w16.FastP95MS)
	}
	if !(w1.AppSendS.Value > w4.AppSendS.Value && w4.AppSendS.Value > w16.AppSendS.Value) {
		t.Errorf("app_send %v, %v, %v s: want falling as the buffers grow", w1.AppSendS, w4.AppSendS, w16.AppSendS)
	}
	checkPrediction(t, c, cells)
	peaks := func(cell Cell) map[string]int64 {
		rows, err := recorder.ReadFile[recorder.Hop](filepath.Join(env.Out, cell.Dir, "hops.csv"))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int64{}
		for _, r := range rows {
			m[r.Hop] = max(m[r.Hop], r.Bytes)
		}
		return m
	}
	p1, p16 := peaks(w1), peaks(w16)
	for _, hop := range recorder.HopsInTransit {
		t.Logf("%s peak: %.2f MiB with 1 MiB buffers, %.2f MiB with 16 MiB", hop, float64(p1[hop])/(1<<20), float64(p16[hop])/(1<<20))
	}
	// The send queues grow with tcp_wmem. NGINX's to the client, which the
	// slow reader fills, by an order of magnitude; the app's behind it by
	// how far autotuning grew it in this run (2.4 to 6.3 MiB were seen in
	// runs of the same cell), so only past what a 1 MiB buffer can hold.
	if hop := recorder.HopProxyClientSendQueue; p16[hop] < 4*p1[hop] || p16[hop] < 2<<20 {
		t.Errorf("%s peaked at %d bytes (1 MiB buffers) and %d (16 MiB): want the larger buffers to hold megabytes", hop, p1[hop], p16[hop])
	}
	if hop := recorder.HopAppSendQueue; p1[hop] > 3<<19 || p16[hop] < 3<<19 {
		t.Errorf("%s peaked at %d bytes (1 MiB buffers) and %d (16 MiB): want at most and more than 1.5 MiB", hop, p1[hop], p16[hop])
	}
}

// fastHeldBounds is where /fast's p95 (ms) must lie in a run of sc's
// (Gunicorn sync-2, two slow clients) whose first download to release its
// worker did so after held seconds of sending: until then no worker takes
// /fast, so a request sent at t (from Fast.Offset on, one every 1/Rate s)
// waits held - t, and the nearest-rank p95 of its n requests is the k-th
// longest wait, k = n - ceil(0.95 n) + 1: held - offset - (k-1)/rate.
// Below, widened by 10% and 0.3 s; above, by 1 s (the app may begin its
// send after the schedule's start, which lengthens every wait).
func fastHeldBounds(sc *slowclient.Config, held float64) (lo, hi float64) {
	n := int(sc.Fast.Rate * time.Duration(sc.Fast.Duration).Seconds())
	k := n - int(math.Ceil(0.95*float64(n))) + 1
	want := held - time.Duration(sc.Fast.Offset).Seconds() - float64(k-1)/sc.Fast.Rate
	return max(0, 0.9*want-0.3) * 1000, (max(0, want) + 1) * 1000
}

// checkFastHeld checks cell's /fast p95 against fastHeldBounds for the
// shortest app_send of its downloads ds (one run: a cell of several runs
// has a p95 per run, and is refused).
func checkFastHeld(sc *slowclient.Config, cell Cell, ds []download) error {
	if cell.Runs != 1 || len(ds) != sc.Conditions[0].SlowClients {
		return fmt.Errorf("%s: %d runs, %d downloads: want one run of %d", cell.Kernel, cell.Runs, len(ds), sc.Conditions[0].SlowClients)
	}
	held := math.Inf(1)
	for _, d := range ds {
		if !d.appSendS.Valid {
			return fmt.Errorf("%s: a download without app_send", cell.Kernel)
		}
		held = min(held, d.appSendS.Value)
	}
	lo, hi := fastHeldBounds(sc, held)
	if p := cell.FastP95MS.Value; !cell.FastP95MS.Valid || p < lo || p > hi {
		return fmt.Errorf("%s: /fast p95 %v ms, both workers held %.2f s: want %.0f to %.0f ms", cell.Kernel, cell.FastP95MS, held, lo, hi)
	}
	return nil
}

// wholeInPath returns, over route's downloads in dir's hops.csv, the
// fewest bytes the client had read at a sample where the app had written
// all size bytes of the body (and its head), and that sample; size+1 when
// no sample saw the app done.
func wholeInPath(t *testing.T, dir, route string, size int64) (read int64, sample string) {
	t.Helper()
	rows, err := recorder.ReadFile[recorder.Hop](filepath.Join(dir, "hops.csv"))
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		run string
		d   int
		ts  float64
	}
	done := map[key]bool{}
	var most int64
	for _, r := range rows {
		if strings.HasPrefix(r.RunID, route+".") && r.Hop == recorder.HopAppWritten && r.Source != recorder.HopSourceMissing {
			most = max(most, r.Bytes)
			done[key{r.RunID, r.Download, r.TS}] = r.Bytes >= size // the body and the response's head
		}
	}
	read, sample = size+1, fmt.Sprintf("none: the most the app had written at a sample was %d", most)
	for _, r := range rows {
		if k := (key{r.RunID, r.Download, r.TS}); r.Hop == recorder.HopClientRead && done[k] && r.Bytes < read {
			read, sample = r.Bytes, fmt.Sprintf("%s download %d at %.2f s", r.RunID, r.Download, r.TS)
		}
	}
	return read, sample
}
