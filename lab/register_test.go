package lab

import (
	"strings"
	"testing"

	"github.com/slowlab/slowlab/report"
)

// Register refuses an experiment whose report section is not its own and
// one that takes another's place in the order, so the registry alone
// gives report's sections and their order.
func TestRegisterRefuses(t *testing.T) {
	saved := experiments
	t.Cleanup(func() { experiments = saved })
	experiments = nil
	newCfg := func() Config { return nil }
	newRes := func() Result { return plainResult{} }
	Register(Experiment{Name: "sse", Order: 1, New: newCfg, NewResult: newRes, Report: report.SSE})
	for _, tc := range []struct {
		e    Experiment
		want string
	}{
		{Experiment{Name: "temp-cliff", Order: 2, New: newCfg, NewResult: newRes}, `lab: experiment temp-cliff registered with report section "": want its own`},
		{Experiment{Name: "temp-cliff", Order: 2, New: newCfg, NewResult: newRes, Report: report.TempDiskFull}, `report section "temp-disk-full"`},
		{Experiment{Name: "temp-cliff", Order: 1, New: newCfg, NewResult: newRes, Report: report.TempCliff}, "lab: experiments sse and temp-cliff registered with the same order 1"},
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
	if got := ReportSections(); len(got) != 1 || got[0].Name != "sse" {
		t.Errorf("sections %v after the refusals, want sse's alone", got)
	}
}
