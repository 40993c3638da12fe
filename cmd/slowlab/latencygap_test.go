package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/recorder"
	"github.com/vishvananda/netlink"
)

// TestLatencyGapShape runs the published latency-gap conditions with fewer
// runs, in namespaces over a real delayed path (netem, or the TUN delay
// line where the kernel has no netem), and asserts the shape of
// EXPERIMENTS.md section 3. Needs root; skipped otherwise unless CI=true.
func TestLatencyGapShape(t *testing.T) {
	requireRoot(t, "latency-gap's network namespaces")
	e := lab.DefaultLatencyGap()
	e.Runs = 15
	out := t.TempDir()
	res, err := lab.RunLatencyGap(context.Background(), e, lab.Options{Out: out, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	lab.PrintLatencyGap(&table, res.Rows)
	t.Logf("\n%s", table.String())
	checkNoNamespaceLeft(t)

	type key struct {
		size int
		rtt  float64
	}
	rows := map[key]lab.LatencyGapRow{}
	for _, r := range res.Rows {
		rows[key{r.Gap.SizeBytes, r.Gap.RTTMS}] = r
		if r.Gap.Runs != e.Runs || !r.Path.Valid || r.Path.Dropped != 0 {
			t.Errorf("%d bytes, RTT %g ms: %d ok runs of %d, path %+v", r.Gap.SizeBytes, r.Gap.RTTMS, r.Gap.Runs, e.Runs, r.Path)
		}
	}
	if len(rows) != 4 {
		t.Fatalf("%d conditions, want 4", len(rows))
	}
	ka1, new1, new100 := rows[key{1024, 50}].Gap.ClientKeepaliveMS.Value, rows[key{1024, 50}].Gap.ClientNewMS.Value, rows[key{102400, 50}].Gap.ClientNewMS.Value
	if ka1 < 48 || ka1 > 62 {
		t.Errorf("RTT 50 ms, 1 KB kept alive: %.1f ms, want about one RTT (48-62)", ka1)
	}
	if new1 < 95 || new1 > 120 {
		t.Errorf("RTT 50 ms, 1 KB new connection: %.1f ms, want about two RTTs (95-120)", new1)
	}
	if new100 < new1+50 {
		t.Errorf("RTT 50 ms, 100 KB new connection: %.1f ms, want at least one RTT more than 1 KB (%.1f): slow start", new100, new1)
	}
	for _, r := range res.Rows {
		g := r.Gap
		if g.RTTMS == 50 && g.ServerBlindPct.Value < 95 {
			t.Errorf("RTT 50 ms, %d bytes: server (as it reports itself) blind to %.1f%%, want >= 95%%", g.SizeBytes, g.ServerBlindPct.Value)
		}
		// Through the last byte written, the server still cannot see the
		// handshake nor the last round trip of delivery; for 1 KB it sees
		// next to nothing (100 KB does not fit in a new connection's
		// default send buffer, so there its write waits for ACKs).
		lb := r.ServerLastByteMS.Value
		if g.RTTMS == 50 && (lb > g.ClientNewMS.Value-75 || g.SizeBytes == 1024 && r.ServerLastByteBlindPct.Value < 95) {
			t.Errorf("RTT 50 ms, %d bytes: server to last byte %.1f ms of %.1f ms, blind %.1f%%", g.SizeBytes, lb, g.ClientNewMS.Value, r.ServerLastByteBlindPct.Value)
		}
		if g.RTTMS == 0 && !(g.ClientNewMS.Value > g.ServerMS.Value && g.ServerBlindPct.Value > 20) {
			t.Errorf("no delay, %d bytes: server %.3f ms, new connection %.3f ms, blind %.1f%%: want a gap", g.SizeBytes, g.ServerMS.Value, g.ClientNewMS.Value, g.ServerBlindPct.Value)
		}
		if want := map[float64]string{0: "none", 50: "tun"}[g.RTTMS]; g.DelayMethod != want && !(g.RTTMS == 50 && g.DelayMethod == "netem") {
			t.Errorf("RTT %g ms: delay method %q, want %s", g.RTTMS, g.DelayMethod, want)
		}
	}

	reqs, err := recorder.ReadFile[recorder.GapRequest](filepath.Join(out, "gap-requests.csv"))
	if err != nil || len(reqs) != 2*e.Runs*4 {
		t.Fatalf("gap-requests.csv: %d rows, %v; want %d", len(reqs), err, 2*e.Runs*4)
	}
	var connect []float64
	for _, r := range reqs {
		if r.RTTMS == 50 && r.Mode == recorder.GapNew {
			connect = append(connect, r.ConnectMS)
		}
		if r.Mode == recorder.GapKeepAlive && r.NewConn {
			t.Errorf("keep-alive request %+v opened a connection", r)
		}
	}
	if c := recorder.Median(connect); c < 49 || c > 56 {
		t.Errorf("RTT 50 ms: TCP connect median %.1f ms, want about one RTT (50)", c)
	}
	gaps, err := recorder.ReadFile[recorder.GapRow](filepath.Join(out, "gap.csv"))
	if err != nil || len(gaps) != 4 {
		t.Errorf("gap.csv: %d rows, %v", len(gaps), err)
	}
	paths, err := recorder.ReadFile[recorder.GapPath](filepath.Join(out, "gap-path.csv"))
	if err != nil || len(paths) != 4 {
		t.Errorf("gap-path.csv: %d rows, %v", len(paths), err)
	}
	if _, err := os.Stat(filepath.Join(out, "environment.json")); err != nil {
		t.Error(err)
	}
}

// checkNoNamespaceLeft fails t if a link named slowlab-* exists here, a
// slowlab-* namespace is bind-mounted, or this process still has a thread
// or file descriptor in another network namespace or on a TUN device.
func checkNoNamespaceLeft(t *testing.T) {
	t.Helper()
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, "slowlab-") {
			t.Errorf("link %s left behind", l.Attrs().Name)
		}
	}
	if names, _ := filepath.Glob("/var/run/netns/slowlab-*"); len(names) > 0 {
		t.Errorf("namespaces left behind: %v", names)
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		var held []string
		tasks, _ := filepath.Glob("/proc/self/task/*/ns/net")
		fds, _ := filepath.Glob("/proc/self/fd/*")
		for _, p := range append(tasks, fds...) {
			target, err := os.Readlink(p)
			if err == nil && (strings.HasPrefix(target, "net:[") && target != self || target == "/dev/net/tun") {
				held = append(held, p+" -> "+target)
			}
		}
		if len(held) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("still held: %v", held)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A condition whose delay line runs late is measured again, and only the
// attempt kept is in gap-requests.csv. With the lateness bound at 0 every
// TUN-delayed attempt is late: three tries, the last kept and marked invalid.
func TestLatencyGapRetriesLatePath(t *testing.T) {
	requireRoot(t, "latency-gap's network namespaces")
	saved := netem.MaxP99Lateness
	netem.MaxP99Lateness = 0
	t.Cleanup(func() { netem.MaxP99Lateness = saved })
	e := lab.DefaultLatencyGap()
	e.Delays, e.Sizes, e.Runs, e.Method = []time.Duration{5 * time.Millisecond}, []int{1024}, 3, netem.MethodTUN
	out := t.TempDir()
	var progress bytes.Buffer
	res, err := lab.RunLatencyGap(context.Background(), e, lab.Options{Out: out, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	checkNoNamespaceLeft(t)
	for _, want := range []string{"discarded, measuring again (try 2 of 3)", "discarded, measuring again (try 3 of 3)"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	if strings.Contains(progress.String(), "try 4 of 3") {
		t.Errorf("more than 3 tries:\n%s", progress.String())
	}
	if len(res.Rows) != 1 || res.Rows[0].Path.Valid || res.Rows[0].Gap.Runs != e.Runs {
		t.Fatalf("rows %+v: want one condition, invalid, %d runs", res.Rows, e.Runs)
	}
	reqs, err := recorder.ReadFile[recorder.GapRequest](filepath.Join(out, "gap-requests.csv"))
	if err != nil || len(reqs) != 2*e.Runs {
		t.Errorf("gap-requests.csv: %d rows (%v), want the kept attempt's %d", len(reqs), err, 2*e.Runs)
	}
}
