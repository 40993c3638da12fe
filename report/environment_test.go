package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/slowlab/slowlab/recorder"
)

// environmentRows returns the name/value rows of report.html's environment
// table.
func environmentRows(t *testing.T, rep *Report) map[string]string {
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
	fixture{reps: 1}.write(t, dir)
	rep, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := environmentRows(t, rep)
	for name, want := range map[string]string{"experiment": "slow-client", "started at": "2026-01-02T15:04:05Z",
		"CPUs": "4", "limits": "none: the embedded stack runs without cgroup limits", "python3": "Python 3.11.2"} {
		if rows[name] != want {
			t.Errorf("environment row %q = %q, want %q", name, rows[name], want)
		}
	}
	if s, ok := rows["sessions"]; ok {
		t.Errorf("one session has a sessions row: %q", s)
	}
}

// A resumed experiment's directory shows its first session, how many
// sessions wrote it, and when each started.
func TestEnvironmentSessions(t *testing.T) {
	dir := t.TempDir()
	fixture{reps: 1}.write(t, dir)
	resumed := recorder.Environment{Experiment: "slow-client", Stack: "embedded", Kernel: "6.2.0-other",
		StartedAt: time.Date(2026, 1, 3, 9, 0, 0, 500_000_000, time.UTC)}
	if err := recorder.AppendEnvironment(dir, resumed); err != nil {
		t.Fatal(err)
	}
	rep, err := Write(dir)
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
	fixture{reps: 1}.write(t, dir)
	old := `{"experiment": "slow-client", "stack": "embedded", "started_at": "2025-06-01T10:00:00.123456789Z",
		"kernel": "6.1.0-old", "cpus": 2, "limits": "none", "versions": {"nginx": "nginx version: nginx/1.22.1"}}`
	if err := os.WriteFile(filepath.Join(dir, EnvironmentFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Write(dir)
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
}
