package cgroup

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ExecArgv wraps argv so that the process joins the cgroups whose
// cgroup.procs files are given before it execs argv: a shell writes its
// own PID ($$) to each file, prints the ready line ("ready pid=PID") a
// supervisor waits for, and execs argv in the same process. Everything
// argv forks later (Gunicorn's workers) is therefore born inside the
// cgroups, with no window in which it runs unlimited, and this works on
// v1, where clone3's CLONE_INTO_CGROUP does not exist. If a write fails
// the shell exits 125 before argv runs. The ready line only means the
// process is in place; callers still check that the service answers.
func ExecArgv(procsFiles, argv []string) []string {
	const script = `while [ "$1" != -- ]; do echo $$ >"$1" || exit 125; shift; done; shift; echo "ready pid=$$"; exec "$@"`
	out := []string{"/bin/sh", "-c", script, "slowlab-cgexec"}
	out = append(out, procsFiles...)
	out = append(out, "--")
	return append(out, argv...)
}

// ProcsEnv names the cgroup.procs files (separated by ":") that a slowlab
// child writes its own PID to before doing anything else, so it runs
// inside its cgroups from the start (see JoinFromEnv).
const ProcsEnv = "SLOWLAB_CGROUP_PROCS"

// JoinFromEnv moves this process into the cgroups named by ProcsEnv, if
// set, and unsets it so the process's own children do not join too.
// slowlab's main calls it first thing.
func JoinFromEnv() error {
	v := os.Getenv(ProcsEnv)
	if v == "" {
		return nil
	}
	os.Unsetenv(ProcsEnv)
	for _, f := range strings.Split(v, ":") {
		if err := writeFile(f, strconv.Itoa(os.Getpid())); err != nil {
			return fmt.Errorf("join cgroup %s: %w", f, err)
		}
	}
	return nil
}

// ChildEnv returns env for a slowlab child that joins cg first thing (see
// JoinFromEnv); with a nil cg, env without ProcsEnv.
func ChildEnv(env []string, cg *Cgroup) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, ProcsEnv+"=") })
	if cg != nil {
		out = append(out, ProcsEnv+"="+strings.Join(cg.ProcsFiles(), ":"))
	}
	return out
}
