package assess

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/slowlab/slowlab/cgroup"
)

// The instrument is never the cause: assess's clients and /fast run in
// this process, which enters no cgroup meant for the stack under test
// (lab.StartFreshUnlimited), and every level records what this process
// had: its CPU time, the time its own cgroup was throttled (a container's
// limit binds it there too), and how far behind its schedule /fast fell.
// A level where it was throttled, fell behind by more than MaxLag, or
// where the host-CPU guard saw other work take the machine, is invalid:
// repeated, never a verdict.
const (
	// DefaultMaxLag bounds how late a /fast request of a valid level may
	// start: half the degradation rule's margin, so a generator that late
	// could not move a verdict by itself.
	DefaultMaxLag = Margin / 2
	// maxThrottled is the most the generator's own cgroup may be
	// throttled over a valid level's window.
	maxThrottled = 10 * time.Millisecond
	// maxTries is how often a level is run while it is invalid.
	maxTries = 3
)

// selfMeter reads this process's CPU time and its own cgroup's throttled
// time.
type selfMeter struct {
	layout cgroup.Layout
	path   string
	ok     bool // the cgroup could be found
}

// newSelfMeter finds this process's cgroup under cgroupRoot ("" for
// /sys/fs/cgroup) from procRoot ("" for /proc).
func newSelfMeter(cgroupRoot, procRoot string) selfMeter {
	l, err := cgroup.Detect(cmp.Or(cgroupRoot, cgroup.DefaultRoot))
	if err != nil {
		return selfMeter{}
	}
	f, err := os.Open(filepath.Join(cmp.Or(procRoot, "/proc"), strconv.Itoa(os.Getpid()), "cgroup"))
	if err != nil {
		return selfMeter{}
	}
	defer f.Close()
	paths, err := cgroup.ParseProcCgroup(f)
	// The CPU controller's cgroup: on v1 it need not be the memory one's.
	key := ""
	if _, v1 := l.V1["cpu"]; v1 {
		key = "cpu"
	}
	path, ok := paths[key]
	if err != nil || !ok {
		return selfMeter{}
	}
	return selfMeter{layout: l, path: path, ok: true}
}

// selfReading is one reading of the meter.
type selfReading struct {
	cpu       float64
	throttled *float64
}

func (m selfMeter) read() selfReading {
	var r selfReading
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	if m.ok {
		s, _ := m.layout.Read(m.path)
		r.throttled = s.ThrottledSeconds
	}
	return r
}

// generatorOver sets lv's load generator figures from two readings.
func generatorOver(lv *Level, a, b selfReading) {
	cpu := b.cpu - a.cpu
	lv.LoadgenCPUS = &cpu
	if a.throttled != nil && b.throttled != nil {
		thr := max(*b.throttled-*a.throttled, 0)
		lv.LoadgenThrottledS = &thr
	}
}

// invalidWhy is why a level's window says nothing of the stack: the load
// generator throttled or late, or the host busy with other work (busy,
// the guard's reason); "" for a valid window.
func invalidWhy(lv *Level, maxLag time.Duration, busy string) string {
	switch {
	case busy != "":
		return "host busy: " + busy
	case lv.LoadgenThrottledS != nil && *lv.LoadgenThrottledS > maxThrottled.Seconds():
		return fmt.Sprintf("the load generator's cgroup was throttled %.3f s in the window: the instrument, not the stack, was short of CPU", *lv.LoadgenThrottledS)
	case lv.FastLagMaxMS > msf(maxLag):
		return fmt.Sprintf("a /fast request started %.0f ms behind its schedule, over %s: the instrument fell behind", lv.FastLagMaxMS, ms(maxLag))
	}
	return ""
}
