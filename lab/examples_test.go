package lab_test

import (
	"context"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	_ "github.com/slowlab/slowlab/lab/experiments"
	"github.com/slowlab/slowlab/lab/idleconn"
	"github.com/slowlab/slowlab/lab/longpoll"
	"github.com/slowlab/slowlab/lab/slowclient"
	"github.com/slowlab/slowlab/lab/slowupload"
	"github.com/slowlab/slowlab/report"
)

// TestMain builds the slowlab binary the lab starts as its children.
func TestMain(m *testing.M) { os.Exit(slowlabtest.Main(m)) }

// Every registered experiment carries its smoke reduction: its published
// scenario, reduced, is still valid, runs one repetition and changes
// something (the examples below are run so reduced).
func TestSmokeEveryExperiment(t *testing.T) {
	for _, e := range lab.Experiments() {
		cfg := e.New()
		e.Smoke(cfg)
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s reduced: %v", e.Name, err)
		}
		if r, ok := cfg.(lab.Repeated); ok && *r.Repetitions() != 1 {
			t.Errorf("%s reduced: reps %d, want 1", e.Name, *r.Repetitions())
		}
		if len(labtest.Changed(e.New(), cfg)) == 0 {
			t.Errorf("%s reduced: nothing changed", e.Name)
		}
		if len(e.Files) == 0 {
			t.Errorf("%s registers no results files", e.Name)
		}
	}
}

// Every shipped example loads, validates and runs, reduced to a few
// seconds by its experiment's registered Smoke and to its first condition
// (firstOnly), on the stack it names (resolved as `slowlab run` does), and
// every run ends ok and writes the results files its registration
// names, and its report section draws at least one figure: an example
// cannot rot. They run one at a time: a run's cgroups are named
// slowlab/PID/RUN-ID/ROLE, and examples of one process share run ids
// (the proxy examples' direct.sync-2.slow0.rep1 met the same run of
// another example running beside it: "exists and holds processes").
func TestExamplesRun(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it runs every example")
	files, _ := filepath.Glob("../examples/*.yaml")
	if len(files) < 4 {
		t.Fatalf("examples: %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := lab.LoadScenario(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			e, err := lab.Lookup(cfg.Head().Experiment)
			if err != nil {
				t.Fatal(err)
			}
			// The whole example validates, every condition of it; the
			// run is of its smallest condition.
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			if why := e.Smoke(cfg); why != "" {
				slowlabtest.RequireRoot(t, why)
			}
			firstOnly(cfg)
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			if s, ok := cfg.(lab.Stacked); ok && s.Stack().Stack != "embedded" {
				slowlabtest.RequireRoot(t, "the real stack's cgroup limits")
			}
			env, err := lab.Options{Out: t.TempDir()}.Env(cfg, labtest.LogWriter{T: t})
			if err != nil {
				t.Fatal(err)
			}
			res, err := cfg.Run(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			if res.AllFailed() {
				t.Fatalf("every run failed: see %s", env.Out)
			}
			for _, name := range append(e.Files, "environment.json", lab.ScenarioFile) {
				if _, err := os.Stat(filepath.Join(env.Out, name)); err != nil {
					t.Errorf("%s registers %s: %v", e.Name, name, err)
				}
			}
			// Its report section draws its finding: at least one figure.
			rep, err := report.Write(env.Out, []report.Section{e.Report})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Figures) == 0 {
				t.Errorf("%s: report.html has no figure (notes: %q)", e.Name, rep.Notes)
			}
			// Its tables are declared once: the CLI prints the header of a
			// table report.html draws from the same declaration.
			var printed strings.Builder
			res.Print(&printed)
			page, err := os.ReadFile(filepath.Join(env.Out, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			if heads := sharedHeads(printed.String(), string(page)); len(heads) == 0 {
				t.Errorf("%s: no header the CLI printed is a table header of report.html (data-text-head); CLI:\n%s", e.Name, printed.String())
			}
		})
	}
}

// firstOnly reduces a smoke-reduced example further, to its first
// condition (the examples list their smallest first): one server, one
// stack started. The Smoke of slow-client keeps a condition per server so
// that every server starts; each server's stack is started by its own
// tests (lab/stack's routes tests), and here every condition still
// validates before the reduction.
func firstOnly(cfg lab.Config) {
	switch c := cfg.(type) {
	case *slowclient.Config:
		c.Conditions = c.Conditions[:min(1, len(c.Conditions))]
	case *longpoll.Config:
		c.Conditions = c.Conditions[:min(1, len(c.Conditions))]
	case *slowupload.Config:
		c.Conditions = c.Conditions[:min(1, len(c.Conditions))]
	case *idleconn.Config:
		c.ServerNames = c.ServerNames[:min(1, len(c.ServerNames))]
	}
}

var textHead = regexp.MustCompile(`data-text-head="([^"]*)"`)

// sharedHeads are the tables of page (report.html) whose text header
// (data-text-head, the header Table.WriteText prints for the same
// declaration) is a line of the CLI's output cli, spaces aside.
func sharedHeads(cli, page string) []string {
	lines := map[string]bool{}
	for _, l := range strings.Split(cli, "\n") {
		lines[strings.Join(strings.Fields(l), " ")] = true
	}
	var heads []string
	for _, m := range textHead.FindAllStringSubmatch(page, -1) {
		if h := html.UnescapeString(m[1]); lines[h] {
			heads = append(heads, h)
		}
	}
	return heads
}

// TestSharedHeads: a CLI header and the page's data-text-head match
// whatever the spacing; another header, or one only in the page, does not.
func TestSharedHeads(t *testing.T) {
	page := `<table data-text-head="route server p95_ms"></table><table data-text-head="a &amp; b"></table><table>`
	if got := sharedHeads("title\nroute   server  p95_ms\ndirect sync-2 2.0\n", page); len(got) != 1 || got[0] != "route server p95_ms" {
		t.Errorf("matched %q", got)
	}
	if got := sharedHeads("a & b\n", page); len(got) != 1 {
		t.Errorf("escaped header: matched %q", got)
	}
	if got := sharedHeads("route server p50_ms\n", page); len(got) != 0 {
		t.Errorf("another header matched %q", got)
	}
}
