package report_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// environmentRows returns the name/value rows of report.html's environment
// table.
func environmentRows(t *testing.T, rep *report.Report) map[string]string {
	t.Helper()
	doc := checkHTML(t, rep)
	rows := map[string]string{}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "section" || attr(n, "id") != "environment" {
			continue
		}
		for tr := range n.Descendants() {
			if tr.Type != html.ElementNode || tr.Data != "tr" {
				continue
			}
			var cells []string
			for td := range tr.ChildNodes() {
				if td.Type == html.ElementNode && td.Data == "td" && td.FirstChild != nil {
					cells = append(cells, td.FirstChild.Data)
				}
			}
			if len(cells) == 2 {
				rows[cells[0]] = cells[1]
			}
		}
	}
	return rows
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// A directory written by one session shows that session, with no sessions
// row.
func TestEnvironmentOneSession(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir)
	rep, err := report.Write(dir, []report.Section{standIn})
	if err != nil {
		t.Fatal(err)
	}
	rows := environmentRows(t, rep)
	for name, want := range map[string]string{"experiment": "stand-in", "started at": "2026-01-02T15:04:05Z",
		"CPUs": "4", "limits": "none: the embedded stack runs without cgroup limits", "python3": "Python 3.11.2"} {
		if rows[name] != want {
			t.Errorf("environment row %q = %q, want %q", name, rows[name], want)
		}
	}
	if s, ok := rows["sessions"]; ok {
		t.Errorf("one session has a sessions row: %q", s)
	}
	checkNoNetRows(t, rows)
}

// checkNoNetRows fails if the environment table shows network settings:
// a session that did not record them shows nothing in their place.
func checkNoNetRows(t *testing.T, rows map[string]string) {
	t.Helper()
	for name, value := range rows {
		if strings.HasPrefix(name, "net") || name == "loopback MTU" {
			t.Errorf("a session without net settings shows row %q = %q", name, value)
		}
	}
}

// netSession is writeResults's session with the kernel's network buffer
// settings recorded, one of them unreadable and the MTU not recorded.
func netSession() recorder.Environment {
	return recorder.Environment{Experiment: "stand-in", Stack: "embedded", StartedAt: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC),
		Kernel: "6.1.0-test", Net: &recorder.NetSettings{Namespace: "host", TCPRmem: "4096 131072 6291456",
			TCPWmem: "4096 16384 4194304", TCPNotsentLowat: "4294967295", RmemMax: "1000000", WmemMax: "",
			TCPModerateRcvbuf: "1", LoMTU: 0}}
}

// writeEnvironment replaces writeResults's environment.json with sessions.
func writeEnvironment(t *testing.T, dir string, sessions ...recorder.Environment) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, report.EnvironmentFile)); err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		if err := recorder.AppendEnvironment(dir, s); err != nil {
			t.Fatal(err)
		}
	}
}

// The kernel's network buffer settings show after the kernel, one row per
// sysctl under its own name, each as recorded with its sizes in binary
// units; a setting that could not be read shows as not recorded.
func TestEnvironmentNetSettings(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir)
	writeEnvironment(t, dir, netSession())
	rep, err := report.Write(dir, []report.Section{standIn})
	if err != nil {
		t.Fatal(err)
	}
	rows := environmentRows(t, rep)
	for name, want := range map[string]string{
		"network namespace":            "host",
		"net.ipv4.tcp_wmem":            "4096 16384 4194304 (min 4 KiB, default 16 KiB, max 4 MiB)",
		"net.core.wmem_max":            "–",
		"net.ipv4.tcp_notsent_lowat":   "4294967295 (no limit)",
		"net.ipv4.tcp_rmem":            "4096 131072 6291456 (min 4 KiB, default 128 KiB, max 6 MiB)",
		"net.core.rmem_max":            "1000000 (976.6 KiB)",
		"net.ipv4.tcp_moderate_rcvbuf": "1 (on)",
		"loopback MTU":                 "–",
	} {
		if got, ok := rows[name]; !ok || got != want {
			t.Errorf("environment row %q = %q, want %q", name, got, want)
		}
	}
	if _, ok := rows["net settings in later sessions"]; ok {
		t.Error("one session has a row about later sessions")
	}
	page, _ := os.ReadFile(rep.HTML)
	kernel := strings.Index(string(page), "<td>6.1.0-test</td>")
	wmem := strings.Index(string(page), "<td>net.ipv4.tcp_wmem</td>")
	rmem := strings.Index(string(page), "<td>net.ipv4.tcp_rmem</td>")
	if kernel < 0 || !(kernel < wmem && wmem < rmem) {
		t.Errorf("want the kernel row, then tcp_wmem, then tcp_rmem: at %d, %d, %d", kernel, wmem, rmem)
	}
	if !strings.Contains(string(page), `title="a TCP socket&#39;s send buffer, bytes: min, default, and the max`) {
		t.Error("tcp_wmem's row does not explain its three sizes on hover")
	}
}

