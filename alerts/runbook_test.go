package alerts

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/exporter"
)

// TestRunbookNamesEveryCollector: SlowlabExporterCollectorFailing fires on
// slowlab_exporter_collector_success{collector} of every collector the
// exporter has (and of "cgroup-re", its walk of the cgroup tree for
// dynamic groups); the runbook's section names each, so an operator paged
// for one finds it there.
func TestRunbookNamesEveryCollector(t *testing.T) {
	b, err := os.ReadFile("runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## SlowlabExporterCollectorFailing\n")
	if !ok {
		t.Fatal("runbook.md has no section SlowlabExporterCollectorFailing")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	names := []string{"cgroup-re"}
	for _, c := range exporter.Collectors() {
		names = append(names, c.Name)
	}
	for _, n := range names {
		if !strings.Contains(section, "`"+n+"`") {
			t.Errorf("SlowlabExporterCollectorFailing's runbook section does not name collector %q", n)
		}
	}
}

// TestRunbookPanelsExist: every panel the runbook points at in italics
// (*Memory vs limit*, or a series of one, *queued*) is in the dashboards:
// part of a panel's or row's title or of a series' legend. *Lab* and
// *Production* name the two rules of SlowlabWorkersSaturated.
func TestRunbookPanelsExist(t *testing.T) {
	b, err := os.ReadFile("runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range []string{"../dashboards/slowlab-experiment.json", "../dashboards/slowlab-production.json"} {
		j, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"(?:title|legendFormat)": "([^"]*)"`).FindAllSubmatch(j, -1) {
			names = append(names, string(m[1]))
		}
	}
	text := regexp.MustCompile(`\s+`).ReplaceAllString(string(b), " ")
	refs := regexp.MustCompile(`(?:^|[^*\w])\*([^*\x60]+?)\*(?:[^*\w]|$)`).FindAllStringSubmatch(text, -1)
	if len(refs) < 20 {
		t.Fatalf("found %d italic references in runbook.md, want the 20 or more it has: %q", len(refs), refs)
	}
	for _, m := range refs {
		ref := m[1]
		if ref == "Lab" || ref == "Production" {
			continue
		}
		if !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, ref) }) {
			t.Errorf("runbook.md points at *%s*: no dashboard panel, row or series has it in its title or legend", ref)
		}
	}
}
