package alerts

import (
	"os"
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
