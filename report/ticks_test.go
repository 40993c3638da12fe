package report

import (
	"slices"
	"testing"
)

func TestLogTicks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var ls []string
		for _, tk := range (logTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				ls = append(ls, tk.Label)
			}
		}
		return ls
	}
	for _, tt := range []struct {
		lo, hi float64
		want   []string
	}{
		{1.2, 4, []string{"2"}},
		{0.8, 4, []string{"1", "2"}},
		{1, 1000, []string{"1", "2", "5", "10", "20", "50", "100", "200", "500", "1000"}},
		{1, 30000, []string{"1", "10", "100", "1000", "10000"}},
		{0.05, 0.3, []string{"0.05", "0.1", "0.2"}},
	} {
		if got := labels(tt.lo, tt.hi); !slices.Equal(got, tt.want) {
			t.Errorf("logTicks(%v, %v) labels %v, want %v", tt.lo, tt.hi, got, tt.want)
		}
	}
	if got := (logTicks{}).Ticks(0, 10); got != nil {
		t.Errorf("logTicks(0, 10) = %v, want none", got)
	}
}

func TestLinearTicks(t *testing.T) {
	for _, tt := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 9.6, []string{"0", "2", "4", "6", "8"}},
		{0, 66, []string{"0", "20", "40", "60"}},
		{0, 0.23, []string{"0", "0.05", "0.1", "0.15", "0.2"}},
		{-0.6, 6.4, []string{"0", "2", "4", "6"}},
	} {
		var got []string
		for _, tk := range (linearTicks{}).Ticks(tt.lo, tt.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("linearTicks(%v, %v) labels %v, want %v", tt.lo, tt.hi, got, tt.want)
		}
	}
}
