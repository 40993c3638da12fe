package report

import (
	"math"
	"slices"
	"testing"
)

// TestConditionMarksPartial: a condition with a value not measured (NaN)
// or not above 0 is left out, unless Partial, which draws the values it
// has; a condition with none is left out either way, and with no
// condition drawn there is no figure.
func TestConditionMarksPartial(t *testing.T) {
	nan := math.NaN()
	marks := func(partial bool, a, b []float64) *ConditionMarks {
		return &ConditionMarks{Name: "pets-marks", Title: "Pets", Caption: "Pets.", Axis: "ms", Partial: partial,
			Labels: []string{"both", "one", "none"}, Series: []BarSeries{{Name: "a", Values: a}, {Name: "b", Values: b}}}
	}
	a, b := []float64{2, 0.5, nan}, []float64{40, nan, 0}
	for _, tc := range []struct {
		partial bool
		rows    int
		points  []int
		lo      float64 // the smallest value drawn
	}{{false, 1, []int{1, 1}, 2}, {true, 2, []int{2, 1}, 0.5}} {
		f := marks(tc.partial, a, b).figure()
		if f == nil {
			t.Fatalf("partial %v: no figure", tc.partial)
		}
		var points []int
		for _, s := range f.series {
			points = append(points, s.points)
		}
		p := f.panels[0]
		if !slices.Equal(points, tc.points) || f.height != RowsHeight(tc.rows) || p.X.Min != tc.lo/1.6 || p.X.Max != 40*6 {
			t.Errorf("partial %v: points %v, height %v, axis %v to %v; want %v, %v (%d rows), %v to %v",
				tc.partial, points, f.height, p.X.Min, p.X.Max, tc.points, RowsHeight(tc.rows), tc.rows, tc.lo/1.6, 40*6)
		}
	}
	for _, partial := range []bool{false, true} {
		if f := marks(partial, []float64{nan, 0, -1}, []float64{0, nan}).figure(); f != nil {
			t.Errorf("partial %v: nothing above 0 drew %d series", partial, len(f.series))
		}
	}
}
