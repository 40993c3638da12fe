package assess

import (
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// TestJudgeMargin: a response fits (no reader can hold a worker) only in
// the least the path holds, the prediction less the model's measured
// error under; it holds the app only over the most, the most its buffers
// can grow to plus the error over; between, the model cannot tell, and
// the notes say which, with the margin.
func TestJudgeMargin(t *testing.T) {
	under, over := "-"+pct(pathmodel.MaxUnder), "+"+pct(pathmodel.MaxOver)
	for _, path := range []pathmodel.Capacity{
		{AppSend: 4 << 20},
		{AppSend: 4 << 20, ProxyRecv: 128 << 10, ProxySend: 4 << 20, ProxyRecvMax: 32 << 20},
	} {
		p, most := path.Total(), path.Most()
		lo, hi := int64(float64(p)*(1-pathmodel.MaxUnder)), int64(float64(most)*(1+pathmodel.MaxOver))
		if !(lo < p && p <= most && most < hi) {
			t.Fatalf("%s: bounds %d, %d around %d (most %d): want the prediction inside", path, lo, hi, p, most)
		}
		for _, tc := range []struct {
			name    string
			size    int64
			verdict string
			note    []string
		}{
			{"well under", 1 << 20, AbsorbsFits, []string{"a reader cannot hold a worker at this size", "within the model's measured error of " + under}},
			{"at the least the path holds", lo, AbsorbsFits, []string{"a reader cannot hold a worker at this size"}},
			{"a byte over it", lo + 1, AbsorbsUncertain, []string{"the model cannot tell", "(" + under + ", " + over + ")"}},
			{"at the prediction, which the unwidened model called fitting", p, AbsorbsUncertain, []string{"the model cannot tell"}},
			{"at the most the path holds", hi, AbsorbsUncertain, []string{"the model cannot tell"}},
			{"a byte over it", hi + 1, AbsorbsHolds, []string{"the rest holds the app's send", "within the model's measured error of " + over}},
			{"well over", 1 << 30, AbsorbsHolds, []string{"the rest holds the app's send"}},
		} {
			a := judge(path, tc.size)
			if a.Verdict != tc.verdict || a.Fits != (tc.verdict == AbsorbsFits) || a.MarginUnder != pathmodel.MaxUnder ||
				a.MarginOver != pathmodel.MaxOver || a.PredictedBytes != p || a.PredictedMostBytes != most || a.ResponseBytes != tc.size {
				t.Errorf("%s: %s (%d bytes): %+v, want verdict %s", path, tc.name, tc.size, a, tc.verdict)
			}
			for _, want := range tc.note {
				if n := absorbsNote(*a); !strings.Contains(n, want) {
					t.Errorf("%s: %s: note %q lacks %q", path, tc.name, n, want)
				}
			}
		}
	}
	// Read back from a file written before verdicts: by Fits.
	if n := absorbsNote(Absorbs{PredictedBytes: 4 << 20, ResponseBytes: 1 << 20, Fits: true}); !strings.Contains(n, "cannot hold a worker") {
		t.Errorf("a fitting verdict without margins: %q", n)
	}
	if n := absorbsNote(Absorbs{PredictedBytes: 4 << 20, ResponseBytes: 16 << 20}); !strings.Contains(n, "the rest holds the app's send") {
		t.Errorf("a holding verdict without margins: %q", n)
	}
}

// TestPredictAbsorbs: a managed stack's path from this machine's
// settings; an external stack's app send buffer from the server's given
// settings only, never this machine's; no prediction where the model has
// none.
func TestPredictAbsorbs(t *testing.T) {
	local := &recorder.NetSettings{TCPWmem: "4096 16384 4194304", TCPRmem: "4096 131072 6291456", WmemMax: "212992", RmemMax: "212992"}
	direct := int64(4<<20 + 16<<10) // the app's send buffer at tcp_wmem's max, the client's 8 KiB SO_RCVBUF doubled
	for _, tc := range []struct {
		name       string
		route      stack.Route
		external   bool
		serverWmem int64
		size       int64
		predicted  int64
		verdict    string
	}{
		{"managed, direct, 1 MiB", stack.RouteDirect, false, 0, 1 << 20, direct, AbsorbsFits},
		{"managed, direct, 4 MiB: about the prediction", stack.RouteDirect, false, 0, 4 << 20, direct, AbsorbsUncertain},
		{"managed, direct, 16 MiB", stack.RouteDirect, false, 0, 16 << 20, direct, AbsorbsHolds},
		{"managed, direct, 16 MiB: a server_wmem is not read", stack.RouteDirect, false, 64 << 20, 16 << 20, direct, AbsorbsHolds},
		{"external, direct, the server's 16 MiB send buffer", stack.RouteDirect, true, 16 << 20, 16 << 20, 16<<20 + 16<<10, AbsorbsUncertain},
		{"external, direct, the server's 64 MiB send buffer", stack.RouteDirect, true, 64 << 20, 16 << 20, 64<<20 + 16<<10, AbsorbsFits},
	} {
		a, why := predictAbsorbs(tc.route, tc.external, tc.serverWmem, tc.size, local)
		if a == nil || a.PredictedBytes != tc.predicted || a.Verdict != tc.verdict {
			t.Errorf("%s: %+v (%s), want %d bytes predicted, %s", tc.name, a, why, tc.predicted, tc.verdict)
		}
	}
	// Behind a proxy with buffering off its receive buffer from the app
	// may grow to tcp_rmem's maximum: the most the path holds counts it.
	off, why := predictAbsorbs(stack.RouteBufferingOff, false, 0, 16<<20, local)
	if total := int64(8<<20 + 160<<10); off == nil || off.PredictedBytes != total || off.PredictedMostBytes != total-128<<10+6291456 {
		t.Errorf("buffering off: %+v (%s), want %d bytes predicted, the most with the receive buffer at 6 MiB", off, why, total)
	}
	on, why := predictAbsorbs(stack.RouteBufferingOn, false, 0, 16<<20, local)
	if on == nil || on.Verdict != AbsorbsFits || on.PredictedBytes <= 32<<20 {
		t.Errorf("16 MiB behind a buffering proxy: %+v (%s), want it to fit (the temp file)", on, why)
	}
	// A relaying route of another proxy is predicted as NGINX's with
	// buffering off (its relay buffers are a few KiB of the 8 MiB the
	// sockets hold).
	if ha, why := predictAbsorbs(stack.RouteHAProxyDefault, false, 0, 16<<20, local); ha == nil || off == nil || ha.PredictedBytes != off.PredictedBytes {
		t.Errorf("haproxy-default: %+v (%s), want as buffering off", ha, why)
	}
	for _, tc := range []struct {
		name       string
		route      stack.Route
		external   bool
		serverWmem int64
		local      *recorder.NetSettings
		want       string
	}{
		{"external, the server's settings not given", stack.RouteDirect, true, 0, local, "give them (--server-wmem) to predict"},
		{"an external proxy", stack.RouteBufferingOn, true, 16 << 20, local, "its own configuration"},
		{"an upload route", stack.RouteRequestBufferingOn, false, 0, local, "not a download route"},
		{"this machine's settings unreadable", stack.RouteDirect, false, 0, nil, "could not be read"},
		// Caddy has no temp file (the model gave it NGINX's), and
		// apache-iobuffer was predicted to fit while two slow readers
		// held both workers.
		{"caddy's buffer_responses", stack.RouteCaddyBufferResponse, false, 0, local, "reads ahead into caddy's memory, not into NGINX's"},
		{"apache's I/O buffer", stack.RouteApacheIOBuffer, false, 0, local, "reads ahead into apache's memory"},
	} {
		if a, why := predictAbsorbs(tc.route, tc.external, tc.serverWmem, 16<<20, tc.local); a != nil || !strings.Contains(why, tc.want) {
			t.Errorf("%s: %+v %q, want none and %q", tc.name, a, why, tc.want)
		}
	}
}
