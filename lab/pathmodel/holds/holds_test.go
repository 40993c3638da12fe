package holds

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// host is this host's settings: tcp_wmem max 4 MiB, tcp_rmem max 32 MiB.
var host = &recorder.NetSettings{Namespace: "host", TCPWmem: "4096 16384 4194304", TCPRmem: "4096 131072 33554432",
	WmemMax: "4194304", RmemMax: "4194304"}

// TestWarnings: a warning, in order, for each condition whose path may
// hold its whole response; none for one held, one the model cannot
// predict, or without settings.
func TestWarnings(t *testing.T) {
	off := stack.Deployment{Route: stack.RouteBufferingOff}.ResponseBuffers()
	conds := []Condition{
		{"direct 16m", pathmodel.Download{Route: stack.RouteDirect, ClientRcvBuf: 8 << 10, Size: 16 << 20}},
		{"off 16m", pathmodel.Download{Route: stack.RouteBufferingOff, Proxy: off, ClientRcvBuf: 8 << 10, Size: 16 << 20}},
		{"h2 16m", pathmodel.Download{Route: stack.RouteH2BufferingOff, Proxy: off, Size: 16 << 20}},
		{"direct 1m", pathmodel.Download{Route: stack.RouteDirect, ClientRcvBuf: 8 << 10, Size: 1 << 20}},
	}
	ws := Warnings(host, conds)
	var named []string
	for _, w := range ws {
		named = append(named, w[:strings.Index(w, ":")])
	}
	if !slices.Equal(named, []string{"off 16m", "direct 1m"}) {
		t.Errorf("warnings %q, want off 16m (the model cannot tell) and direct 1m (it fits)", ws)
	}
	if ws := Warnings(nil, conds); ws != nil {
		t.Errorf("no settings: %q", ws)
	}
}

// TestRecordedNet: the last session's settings that has them; nil for a
// directory without environment.json or whose sessions recorded none.
func TestRecordedNet(t *testing.T) {
	dir := t.TempDir()
	if n := RecordedNet(dir); n != nil {
		t.Errorf("no environment.json: %+v", n)
	}
	other := *host
	other.Namespace, other.TCPRmem = "ns", "4096 131072 6291456"
	for _, s := range []*recorder.NetSettings{nil, host, &other, nil} {
		if err := recorder.AppendEnvironment(dir, recorder.Environment{Experiment: "slow-client", StartedAt: time.Now().UTC(), Net: s}); err != nil {
			t.Fatal(err)
		}
	}
	if n := RecordedNet(dir); n == nil || *n != other {
		t.Errorf("recorded %+v, want the last session's that has settings, %+v", n, other)
	}
	old := t.TempDir()
	if err := os.WriteFile(filepath.Join(old, recorder.EnvironmentFile), []byte(`{"experiment": "slow-client", "stack": "embedded"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := RecordedNet(old); n != nil {
		t.Errorf("a file written before settings were recorded: %+v", n)
	}
}

// TestNotes: what the warnings mean, naming the settings, then each.
func TestNotes(t *testing.T) {
	ns := Notes("stalled-reader", []string{"a: x", "b: y"}, host)
	if len(ns) != 3 || !strings.Contains(ns[0], "namespace host: tcp_wmem 4096 16384 4194304, tcp_rmem 4096 131072 33554432") ||
		!strings.Contains(ns[0], "2 condition(s)") || !strings.HasSuffix(ns[0], "(docs/stalled-reader.md).") || ns[1] != "Warning: a: x." || ns[2] != "Warning: b: y." {
		t.Errorf("notes %q", ns)
	}
	if Notes("stalled-reader", nil, host) != nil || Notes("stalled-reader", []string{"a"}, nil) != nil {
		t.Error("notes without warnings or settings")
	}
}

// TestHeldWarnings: a warning, with the medians and the size, for a
// condition whose app finished in under a quarter of the client's time (the path
// held its downloads: 0.16 s of 4.02 s, as a --quick 32 MiB download
// under tcp_rmem 32 MiB measured); none where the app was held (3.18 s of
// 4.01 s) or half (16m against 0 on this host), at exactly a quarter, nor where a median is missing (no complete
// download, no app record, no download).
func TestHeldWarnings(t *testing.T) {
	ms := []Measured{
		{"app held", 32 << 20, recorder.Some(3.18), recorder.Some(4.01)},
		{"path held", 32 << 20, recorder.Some(0.16), recorder.Some(4.02)},
		{"half", 16 << 20, recorder.Some(0.99), recorder.Some(2)},
		{"quarter", 16 << 20, recorder.Some(1), recorder.Some(4)},
		{"no app record", 16 << 20, recorder.None(), recorder.Some(2)},
		{"no complete download", 16 << 20, recorder.Some(0.1), recorder.None()},
		Medians("no download", 16<<20, nil, nil),
		Medians("medians", 6<<20, []float64{0.3, 0.1, 5}, []float64{4, 3, 4}),
	}
	want := []string{"path held: the path held the 32 MiB downloads, not the app: median app_send_s 0.160 s is under a quarter of the " +
		"median client_receive_s 4.020 s, so the app was free while the client read and this condition's result says nothing about the stack",
		"medians: the path held the 6 MiB downloads, not the app: median app_send_s 0.300 s is under a quarter of the median client_receive_s 4.000 s"}
	ws := HeldWarnings(ms)
	if len(ws) != 2 || ws[0] != want[0] || !strings.HasPrefix(ws[1], want[1]) {
		t.Errorf("warnings %q, want %q", ws, want)
	}
}
