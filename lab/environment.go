package lab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/internal/buildinfo"
	"github.com/slowlab/slowlab/lab/kernelnet"
	"github.com/slowlab/slowlab/recorder"
)

// RecordSession adds this session to env.Out's environment.json (what the
// results were measured on; a resumed experiment adds a session rather
// than replacing the first one) and, on a new results directory, writes
// its canonical scenario (env.Scenario, else cfg's) to scenario.yaml, which
// a resume checks.
func RecordSession(env *Env, cfg Config) error {
	if len(env.Scenario) == 0 {
		b, err := MarshalScenario(cfg)
		if err != nil {
			return err
		}
		env.Scenario = b
	}
	if !env.Resume {
		if err := writeScenario(env.Out, env.Scenario); err != nil {
			return err
		}
	}
	return recorder.AppendEnvironment(env.Out, Environment(env, cfg.Head().Experiment))
}

// Environment describes this machine and the session's stack and limits,
// and the kernel's network buffer settings of the lab's network namespace
// (kernelnet.NetSettings).
func Environment(env *Env, experiment string) recorder.Environment {
	root := env.Stack.CgroupRoot
	if root == "" {
		root = cgroup.DefaultRoot
	}
	stackName := env.Stack.Name
	if stackName == "" {
		stackName = "embedded (in the lab process)"
	}
	e := recorder.Environment{Experiment: experiment, Stack: stackName, StartedAt: time.Now().UTC(), Arch: runtime.GOARCH,
		CPUs: runtime.NumCPU(), Go: runtime.Version(), SlowlabVersion: buildinfo.Version(), CgroupVersion: cgroup.Version(root),
		Limits: limitsApplied(env), Swap: cgroup.SwapEnforcement(root, "/proc"), Versions: map[string]string{}}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		e.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if exe, err := child.Executable(); err == nil {
		e.SlowlabSHA256, _ = fileSHA256(exe)
	}
	maps.Copy(e.Versions, env.Stack.Versions())
	// The settings of the lab's own network namespace, where the stacks
	// run (latency-gap's path runs in namespaces it creates, whose
	// settings these are not). A setting that cannot be read is left blank
	// rather than failing the session.
	e.Net = kernelnet.Session()
	return e
}

// limitsApplied describes the cgroup limits of a session, for
// environment.json.
func limitsApplied(env *Env) string {
	st := env.Stack
	if st.External != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		found, err := st.External.Find(ctx)
		if err != nil {
			return "none applied by slowlab (external stack); limits found: unknown: " + err.Error()
		}
		return "none applied by slowlab (external stack); " + found.String()
	}
	if !st.Cgroups {
		if st.Name == "" {
			return "none: served in the lab process, without cgroups"
		}
		return "none: the " + st.Name + " stack ran without cgroups"
	}
	var parts []string
	for _, role := range []string{"app", "proxy", "loadgen"} {
		if l, ok := st.Limits[role]; ok {
			parts = append(parts, role+" "+l.String())
		} else {
			parts = append(parts, role+" accounted, not limited")
		}
	}
	return strings.Join(parts, "; ") + fmt.Sprintf("; CPU quota period %s", cgroup.CPUPeriod)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
