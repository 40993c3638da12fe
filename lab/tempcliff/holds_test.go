package tempcliff

import (
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
