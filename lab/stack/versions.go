package stack

import (
	"context"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// Versioned is a component that reports the versions of the programs and
// modules it runs (environment.json's versions): name -> version, what is
// installed only.
type Versioned interface {
	Versions() map[string]string
}

// Versions are what the stack's components report, apps then proxy; none
// for the embedded components (slowlab itself) or an external stack. A
// name two components report differently (each app's own Python) is kept
// once per component: "python3 (uvicorn)".
func (s Stack) Versions() map[string]string {
	out := map[string]string{}
	for _, c := range s.components() {
		v, ok := c.(Versioned)
		if !ok {
			continue
		}
		reported := v.Versions()
		for _, name := range slices.Sorted(maps.Keys(reported)) {
			version := reported[name]
			switch had, seen := out[name]; {
			case version == "" || had == version:
			case seen:
				out[name+" ("+c.Name()+")"] = version
			default:
				out[name] = version
			}
		}
	}
	return out
}

// installed memoizes probe's answer under key for the life of the
// process: what is installed (a program's version, whether a Python
// imports a module, which interpreter has it) does not change while
// slowlab runs, and each probe starts a Python or a Node.js, seconds on a
// loaded machine, which every session (every test of a package) would
// otherwise pay again for every component of its stack.
func installed[T any](key string, probe func() T) T {
	p, _ := probes.LoadOrStore(key, &probed{})
	pr := p.(*probed)
	pr.once.Do(func() { pr.v = probe() })
	v, _ := pr.v.(T) // a nil error is stored as a nil any
	return v
}

// probes are installed's answers: key -> *probed.
var probes sync.Map

type probed struct {
	once sync.Once
	v    any
}

// result is a probe's answer that can fail, for installed.
type result[T any] struct {
	v   T
	err error
}

// programVersion runs program with args and returns the first line it
// prints, or "" when it is not installed or fails (once a process).
func programVersion(program string, args ...string) string {
	key := strings.Join(append([]string{"version", program}, args...), "\x00")
	return installed(key, func() string { return runVersion(program, args...) })
}

func runVersion(program string, args ...string) string {
	path, err := exec.LookPath(program)
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

// pythonModuleVersion is module's __version__ in the Python py, or ""
// when py cannot import it.
func pythonModuleVersion(py, module string) string {
	return programVersion(py, "-c", "import "+module+"; print("+module+".__version__)")
}

// Versions implements Versioned: nginx -v. (Here rather than in
// proxy_nginx.go, which is at the 400-line limit.)
func (nginxProxy) Versions() map[string]string {
	return map[string]string{"nginx": programVersion("nginx", "-v")}
}
