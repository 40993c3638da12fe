package slowclient

import (
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/pathmodel/holds/holdstest"
	"github.com/slowlab/slowlab/recorder"
)

// TestMayHold: under the published matrix (16 MiB), a warning for each
// condition whose slow readers are meant to hold the app where the path
// may hold the whole response; never for proxy-buffering-on, whose
// finding is the app freed, nor for conditions without slow readers;
// none under Linux's defaults, on an external stack, with backpressure
// off or without settings.
func TestMayHold(t *testing.T) {
	off := []string{"slow-client proxy-buffering-off sync-2, 1 slow, 16m", "slow-client proxy-buffering-off sync-2, 2 slow, 16m"}
	direct := []string{"slow-client direct sync-2, 1 slow, 16m", "slow-client direct sync-2, 2 slow, 16m"}
	for _, tc := range []struct {
		name       string
		wmem, rmem int64
		want       []string
	}{
		{"tcp_rmem max 64 MiB: the proxy's receive buffer may grow past 16 MiB", 4194304, 67108864, off},
		{"tcp_rmem max 32 MiB, this host's", 4194304, 33554432, off},
		{"tcp_wmem max 64 MiB: the app's send buffer alone holds it", 67108864, 6291456,
			append(append(direct, off...), "slow-client direct gthread-1x4, 2 slow, 16m")},
		{"Linux's defaults, tcp_wmem max 4 MiB, tcp_rmem max 6 MiB", 4194304, 6291456, nil},
	} {
		ws := Published().MayHold(holdstest.Net(tc.wmem, tc.rmem))
		if got := holdstest.Named(ws); !slices.Equal(got, tc.want) {
			t.Errorf("%s: warnings for %q, want %q", tc.name, got, tc.want)
		}
		for _, w := range ws {
			if !strings.Contains(w, "the path may hold the whole 16.00 MiB response") || !strings.Contains(w, "the least size held is") {
				t.Errorf("%s: %q", tc.name, w)
			}
		}
	}
	many := holdstest.Net(67108864, 67108864)
	ext := Published()
	ext.External = &lab.ExternalSpec{}
	bp := Published()
	bp.Large.Backpressure = "off"
	for name, ws := range map[string][]string{"external": ext.MayHold(many), "backpressure off": bp.MayHold(many), "no settings": Published().MayHold(nil)} {
		if ws != nil {
			t.Errorf("%s: %q, want nothing", name, ws)
		}
	}
}

// TestReportMayHold: the section says MayHold's warnings from the
// results directory's scenario.yaml and environment.json: under this
// host's settings, for buffering off's slow readers; nothing under
// Linux's defaults or without scenario.yaml.
func TestReportMayHold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		net      *recorder.NetSettings
		scenario bool
		want     int
	}{
		{"this host's tcp_rmem max 32 MiB", holdstest.Net(4194304, 33554432), true, 2},
		{"Linux's defaults", holdstest.Net(4194304, 6291456), true, 0},
		{"no scenario.yaml", holdstest.Net(4194304, 33554432), false, 0},
	} {
		dir := t.TempDir()
		fixture{reps: 1}.write(t, dir)
		if err := recorder.AppendEnvironment(dir, recorder.Environment{Experiment: Name, StartedAt: time.Now().UTC(), Net: tc.net}); err != nil {
			t.Fatal(err)
		}
		if tc.scenario {
			b, err := lab.MarshalScenario(Published())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, lab.ScenarioFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(writeReport(t, dir).HTML)
		if err != nil {
			t.Fatal(err)
		}
		text := html.UnescapeString(string(b))
		if got := strings.Count(text, "Warning: slow-client proxy-buffering-off sync-2, "); got != tc.want {
			t.Errorf("%s: %d warnings in report.html, want %d", tc.name, got, tc.want)
		}
		if got := strings.Count(text, "may hold the whole 16.00 MiB response"); got != tc.want {
			t.Errorf("%s: %d warnings of any condition, want %d", tc.name, got, tc.want)
		}
		if tc.want > 0 && !strings.Contains(text, "tcp_rmem 4096 131072 33554432), says the path may hold the whole response of 2 condition(s)") {
			t.Errorf("%s: report.html lacks the warnings' introduction", tc.name)
		}
	}
}

// TestMeasured: from runs.csv's ok runs, the conditions MayHold judges
// whose downloads the path held (app_send_s under a quarter of client_receive_s),
// with their medians over runs; none where the app was held, where no
// download completed, for buffering on (its app is meant to be free), a
// run that failed, an external stack, or a directory without runs.csv.
func TestMeasured(t *testing.T) {
	run := func(id, route, server, status string, app, recv recorder.Maybe) recorder.Run {
		return recorder.Run{RunID: id, Route: route, Server: server, SlowClients: 2, Rep: 1, Status: status, AppSendS: app, ClientReceiveS: recv}
	}
	s := recorder.Some
	dir := t.TempDir()
	if err := lab.ReplaceRows(dir, []recorder.Run{
		run("d1", "direct", "sync-2", recorder.RunOK, s(0.05), s(4)),
		run("d2", "direct", "sync-2", recorder.RunOK, s(0.3), s(4.2)),
		run("o1", "proxy-buffering-off", "sync-2", recorder.RunOK, s(3.2), s(4)),
		run("o2", "proxy-buffering-off", "sync-2", recorder.RunFailed, s(0.01), s(4)),
		run("g1", "direct", "gthread-1x4", recorder.RunOK, recorder.None(), recorder.None()),
		run("b1", "proxy-buffering-on", "sync-2", recorder.RunOK, s(0.01), s(4)),
	}); err != nil {
		t.Fatal(err)
	}
	ms := Published().Measured(dir)
	var held []string
	for _, m := range ms {
		if m.PathHeld() {
			held = append(held, m.Name)
		}
	}
	if len(ms) != 3 || !slices.Equal(held, []string{"slow-client direct sync-2, 2 slow, 16m"}) || ms[0].AppSendS.Value != 0.175 ||
		ms[0].ReceiveS.Value != 4.1 || ms[0].Size != 16<<20 {
		t.Errorf("measured %+v, held %q: want direct sync-2's (0.175 s of 4.1 s) alone of 3 judged", ms, held)
	}
	ext := Published()
	ext.External = &lab.ExternalSpec{}
	if ms := ext.Measured(dir); ms != nil {
		t.Errorf("external: %+v", ms)
	}
	if ms := Published().Measured(t.TempDir()); ms != nil {
		t.Errorf("no runs.csv: %+v", ms)
	}
}
