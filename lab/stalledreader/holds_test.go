package stalledreader

import (
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/pathmodel/holds"
	"github.com/slowlab/slowlab/lab/pathmodel/holds/holdstest"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

func quickConfig() *Config {
	c := Published()
	c.Reduce()
	return c
}

// TestMayHold: a warning for each condition whose readers are meant to
// hold a worker where the path may hold the whole /large: --quick's
// 4 MiB is about what tcp_wmem's 4 MiB send buffer holds direct, so the
// model cannot tell there; the published 16 MiB is held direct under
// Linux's defaults and this host's, and behind the proxy with buffering
// off only where tcp_rmem's maximum lets it hold 16 MiB. Never the
// buffering route nor the async server.
func TestMayHold(t *testing.T) {
	quickDirect := []string{"stalled-reader direct sync-2, stall, clients 2, 4m", "stalled-reader proxy-buffering-off sync-2, stall, clients 2, 4m",
		"stalled-reader direct sync-2, slow, clients 1, 4m"}
	for _, tc := range []struct {
		name       string
		c          *Config
		wmem, rmem int64
		want       []string
	}{
		{"--quick, Linux's defaults", quickConfig(), 4194304, 6291456, quickDirect},
		{"published, Linux's defaults", Published(), 4194304, 6291456, nil},
		{"published, tcp_rmem max 32 MiB", Published(), 4194304, 33554432, []string{"stalled-reader proxy-buffering-off sync-2, stall, clients 2, 16m"}},
		{"published, tcp_wmem max 1 MiB, tcp_rmem max 6 MiB", Published(), 1048576, 6291456, nil},
	} {
		if got := holdstest.Named(tc.c.MayHold(holdstest.Net(tc.wmem, tc.rmem))); !slices.Equal(got, tc.want) {
			t.Errorf("%s: warnings for %q, want %q", tc.name, got, tc.want)
		}
	}
	ext := Published()
	ext.External = &lab.ExternalSpec{}
	if ws := ext.MayHold(holdstest.Net(67108864, 67108864)); ws != nil {
		t.Errorf("external: %q", ws)
	}
}

// TestReportMayHold: the section says MayHold's warnings from the
// results directory's scenario.yaml and environment.json (testdata: a
// --quick run at 4 MiB); nothing without scenario.yaml.
func TestReportMayHold(t *testing.T) {
	for _, scenario := range []bool{true, false} {
		dir := t.TempDir()
		for _, f := range []string{runFile, downloadFile} {
			b, err := os.ReadFile(filepath.Join("testdata", f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := recorder.AppendEnvironment(dir, recorder.Environment{Experiment: Name, StartedAt: time.Now().UTC(),
			Net: holdstest.Net(4194304, 6291456)}); err != nil {
			t.Fatal(err)
		}
		if scenario {
			b, err := lab.MarshalScenario(quickConfig())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, lab.ScenarioFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		files := []string{runFile, downloadFile, recorder.EnvironmentFile}
		if scenario {
			files = append(files, lab.ScenarioFile)
		}
		b, err := os.ReadFile(labtest.ReportFrom(t, dir, []report.Section{Section}, files...).HTML)
		if err != nil {
			t.Fatal(err)
		}
		page := html.UnescapeString(string(b))
		n := strings.Count(page, "may hold the whole 4.00 MiB response")
		if want := map[bool]int{true: 3, false: 0}[scenario]; n != want {
			t.Errorf("scenario.yaml %v: %d warnings in report.html, want %d", scenario, n, want)
		}
		if scenario && !strings.Contains(page, "Warning: stalled-reader direct sync-2, stall, clients 2, 4m: the path may hold") {
			t.Errorf("report.html lacks the direct stalled readers' warning")
		}
	}
}

// TestMeasured: from the rows (testdata: a --quick run at 4 MiB), the
// conditions MayHold judges, held by the path where the app wrote the
// whole response before its reader's stall ended (buffering off: 0.001 s
// of 10.05 s, the downloads then cut by send_timeout); not where its
// worker was killed (direct: its send ends at the 3 s timeout, before the
// reader's last byte, though the app was held), nor where the app's send
// or the last byte is missing; nothing without the files.
func TestMeasured(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{runFile, downloadFile} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	held := func(ms []holds.Measured) (names []string) {
		for _, m := range ms {
			if m.PathHeld() {
				names = append(names, m.Name)
			}
		}
		return names
	}
	ms := quickConfig().Measured(dir)
	off := "stalled-reader proxy-buffering-off sync-2, stall, clients 2, 4m"
	if len(ms) != 3 || !slices.Equal(held(ms), []string{off}) || ms[1].AppSendS.Value != 0.001 || ms[1].ReceiveS.Value != 10.0475 {
		t.Errorf("measured %+v, want 3 judged, %s alone held (0.001 s of 10.0475 s)", ms, off)
	}
	downloads, err := recorder.ReadFile[Download](filepath.Join(dir, downloadFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range downloads {
		if i%2 == 0 {
			downloads[i].AppSendS = recorder.None()
		} else {
			downloads[i].LastByteS = recorder.None()
		}
	}
	if err := lab.ReplaceRows(dir, downloads); err != nil {
		t.Fatal(err)
	}
	if ms := quickConfig().Measured(dir); len(ms) != 3 || held(ms) != nil {
		t.Errorf("without app_send_s or last_byte_s: %+v", ms)
	}
	if ms := quickConfig().Measured(t.TempDir()); ms != nil {
		t.Errorf("no results: %+v", ms)
	}
}
