package pathmodel

import (
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// TestJudge: a response fits only in the least the path holds, holds the
// app only over the most (plus the error over), and the model cannot tell
// between; a warning only where the path may hold the whole response,
// naming the least size held, which Judge itself says holds.
func TestJudge(t *testing.T) {
	p := Capacity{AppSend: 4 << 20, ProxyRecv: 128 << 10, ProxySend: 4 << 20, ProxyRecvMax: 32 << 20}
	lo, hi := Bounds(p.Total(), p.Most(), MaxUnder, MaxOver)
	if !(lo < float64(p.Total()) && p.Total() < p.Most() && float64(p.Most()) < hi) {
		t.Fatalf("bounds %.0f, %.0f around %d (most %d): want the prediction inside", lo, hi, p.Total(), p.Most())
	}
	for _, tc := range []struct {
		size    int64
		verdict string
	}{{1 << 20, Fits}, {int64(lo), Fits}, {int64(lo) + 1, Uncertain}, {p.Total(), Uncertain}, {int64(hi), Uncertain},
		{int64(hi) + 1, Holds}, {1 << 30, Holds}} {
		j := Judge(p, tc.size)
		if j.Verdict != tc.verdict || j.Least != lo || j.Most != hi || j.Size != tc.size || j.Path != p {
			t.Errorf("%d bytes: %+v, want %s", tc.size, j, tc.verdict)
		}
		if w := j.Warning("c"); (w != "") != (tc.verdict != Holds) {
			t.Errorf("%d bytes, %s: warning %q", tc.size, j.Verdict, w)
		}
	}
	j := Judge(p, 32<<20)
	if least := j.LeastHeld(); Judge(p, least).Verdict != Holds || Judge(p, least-1).Verdict == Holds {
		t.Errorf("least size held %d: verdicts %s at it, %s a byte under", least, Judge(p, least).Verdict, Judge(p, least-1).Verdict)
	}
	w := j.Warning("sync-2, 2 × 32 MiB")
	for _, want := range []string{"sync-2, 2 × 32 MiB: the path may hold the whole 32.00 MiB response", "the model cannot tell",
		"predicted 8.12 MiB: app send 4m + proxy receive 128k + proxy send 4m", "grown to tcp_rmem's max 32m",
		"40.00 MiB with the proxy's receive buffer grown", "the least size held is 44.00 MiB (46137345 bytes)"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	if w := Judge(p, 1<<20).Warning("x"); !strings.Contains(w, "it fits: the path holds at least") {
		t.Errorf("fitting: %q", w)
	}
}

// TestJudgeDownload: the path from a namespace's recorded settings; none
// where the model has none or the settings lack what it needs.
func TestJudgeDownload(t *testing.T) {
	net := &recorder.NetSettings{TCPWmem: "4096 16384 4194304", TCPRmem: "4096 131072 33554432", WmemMax: "4194304", RmemMax: "4194304"}
	on := stack.Deployment{Route: stack.RouteBufferingOn}.ResponseBuffers()
	j, why := JudgeDownload(net, Download{Route: stack.RouteBufferingOn, Proxy: on, ClientRcvBuf: 8 << 10, Size: 1 << 30})
	if j == nil || j.Verdict != Holds || j.Path.ProxyTempFile != on.MaxTempFileSize || j.Path.ClientRecv != 16<<10 {
		t.Errorf("1 GiB through a buffering proxy: %+v (%s), want it held", j, why)
	}
	for _, tc := range []struct {
		name string
		net  *recorder.NetSettings
		d    Download
		want string
	}{
		{"no settings recorded", nil, Download{Route: stack.RouteDirect, Size: 1}, "could not be read"},
		{"tcp_rmem not recorded", &recorder.NetSettings{TCPWmem: net.TCPWmem}, Download{Route: stack.RouteDirect, Size: 1}, "tcp_rmem"},
		{"an HTTP/2 route", net, Download{Route: stack.RouteH2BufferingOff, Size: 1}, "not a download route"},
	} {
		if j, why := JudgeDownload(tc.net, tc.d); j != nil || !strings.Contains(why, tc.want) {
			t.Errorf("%s: %+v %q, want none and %q", tc.name, j, why, tc.want)
		}
	}
}
