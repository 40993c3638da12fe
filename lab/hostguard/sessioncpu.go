package hostguard

import (
	"fmt"

	"github.com/prometheus/procfs"
)

// userHZ is the unit of /proc/PID/stat's times: clock ticks a second,
// 100 on every Linux the lab runs on.
const userHZ = 100

// sessionCPU is the CPU time, in seconds, of the session whose first
// process is self: self and every process descended from it, each one's
// own time (utime + stime, all its threads) and that of the children it
// reaped (cutime + cstime). A process that ends between two readings
// moves its time into its parent's reaped figures, so the sum keeps
// counting it. Every process in the session's cgroups (the stack's
// components and the load generator child, under slowlab/<pid>/) is such
// a descendant: the lab starts them all, and none detaches itself. The
// process tree also covers what no cgroup holds: this process (the
// orchestration, a load generator that runs in it), the exporter, and a
// session without cgroups (--no-limits, or not root).
func sessionCPU(fs procfs.FS, self int) (float64, error) {
	procs, err := fs.AllProcs()
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	children := map[int][]procfs.ProcStat{}
	var root []procfs.ProcStat
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // it ended meanwhile
		}
		if st.PID == self {
			root = append(root, st)
		}
		children[st.PPID] = append(children[st.PPID], st)
	}
	if len(root) == 0 {
		return 0, fmt.Errorf("session process %d: not found in the process list", self)
	}
	var ticks float64
	for queue := root; len(queue) > 0; queue = queue[1:] {
		st := queue[0]
		ticks += float64(st.UTime+st.STime) + float64(st.CUTime+st.CSTime)
		queue = append(queue, children[st.PID]...)
	}
	return ticks / userHZ, nil
}
