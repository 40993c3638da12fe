package slowclient

import (
	"testing"

	"github.com/slowlab/slowlab/report"
)

// BenchmarkWrite30Runs renders the report of the full published matrix:
// 10 conditions x 3 repetitions = 30 runs, 2160 /fast requests, 4410
// resource samples; 6 figures as PNG and SVG plus report.html.
func BenchmarkWrite30Runs(b *testing.B) {
	dir := b.TempDir()
	if runs := (fixture{reps: 3}).write(b, dir); len(runs) != 30 {
		b.Fatalf("%d runs, want 30", len(runs))
	}
	b.ReportAllocs()
	for b.Loop() {
		rep, err := report.Write(dir, []report.Section{Section})
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Figures) != 6 {
			b.Fatalf("%d figures", len(rep.Figures))
		}
	}
}
