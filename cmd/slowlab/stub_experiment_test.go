package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// stubFiles are the files an experiment is, as CONTRIBUTING.md says: its
// folder (the experiment, its rows, its table and report section) and one
// import line in lab/experiments, each an overlay source in
// testdata/stubexperiment.
var stubFiles = map[string]string{
	"lab/stub/stub.go":        "stub.go.txt",
	"lab/stub/rows.go":        "rows.go.txt",
	"lab/stub/report.go":      "report.go.txt",
	"lab/experiments/stub.go": "experiments_stub.go.txt",
}

// TestStubExperiment adds an experiment the way CONTRIBUTING.md says and
// nothing else: slowlab built with the four new files of stubFiles (a go
// build overlay; none of them exists in the tree, no existing file
// changes) runs it under `reproduce` with its own flag, writes its results
// files and its report section with its figure, resumes it, prints its scenario and
// refuses a bad value and a shared flag it does not take. It fails if
// adding an experiment needed any other change (a list of names, a switch
// of types, a report registry).
func TestStubExperiment(t *testing.T) {
	slowlabtest.EndToEnd(t, "it runs the slowlab binary's experiments")
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	replace := map[string]string{}
	for target, src := range stubFiles {
		dst := filepath.Join(root, target)
		if _, err := os.Stat(dst); err == nil {
			t.Fatalf("%s exists in the tree: the stub must only add files", target)
		}
		replace[dst], _ = filepath.Abs(filepath.Join("testdata", "stubexperiment", src))
	}
	tmp := t.TempDir()
	overlay := filepath.Join(tmp, "overlay.json")
	b, _ := json.Marshal(map[string]any{"Replace": replace})
	if err := os.WriteFile(overlay, b, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "slowlab")
	build := exec.Command("go", "build", "-overlay", overlay, "-o", bin, "./cmd/slowlab")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build slowlab with the stub experiment: %v\n%s", err, out)
	}
	slowlab := func(want int, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != want {
			t.Fatalf("slowlab %s: exit %d (%v), want %d\n%s", strings.Join(args, " "), code, err, want, out)
		}
		return string(out)
	}

	dir := filepath.Join(tmp, "results")
	out := slowlab(0, "reproduce", "stub", "--items", "4", "--out", dir, "--max-host-cpu", "0")
	if !strings.Contains(out, "stub.rep2") {
		t.Errorf("reproduce stub printed no row of stub.rep2:\n%s", out)
	}
	if runs, items := csvRows(t, dir, "stub-runs.csv"), csvRows(t, dir, "stub-items.csv"); len(runs) != 2 || len(items) != 8 ||
		!strings.HasPrefix(runs[0], "stub.rep1,ok,,4") {
		t.Errorf("stub-runs.csv %q, stub-items.csv %d rows: want 2 ok runs of 4 items", runs, len(items))
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(html), "The stub experiment&#39;s runs") && !strings.Contains(string(html), "The stub experiment's runs") {
		t.Errorf("report.html (%v) lacks the stub's section", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "figures", "stub-items.svg")); err != nil {
		t.Errorf("the stub's figure: %v", err)
	}
	if e := slowlab(1, "reproduce", "stub", "--resume", dir); !strings.Contains(e, "it was run with other settings: items: 4 -> 3") {
		t.Errorf("--resume with another --items: %s", e)
	}
	if out := slowlab(0, "reproduce", "stub", "--items", "4", "--resume", dir, "--max-host-cpu", "0"); !strings.Contains(out, "stub.rep2") {
		t.Errorf("--resume of a completed session printed no row of stub.rep2:\n%s", out)
	}
	if runs := csvRows(t, dir, "stub-runs.csv"); len(runs) != 2 {
		t.Errorf("after --resume of a completed session: %d runs, want the 2 kept", len(runs))
	}
	if sc := slowlab(0, "reproduce", "stub", "--print-scenario"); !strings.Contains(sc, "experiment: stub") || !strings.Contains(sc, "items: 3") {
		t.Errorf("--print-scenario:\n%s", sc)
	}
	if e := slowlab(2, "reproduce", "stub", "--items", "0"); !strings.Contains(e, "items 0: allowed 1 to 100") {
		t.Errorf("--items 0: %s", e)
	}
	if e := slowlab(2, "reproduce", "stub", "--stack", "embedded"); !strings.Contains(e, "stub does not take it") {
		t.Errorf("--stack: %s", e)
	}
}

// csvRows are the data rows of a results file of dir, each joined by
// commas (the stub's row types are in the overlay only).
func csvRows(t *testing.T, dir, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %d records, %v", name, len(recs), err)
	}
	var rows []string
	for _, r := range recs[1:] {
		rows = append(rows, strings.Join(r, ","))
	}
	return rows
}
