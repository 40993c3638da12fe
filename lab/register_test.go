package lab

import (
	"strings"
	"testing"

	"github.com/slowlab/slowlab/report"
)

// Register refuses an experiment whose report section is not its own, one
// that takes another's place in the order and one without its smoke
// reduction or results files, so the registry alone
// gives report's sections and their order.
func TestRegisterRefuses(t *testing.T) {
	saved := experiments
	t.Cleanup(func() { experiments = saved })
	experiments = nil
	newCfg := func() Config { return nil }
	newRes := func() Result { return plainResult{} }
	smoke := func(Config) string { return "" }
	files := []string{"sse-runs.csv"}
	section := func(name string) report.Section {
		return report.NewSection(name, "temp-runs.csv", func(string) (*report.Part, error) { return report.NewPart(name, ""), nil })
	}
	Register(Experiment{Name: "sse", Order: 1, New: newCfg, NewResult: newRes, Smoke: smoke, Files: files,
		Report: report.NewSection("sse", "sse-runs.csv", func(string) (*report.Part, error) { return report.NewPart("sse", ""), nil })})
	for _, tc := range []struct {
		e    Experiment
		want string
	}{
		{Experiment{Name: "temp-cliff", Order: 2, New: newCfg, NewResult: newRes, Smoke: smoke, Files: files}, `lab: experiment temp-cliff registered with report section "": want its own`},
		{Experiment{Name: "temp-cliff", Order: 2, New: newCfg, NewResult: newRes, Smoke: smoke, Files: files, Report: section("temp-disk-full")}, `report section "temp-disk-full"`},
		{Experiment{Name: "temp-cliff", Order: 1, New: newCfg, NewResult: newRes, Smoke: smoke, Files: files, Report: section("temp-cliff")}, "lab: experiments sse and temp-cliff registered with the same order 1"},
		{Experiment{Name: "temp-cliff", Order: 2, New: newCfg, NewResult: newRes, Files: files, Report: section("temp-cliff")}, "lab: experiment registered without Smoke or Files: temp-cliff"},
	} {
		func() {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tc.want) {
					t.Errorf("Register(%s, order %d, section %q): panic %v, want %q", tc.e.Name, tc.e.Order, tc.e.Report.Name, r, tc.want)
				}
			}()
			Register(tc.e)
		}()
	}
	if got := ReportSections(); len(got) != 2 || got[0].Name != "sse" || got[1].Name != report.Assessment.Name {
		t.Errorf("sections %v after the refusals, want sse's, then assess's", got)
	}
}
