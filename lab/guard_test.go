package lab

import (
	"math"
	"testing"

	"github.com/prometheus/procfs"
)

// utilisation counts user, system, interrupt and steal time as busy and
// idle, I/O wait and niced (lower-priority) time as not.
func TestUtilisation(t *testing.T) {
	a := procfs.CPUStat{User: 100, Nice: 100, System: 100, Idle: 100, Iowait: 100}
	for _, tc := range []struct {
		name string
		d    procfs.CPUStat
		want float64
	}{
		{"all user", procfs.CPUStat{User: 10}, 1},
		{"half system, half idle", procfs.CPUStat{System: 5, Idle: 5}, 0.5},
		{"a niced hog and the run's 20%", procfs.CPUStat{Nice: 8, User: 2}, 0.2},
		{"steal and irq", procfs.CPUStat{Steal: 1, IRQ: 1, SoftIRQ: 1, Iowait: 1}, 0.75},
		{"nothing elapsed", procfs.CPUStat{}, 0},
	} {
		b := a
		b.User += tc.d.User
		b.Nice += tc.d.Nice
		b.System += tc.d.System
		b.Idle += tc.d.Idle
		b.Iowait += tc.d.Iowait
		b.IRQ += tc.d.IRQ
		b.SoftIRQ += tc.d.SoftIRQ
		b.Steal += tc.d.Steal
		if got := utilisation(a, b); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: utilisation %v, want %v", tc.name, got, tc.want)
		}
	}
}
