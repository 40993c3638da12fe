package exporter

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

func init() {
	registerCollector("process", "process counts by state, summed RSS and counts by kernel wait channel", true,
		func(env collectorEnv) (Collector, error) {
			fs, err := procfs.NewFS(env.opts.ProcFS)
			if err != nil {
				return nil, fmt.Errorf("process collector: %w", err)
			}
			return &processCollector{fs: fs, procFS: env.opts.ProcFS, wchanTop: env.opts.WchanTop}, nil
		},
		func(fs *flag.FlagSet, o *Options) {
			fs.Var(wchanTopFlag{&o.WchanTop}, "collector.process.wchan-top", "`N` wait-channel names reported per group before the rest count as \"other\"")
		})
}

// wchanTopFlag is --collector.process.wchan-top N into Options.WchanTop:
// 0 there means the default, so a user's 0 (only "other") is stored as -1.
type wchanTopFlag struct{ n *int }

func (f wchanTopFlag) String() string {
	switch {
	case f.n == nil:
		// The flag package's zero value, which --help compares the
		// default with: unlike it, so the default is shown.
		return ""
	case *f.n == 0:
		return strconv.Itoa(DefaultWchanTop)
	case *f.n < 0:
		return "0"
	}
	return strconv.Itoa(*f.n)
}

func (f wchanTopFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return fmt.Errorf("want a whole number")
	case n < 0:
		return fmt.Errorf("%d: want 0 or more", n)
	case n == 0:
		n = -1
	}
	*f.n = n
	return nil
}

var (
	processCount = newGroupDesc("slowlab_processes",
		"Processes of the group by scheduler state (from /proc/PID/stat).", "state")
	processRSS = newGroupDesc("slowlab_process_resident_memory_bytes",
		"Resident set size summed over the group's processes.")
	processCPU = newGroupDesc("slowlab_process_cpu_seconds_total",
		"User and system CPU time summed over the group's current processes (utime+stime); drops when a process exits, so rate() treats that as a reset. Prefer slowlab_cgroup_cpu_usage_seconds_total where the group has a cgroup.")
	processWchan = newGroupDesc("slowlab_process_wchan",
		"Sleeping processes of the group by kernel wait channel (/proc/PID/wchan), the most common names plus \"other\"; e.g. sk_stream_wait_memory is a write waiting for send-buffer space.", "wchan")
)

// userHZ is the unit of utime and stime in /proc/PID/stat: 100 on every
// Linux architecture (procfs assumes the same).
const userHZ = 100

// processStates maps /proc/PID/stat state letters to label values. Every
// state is always exported, so a series never appears out of nowhere.
var processStates = []struct{ letter, name string }{
	{"R", "running"},
	{"S", "sleeping"},
	{"D", "disk_sleep"},
	{"T", "stopped"},
	{"t", "tracing_stop"},
	{"Z", "zombie"},
	{"X", "dead"},
	{"I", "idle"},
	{"", "other"},
}

// processCollector reads /proc/PID/stat and /proc/PID/wchan of each group's
// processes.
type processCollector struct {
	fs       procfs.FS
	procFS   string
	wchanTop int
}

var _ Collector = (*processCollector)(nil)

