package lab

import (
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/report"
)

// Register refuses an experiment whose report section is not its own, one
// that takes another's place in the order and one without its smoke
// reduction or results files, so the registry alone
// gives report's sections and their order.
func TestRegisterRefuses(t *testing.T) {
	saved, savedMore := experiments, moreSections
	t.Cleanup(func() { experiments, moreSections = saved, savedMore })
	experiments, moreSections = nil, nil
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
	RegisterSection(report.NewSection("assess", "assessment.json", func(string) (*report.Part, error) { return report.NewPart("assess", ""), nil }))
	if got := ReportSections(); len(got) != 2 || got[0].Name != "sse" || got[1].Name != "assess" {
		t.Errorf("sections %v after the refusals, want sse's, then the one RegisterSection added", got)
	}
}

// RegisterSection refuses a section without a name or marker and one
// registered twice; what it added comes after the experiments' sections,
// in the order added, whenever the experiments register.
func TestRegisterSection(t *testing.T) {
	saved, savedMore := experiments, moreSections
	t.Cleanup(func() { experiments, moreSections = saved, savedMore })
	experiments, moreSections = nil, nil
	section := func(name, marker string) report.Section {
		return report.NewSection(name, marker, func(string) (*report.Part, error) { return report.NewPart(name, ""), nil })
	}
	RegisterSection(section("assess", "assessment.json"))
	RegisterSection(section("other", "other.json"))
	Register(Experiment{Name: "sse", Order: 1, New: func() Config { return nil }, NewResult: func() Result { return plainResult{} },
		Smoke: func(Config) string { return "" }, Files: []string{"sse-runs.csv"}, Report: section("sse", "sse-runs.csv")})
	for _, tc := range []struct {
		s    report.Section
		want string
	}{
		{section("", "x.json"), "lab: report section registered without a name or marker"},
		{section("x", ""), "lab: report section registered without a name or marker"},
		{section("assess", "assessment.json"), "lab: report section registered twice: assess"},
	} {
		func() {
			defer func() {
				if msg, _ := recover().(string); !strings.Contains(msg, tc.want) {
					t.Errorf("RegisterSection(%q, %q): panic %q, want %q", tc.s.Name, tc.s.Marker, msg, tc.want)
				}
			}()
			RegisterSection(tc.s)
		}()
	}
	var got []string
	for _, s := range ReportSections() {
		got = append(got, s.Name)
	}
	if want := []string{"sse", "assess", "other"}; !slices.Equal(got, want) {
		t.Errorf("sections %v, want %v", got, want)
	}
}
