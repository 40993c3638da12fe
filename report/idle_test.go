package report

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestWriteIdle reports a --quick idle-connections run on the embedded
// stack (testdata/idle): its section alone, the figure with a held-time
// bar for each run in which the server closed connections (not the two
// direct gthread runs: every connection lasted to the bound) and a /fast
// p95 bar for each run.
func TestWriteIdle(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "idle", idleRunsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, idleRunsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := writeOnly(t, dir, "idle-connections")
	if f := figureByName(t, rep, "idle-held"); f.Series != 2 || !slices.Equal(f.points, []int{6, 8}) {
		t.Errorf("idle-held: %d series, points %v; want held time for 6 runs and /fast p95 for 8", f.Series, f.points)
	}
	page, _ := os.ReadFile(rep.HTML)
	for _, want := range []string{"proxy-buffering-on", "slowloris", "72/72"} {
		if !strings.Contains(html.UnescapeString(string(page)), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