func (c *processCollector) Update(ctx context.Context, targets []Target, ch chan<- prometheus.Metric) error {
	var errs partialErrors
	for _, t := range targets {
		errs.add(t.Err)
		states := map[string]int{}
		wchans := map[string]int{}
		var rss int
		var cpuTicks uint
		for _, pid := range t.PIDs {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("process: %w", err)
			}
			p, err := c.fs.Proc(pid)
			if err != nil {
				if !isGone(err) {
					errs.add(fmt.Errorf("group %s: pid %d: %w", t.Group, pid, permissionHint(err)))
				}
				continue
			}
			st, err := p.Stat()
			if err != nil {
				if !isGone(err) {
					errs.add(fmt.Errorf("group %s: pid %d: %w", t.Group, pid, permissionHint(err)))
				}
				continue
			}
			states[stateName(st.State)]++
			rss += st.ResidentMemory()
			cpuTicks += st.UTime + st.STime
			// wchan is "0" for running tasks, and also where the kernel
			// hides it (no ptrace access): those are simply not counted.
			if w, err := c.wchan(p); err == nil && w != "" {
				wchans[w]++
			} else if err != nil && !isGone(err) {
				errs.add(fmt.Errorf("group %s: pid %d: %w", t.Group, pid, permissionHint(err)))
			}
		}
		for _, s := range processStates {
			ch <- t.metric(processCount, prometheus.GaugeValue, float64(states[s.name]), s.name)
		}
		ch <- t.metric(processRSS, prometheus.GaugeValue, float64(rss))
		ch <- t.metric(processCPU, prometheus.CounterValue, float64(cpuTicks)/userHZ)
		for _, w := range topWchans(wchans, c.wchanTop) {
			ch <- t.metric(processWchan, prometheus.GaugeValue, float64(w.count), w.name)
		}
	}
	return errs.err()
}

func stateName(letter string) string {
	for _, s := range processStates {
		if s.letter == letter {
			return s.name
		}
	}
	return "other"
}

type wchanCount struct {
	name  string
	count int
}

// topWchans keeps the top most common wait channels and sums the rest into
// "other", so the label stays bounded however many kernel functions
// processes sleep in. "other" is always last, at 0 when nothing was folded
// into it, so every group has a wchan series from its first scrape, even
// before any of its processes sleeps.
func topWchans(m map[string]int, top int) []wchanCount {
	other := wchanCount{name: "other", count: m["other"]} // a kernel symbol named "other" would collide; fold it in
	all := make([]wchanCount, 0, len(m))
	for n, c := range m {
		if n != "other" {
			all = append(all, wchanCount{n, c})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].count != all[j].count {
			return all[i].count > all[j].count
		}
		return all[i].name < all[j].name
	})
	if len(all) > top {
		for _, w := range all[top:] {
			other.count += w.count
		}
		all = all[:top]
	}
	return append(all, other)
}

// genericWaits are kernel helpers that many unrelated waits sleep in. Since
// sk_wait_event switched to wait_woken, a write blocked on a full send
// buffer reads as "wait_woken" in /proc/PID/wchan, the same as a blocked
// read; the caller on the kernel stack says which it is.
var genericWaits = map[string]bool{"wait_woken": true}

// wchan returns the process's wait channel, replaced by the first specific
// caller from /proc/PID/stack when the wait channel is a generic helper and
// the stack is readable (it needs CAP_SYS_ADMIN, which the packaged unit and
// DaemonSet do not give); else by the caller socketWait infers from the
// system call the process sleeps in; else the generic name stays.
func (c *processCollector) wchan(p procfs.Proc) (string, error) {
	w, err := p.Wchan()
	if err != nil || !genericWaits[w] {
		return w, err
	}
	if caller := c.stackCaller(p.PID, w); caller != "" {
		return caller, nil
	}
	if caller := c.socketWait(p.PID); caller != "" {
		return caller, nil
	}
	return w, nil
}

// stackCaller is the first specific caller of the generic wait w on the
// process's kernel stack, "" when the stack cannot be read or has none.
func (c *processCollector) stackCaller(pid int, w string) string {
	f, err := os.Open(filepath.Join(c.procFS, strconv.Itoa(pid), "stack"))
	if err != nil {
		return ""
	}
	defer f.Close()
	frames, err := parseStack(f)
	if err != nil {
		return ""
	}
	for i, fn := range frames {
		if fn == w {
			for _, caller := range frames[i+1:] {
				if !genericWaits[caller] {
					return caller
				}
			}
		}
	}
	return ""
}

