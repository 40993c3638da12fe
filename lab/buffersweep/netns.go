package buffersweep

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	pathpkg "path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/kernelnet"
	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/recorder"
)

// parentEnv carries the parent's network namespace (its inode) to a child
// session, which refuses to set sysctls unless its own namespace is
// another one.
const parentEnv = "SLOWLAB_NETNS_PARENT"

// netnsInode is the inode of this process's network namespace.
func netnsInode() (uint64, error) {
	const self = "/proc/self/ns/net"
	var st unix.Stat_t
	if err := unix.Stat(self, &st); err != nil {
		return 0, &fs.PathError{Op: "stat", Path: self, Err: err}
	}
	return st.Ino, nil
}

// runChild runs kernel setting k's cells in a child session started in a
// new network namespace, into env.Out/<k.dir()>, and adds the child's
// sweep.csv rows. Cancelling ctx interrupts the child, which keeps what
// it completed. The child takes the session's --max-host-cpu and
// --max-schedule-lag and, when
// the sweep resumes, --resume: it keeps its own complete cells and resumes
// the others' matrices; a setting whose cells done has all is not started.
func (c *Config) runChild(ctx context.Context, env *lab.Env, k kernel, done map[string]bool, add func([]Cell) error) error {
	if c.allDone(k, done) {
		fmt.Fprintf(progress(env), "%s: every cell completed, kept\n", k.Label())
		return nil
	}
	dir := filepath.Join(env.Out, k.dir())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	cc := *c
	cc.TCPWmemMax, cc.TCPRmemMax = nil, nil
	if k.wmem > 0 {
		cc.TCPWmemMax = []lab.Size{lab.Size(k.wmem)}
	}
	if k.rmem > 0 {
		cc.TCPRmemMax = []lab.Size{lab.Size(k.rmem)}
	}
	b, err := lab.MarshalScenario(&cc)
	if err != nil {
		return err
	}
	file := filepath.Join(dir, "sweep-scenario.yaml") // not scenario.yaml, which the child writes itself
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return err
	}
	exe, err := child.Executable()
	if err != nil {
		return fmt.Errorf("find slowlab binary: %w", err)
	}
	ino, err := netnsInode()
	if err != nil {
		return fmt.Errorf("this process's network namespace: %w", err)
	}
	out, err := os.Create(filepath.Join(dir, "session-output.txt"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, exe, childArgs(env, file, dir)...)
	cmd.Env = append(os.Environ(), kernelnet.NetnsEnv+"="+k.Label(), parentEnv+"="+strconv.FormatUint(ino, 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Stdout = out
	cmd.Stderr = &prefixWriter{w: progress(env), prefix: "[" + k.Label() + "] "}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	fmt.Fprintf(progress(env), "%s: a session in a network namespace of its own, results in %s\n", k.Label(), dir)
	runErr := child.StartCmd(cmd)
	if runErr == nil {
		runErr = cmd.Wait()
	}
	if ee := (*exec.ExitError)(nil); errors.As(runErr, &ee) && ee.ExitCode() == lab.ExitUnmeasured {
		// It completed; its last line, in the progress above, names them.
		env.NoteUnmeasured(filepath.Join(dir, "*", recorder.FileName[recorder.Run]()), "conditions of "+k.Label()+"'s session, named in its output")
		runErr = nil
	}
	if runErr != nil && ctx.Err() == nil && errors.Is(runErr, syscall.EPERM) {
		runErr = fmt.Errorf("start a session in a new network namespace: %w", netem.ErrPermission)
	}
	cells, err := recorder.ReadFile[Cell](filepath.Join(dir, sweepFile))
	for i := range cells {
		cells[i].Dir = filepath.Join(k.dir(), cells[i].Dir)
	}
	if aerr := add(cells); aerr != nil {
		err = errors.Join(err, aerr)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if runErr != nil {
		return errors.Join(fmt.Errorf("%s: the session in its namespace: %w (its output: %s)", k.Label(), runErr, out.Name()), err)
	}
	return err
}

// childArgs is the command line of kernel setting's child session, run
// from scenario file into dir: the parent's stack (the child would
// otherwise choose its own, auto), its host CPU guard, resume when the
// parent resumes a child session that had started, and no limits when the
// parent has none.
func childArgs(env *lab.Env, file, dir string) []string {
	args := []string{"run", file, "--out", dir}
	if env.Resume && started(dir) {
		args = []string{"run", file, "--resume", dir}
	}
	if env.Stack.Name != "" {
		args = append(args, "--stack", env.Stack.Name)
	}
	args = append(args, "--max-host-cpu", strconv.FormatFloat(env.MaxHostCPU, 'f', -1, 64), "--max-schedule-lag", env.MaxScheduleLag.String())
	if !env.Stack.Cgroups {
		args = append(args, "--no-limits")
	}
	return args
}

// allDone reports whether done has every size x rate cell of k.
func (c *Config) allDone(k kernel, done map[string]bool) bool {
	for _, size := range c.Sizes {
		for _, rate := range c.Rates {
			if !done[cellKey(k.Label(), int64(size), int64(rate))] {
				return false
			}
		}
	}
	return true
}

// enterKernel prepares a child session: it must be in a network
// namespace other than its parent's, where it sets loopback up and the
// setting's tcp_wmem and tcp_rmem maxima (the namespace's minimum and
// default kept, lowered to the maximum if above it).
func (c *Config) enterKernel() error {
	ks := c.kernels()
	if len(ks) != 1 || ks[0].host {
		return fmt.Errorf("%s is set: a session in a namespace runs one kernel setting, not %d", kernelnet.NetnsEnv, len(ks))
	}
	ino, err := netnsInode()
	if err != nil {
		return fmt.Errorf("this process's network namespace: %w", err)
	}
	if p := os.Getenv(parentEnv); p == "" || p == strconv.FormatUint(ino, 10) {
		return fmt.Errorf("%s is set but this process is not in a network namespace of its own: refusing to change the host's socket buffer settings", kernelnet.NetnsEnv)
	}
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("namespace: set lo up: %w", err)
	}
	if err := setMemMax("net/ipv4/tcp_wmem", ks[0].wmem); err != nil {
		return err
	}
	return setMemMax("net/ipv4/tcp_rmem", ks[0].rmem)
}

// setMemMax sets the maximum of a "min default max" sysctl and checks the
// kernel took it; 0 keeps the namespace's default.
func setMemMax(key string, maxBytes int64) error {
	if maxBytes <= 0 {
		return nil
	}
	cur, err := kernelnet.ProcSys(key)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	m, err := recorder.NetSettings{TCPWmem: cur, TCPRmem: cur}.TCPMem(pathpkg.Base(key))
	if err != nil {
		return err
	}
	def := min(m.Default, maxBytes)
	lo := min(m.Min, def)
	want := fmt.Sprintf("%d %d %d", lo, def, maxBytes)
	if err := os.WriteFile(filepath.Join("/proc/sys", key), []byte(want), 0); err != nil {
		return fmt.Errorf("set %s to %q in the namespace: %w", key, want, err)
	}
	got, err := kernelnet.ProcSys(key)
	if err != nil || strings.Join(strings.Fields(got), " ") != want {
		return fmt.Errorf("set %s to %q: the kernel has %q (%v)", key, want, strings.TrimSpace(got), err)
	}
	return nil
}