// A resumed session whose network settings differ from the first's is
// named with the settings that differ; one with the same settings is not.
func TestEnvironmentNetSettingsChanged(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir)
	first := netSession()
	same := netSession()
	same.StartedAt = first.StartedAt.Add(time.Hour)
	changed := netSession()
	changed.StartedAt = first.StartedAt.Add(2 * time.Hour)
	changed.Net.TCPWmem = "4096 16384 16777216"
	changed.Net.LoMTU = 65536
	old := netSession()
	old.StartedAt = first.StartedAt.Add(3 * time.Hour)
	old.Net = nil
	writeEnvironment(t, dir, first, same, changed, old)
	rep, err := report.Write(dir, []report.Section{standIn})
	if err != nil {
		t.Fatal(err)
	}
	rows := environmentRows(t, rep)
	want := "session 3, started at 2026-01-02T17:04:05Z: net.ipv4.tcp_wmem 4096 16384 16777216, loopback MTU 65536; " +
		"session 4, started at 2026-01-02T18:04:05Z: net settings not recorded"
	if got := rows["net settings in later sessions"]; got != want {
		t.Errorf("later sessions row\n got %q\nwant %q", got, want)
	}
	if got := rows["net.ipv4.tcp_wmem"]; !strings.HasPrefix(got, "4096 16384 4194304 ") {
		t.Errorf("tcp_wmem row %q: want the first session's", got)
	}
}

// A resumed experiment's directory shows its first session, how many
// sessions wrote it, and when each started.
func TestEnvironmentSessions(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir)
	resumed := recorder.Environment{Experiment: "stand-in", Stack: "embedded", Kernel: "6.2.0-other",
		StartedAt: time.Date(2026, 1, 3, 9, 0, 0, 500_000_000, time.UTC)}
	if err := recorder.AppendEnvironment(dir, resumed); err != nil {
		t.Fatal(err)
	}
	rep, err := report.Write(dir, []report.Section{standIn})
	if err != nil {
		t.Fatal(err)
	}
	rows := environmentRows(t, rep)
	want := "2 sessions wrote this directory, started at 2026-01-02T15:04:05Z, 2026-01-03T09:00:00.5Z"
	if rows["sessions"] != want {
		t.Errorf("sessions row %q, want %q", rows["sessions"], want)
	}
	if rows["kernel"] != "6.1.0-test" || rows["started at"] != "2026-01-02T15:04:05Z" {
		t.Errorf("rows %v: want the first session's", rows)
	}
	page, _ := os.ReadFile(rep.HTML)
	if !strings.Contains(string(page), "the first of its 2 sessions") {
		t.Error("the environment caption does not say which session it shows")
	}
}

// A results directory from before environment.json kept sessions (a single
// object) still reports its environment.
func TestEnvironmentOldFormat(t *testing.T) {
	dir := t.TempDir()
	writeResults(t, dir)
	old := `{"experiment": "stand-in", "stack": "embedded", "started_at": "2025-06-01T10:00:00.123456789Z",
		"kernel": "6.1.0-old", "cpus": 2, "limits": "none", "versions": {"nginx": "nginx version: nginx/1.22.1"}}`
	if err := os.WriteFile(filepath.Join(dir, report.EnvironmentFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := report.Write(dir, []report.Section{standIn})
	if err != nil {
		t.Fatal(err)
	}
	rows := environmentRows(t, rep)
	for name, want := range map[string]string{"started at": "2025-06-01T10:00:00.123456789Z", "kernel": "6.1.0-old",
		"CPUs": "2", "nginx": "nginx version: nginx/1.22.1", "Go": "–"} {
		if rows[name] != want {
			t.Errorf("environment row %q = %q, want %q", name, rows[name], want)
		}
	}
	checkNoNetRows(t, rows)
}

// The note that environment.json is missing is due where a session's
// directory lacks it (no manifest.json yet, or one that lists it), not in
// a load generator's or merged directory, whose manifest.json lists the
// files of a command that writes none: in the notes and on the page
// alike.
func TestEnvironmentNoteOnlyForSessions(t *testing.T) {
	const note = "environment.json is not present: no environment summary"
	for _, tc := range []struct {
		name    string
		command string // manifest.json's, "" for none
		removed bool   // environment.json written, listed, then removed
		noted   bool
	}{
		{"session without manifest", "", false, true},
		{"session that lost it", "run", true, true},
		{"loadgen", "loadgen", false, false},
		{"merge", "merge", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeResults(t, dir)
			if !tc.removed {
				if err := os.Remove(filepath.Join(dir, report.EnvironmentFile)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.command != "" {
				if err := recorder.WriteManifest(dir, tc.command, "stand-in"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.removed {
				if err := os.Remove(filepath.Join(dir, report.EnvironmentFile)); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := report.Write(dir, []report.Section{standIn})
			if err != nil {
				t.Fatal(err)
			}
			page, err := os.ReadFile(rep.HTML)
			if err != nil {
				t.Fatal(err)
			}
			noted, onPage := slices.Contains(rep.Notes, note), strings.Contains(string(page), note)
			if noted != tc.noted || onPage != tc.noted {
				t.Errorf("note %q in the notes %t, on the page %t; want %t (notes %q)", note, noted, onPage, tc.noted, rep.Notes)
			}
		})
	}
}
