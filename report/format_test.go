package report_test

import (
	"testing"

	"github.com/slowlab/slowlab/report"
)

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 figures", 1: "1 figure", 2: "2 figures", 11: "11 figures"} {
		if got := report.Count(n, "figure"); got != want {
			t.Errorf("Count(%d, figure) = %q, want %q", n, got, want)
		}
	}
}
