package tempcliff

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/lab/pathmodel/holds/holdstest"
)

// quickConfig is --quick's matrix: 6 and 32 MiB against max temp 8m, 16
// MiB against 0.
func quickConfig() *Config {
	c := Published()
	c.Reduce()
	return c
}

// TestMayHold: a warning for each condition that expects the app held
// (over the temp limit, or with 0) where the path may hold its whole
// response, naming it, its size, the predicted capacity with its hops and
// the least size held; none under defaults-like settings whose path
// cannot hold them, none for the condition below the limit (its app is
// meant to be free), none without settings.
func TestMayHold(t *testing.T) {
	for _, tc := range []struct {
		name       string
		wmem, rmem int64
		want       []string // a condition each warning names, in order
	}{
		{"tcp_rmem max 64 MiB: the proxy's receive buffer may grow past both", 4194304, 67108864,
			[]string{"temp-cliff sync-2, 2 slow, 32m, max temp 8m:", "temp-cliff sync-2, 2 slow, 16m, max temp 0:"}},
		{"tcp_rmem max 32 MiB, this host's", 4194304, 33554432,
			[]string{"temp-cliff sync-2, 2 slow, 32m, max temp 8m:", "temp-cliff sync-2, 2 slow, 16m, max temp 0:"}},
		{"tcp_wmem max 64 MiB: the app's send buffer alone fits both", 67108864, 6291456,
			[]string{"temp-cliff sync-2, 2 slow, 32m, max temp 8m:", "temp-cliff sync-2, 2 slow, 16m, max temp 0:"}},
		{"Linux's defaults, tcp_wmem max 4 MiB, tcp_rmem max 6 MiB: both held", 4194304, 6291456, nil},
	} {
		ws := quickConfig().MayHold(holdstest.Net(tc.wmem, tc.rmem))
		if len(ws) != len(tc.want) {
			t.Errorf("%s: %d warnings, want %d: %q", tc.name, len(ws), len(tc.want), ws)
			continue
		}
		for i, w := range ws {
			for _, want := range []string{tc.want[i], "the path may hold the whole", "predicted", "app send ",
				"proxy temp file", "the least size held is"} {
				if want == "proxy temp file" && strings.Contains(tc.want[i], "max temp 0") {
					want = "proxy memory 80k + proxy send"
				}
				if !strings.Contains(w, want) {
					t.Errorf("%s: warning %q lacks %q", tc.name, w, want)
				}
			}
		}
	}
	big := quickConfig().MayHold(holdstest.Net(67108864, 6291456))
	if len(big) == 2 && !strings.Contains(big[0], "it fits: the path holds at least") {
		t.Errorf("tcp_wmem max 64 MiB: %q, want it to fit", big[0])
	}
	if ws := quickConfig().MayHold(nil); ws != nil {
		t.Errorf("no settings recorded: %q, want nothing", ws)
	}
	c := quickConfig()
	c.Experiment = "temp-disk-full"
	if ws := c.MayHold(holdstest.Net(4194304, 67108864)); ws != nil {
		t.Errorf("temp-disk-full's config: %q, want nothing (its finding is the full disk)", ws)
	}
}

// TestMeasured: the conditions MayHold judges, from a results directory's
// rows: held by the path in testdata/pathheld (app_send_s 0.04-0.13 s of
// 2-4 s), by the app in testdata/quick (1.0-3.3 s of 2-4 s), never the 6
// MiB against 8m (its app is meant to be free); none for temp-disk-full's
// config or a directory without the files.
func TestMeasured(t *testing.T) {
	names := []string{"temp-cliff sync-2, 2 slow, 32m, max temp 8m", "temp-cliff sync-2, 2 slow, 16m, max temp 0"}
	for dir, held := range map[string]bool{"pathheld": true, "quick": false} {
		ms := quickConfig().Measured(filepath.Join("testdata", dir))
		if len(ms) != 2 {
			t.Fatalf("%s: %+v, want the 2 conditions expecting the app held", dir, ms)
		}
		for i, m := range ms {
			if m.Name != names[i] || m.PathHeld() != held || !m.AppSendS.Valid || !m.ReceiveS.Valid {
				t.Errorf("%s: %+v, want %s held by the path: %v", dir, m, names[i], held)
			}
		}
	}
	if m := quickConfig().Measured(filepath.Join("testdata", "quick")); m[0].AppSendS.Value != 3.18 || m[0].ReceiveS.Value != 4.0035 {
		t.Errorf("quick's 32 MiB: %+v, want the medians of its two downloads, 3.18 and 4.0035 s", m[0])
	}
	c := quickConfig()
	c.Experiment = "temp-disk-full"
	if ms := c.Measured(filepath.Join("testdata", "pathheld")); ms != nil {
		t.Errorf("temp-disk-full's config: %+v", ms)
	}
	if ms := quickConfig().Measured(t.TempDir()); ms != nil {
		t.Errorf("no results: %+v", ms)
	}
}