// socketSyscalls are the system calls that write to or read from a file
// descriptor, by the caller a TCP socket's sleep in wait_woken has on the
// kernel stack: a write waits for send-buffer space in
// sk_stream_wait_memory, a read for data in sk_wait_data. (Other sockets
// do not sleep in wait_woken: a Unix socket's writer waits in
// sock_alloc_send_pskb, its reader in unix_stream_data_wait.)
var socketSyscalls = map[int]string{
	unix.SYS_WRITE: "sk_stream_wait_memory", unix.SYS_WRITEV: "sk_stream_wait_memory",
	unix.SYS_SENDTO: "sk_stream_wait_memory", unix.SYS_SENDMSG: "sk_stream_wait_memory", unix.SYS_SENDMMSG: "sk_stream_wait_memory",
	unix.SYS_SENDFILE: "sk_stream_wait_memory",
	unix.SYS_READ:     "sk_wait_data", unix.SYS_READV: "sk_wait_data",
	unix.SYS_RECVFROM: "sk_wait_data", unix.SYS_RECVMSG: "sk_wait_data", unix.SYS_RECVMMSG: "sk_wait_data",
}

// socketWait infers what a process sleeping in wait_woken waits for, where
// its kernel stack cannot be read, from /proc/PID/syscall (readable with
// ptrace access, CAP_SYS_PTRACE, as its fds are): a write to a socket
// (write, writev, sendto, sendmsg, sendmmsg, sendfile: its first argument
// the fd, sendfile's the socket it writes to) is sk_stream_wait_memory, a
// read from one sk_wait_data. Any other system call or descriptor, or a
// file it cannot read, gives "".
func (c *processCollector) socketWait(pid int) string {
	dir := filepath.Join(c.procFS, strconv.Itoa(pid))
	f, err := os.Open(filepath.Join(dir, "syscall"))
	if err != nil {
		return ""
	}
	defer f.Close()
	nr, fd, ok := parseSyscall(io.LimitReader(f, maxSyscallLine))
	if !ok || socketSyscalls[nr] == "" {
		return ""
	}
	link, err := os.Readlink(filepath.Join(dir, "fd", strconv.Itoa(fd)))
	if err != nil || !strings.HasPrefix(link, "socket:[") {
		return ""
	}
	return socketSyscalls[nr]
}

// maxSyscallLine bounds what is read of /proc/PID/syscall: a number and
// eight hexadecimal words, under 200 bytes.
const maxSyscallLine = 512

// parseSyscall reads /proc/PID/syscall, "NR ARG0 ... SP PC" (NR decimal,
// the rest 0x-prefixed hexadecimal) for a task blocked in a system call,
// and returns the call's number and its first argument as a file
// descriptor; ok is false for "running", "-1 SP PC" (blocked outside a
// system call) and anything else.
func parseSyscall(r io.Reader) (nr, fd int, ok bool) {
	b, err := io.ReadAll(r)
	if err != nil {
		return 0, 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0, 0, false
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n < 0 {
		return 0, 0, false
	}
	hex, found := strings.CutPrefix(fields[1], "0x")
	if !found {
		return 0, 0, false
	}
	a, err := strconv.ParseUint(hex, 16, 31)
	if err != nil {
		return 0, 0, false
	}
	return n, int(a), true
}

// parseStack returns the function names of a /proc/PID/stack dump, innermost
// first; lines look like "[<0>] sk_stream_wait_memory+0x268/0x3b0".
func parseStack(r io.Reader) ([]string, error) {
	var frames []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		_, fn, ok := strings.Cut(line, "] ")
		if !ok || !strings.HasPrefix(line, "[<") {
			return nil, fmt.Errorf("parse stack: bad line %q", line)
		}
		fn, _, _ = strings.Cut(fn, "+")
		if fn == "" {
			return nil, fmt.Errorf("parse stack: bad line %q", line)
		}
		frames = append(frames, fn)
	}
	return frames, sc.Err()
}
