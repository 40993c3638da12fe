package lab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Environment is environment.json: what the results were measured on.
type Environment struct {
	Experiment    string            `json:"experiment"`
	Stack         string            `json:"stack"`
	StartedAt     time.Time         `json:"started_at"`
	Kernel        string            `json:"kernel"`
	Arch          string            `json:"arch"`
	CPUs          int               `json:"cpus"`
	Go            string            `json:"go"`
	SlowlabSHA256 string            `json:"slowlab_sha256"`
	CgroupVersion string            `json:"cgroup_version"`
	Limits        string            `json:"limits"`
	Versions      map[string]string `json:"versions"` // python3, gunicorn, nginx where installed
}

func writeEnvironment(dir, experiment string, o Options) error {
	env := Environment{Experiment: experiment, Stack: o.Stack.Name(), StartedAt: time.Now().UTC(), Arch: runtime.GOARCH,
		CPUs: runtime.NumCPU(), Go: runtime.Version(), CgroupVersion: CgroupVersion("/sys/fs/cgroup"),
		Limits: limitsApplied(o), Versions: map[string]string{}}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		env.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if exe, err := executable(); err == nil {
		env.SlowlabSHA256, _ = fileSHA256(exe)
	}
	for name, args := range map[string][]string{"python3": {"--version"}, "gunicorn": {"--version"}, "nginx": {"-v"}} {
		if v := toolVersion(name, args...); v != "" {
			env.Versions[name] = v
		}
	}
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "environment.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write environment.json: %w", err)
	}
	return nil
}

// limitsApplied describes the cgroup limits of a run, for environment.json.
func limitsApplied(o Options) string {
	var parts []string
	if g, ok := o.Stack.(GunicornNginx); ok && g.Limits != nil {
		for _, c := range []string{"app", "proxy"} {
			if l, ok := g.Limits[c]; ok {
				parts = append(parts, c+" "+l.String())
			}
		}
	}
	if o.LoadgenLimits != nil {
		parts = append(parts, "loadgen "+o.LoadgenLimits.String())
	}
	if len(parts) == 0 {
		return "none: the " + o.Stack.Name() + " stack ran without cgroup limits"
	}
	return strings.Join(parts, "; ") + fmt.Sprintf("; CPU quota period %s, no swap", CPUPeriod)
}

// CgroupVersion tells which cgroup hierarchy is mounted at root: "v2",
// "v1", "hybrid" (v1 controllers with a unified v2 tree) or "none".
func CgroupVersion(root string) string {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return "v2"
	}
	v1 := false
	for _, c := range []string{"cpu", "memory", "cpu,cpuacct"} {
		if _, err := os.Stat(filepath.Join(root, c)); err == nil {
			v1 = true
		}
	}
	if !v1 {
		return "none"
	}
	if _, err := os.Stat(filepath.Join(root, "unified", "cgroup.controllers")); err == nil {
		return "hybrid"
	}
	return "v1"
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

// toolVersion runs NAME ARGS and returns the first line it prints, or "" if
// the tool is not installed.
func toolVersion(name string, args ...string) string {
	path, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
