package stack

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slowlab/slowlab/appserver/asgi"
	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/child"
)

func init() { RegisterApp(uvicornApp{}) }

// uvicornApp is Uvicorn (Debian python3-uvicorn) serving
// appserver/asgi/app.py, a framework-free ASGI app with the WSGI app's
// endpoints and records, in W worker processes of one event loop each
// (uvicorn-W). Its /large?backpressure=off buffers the body ahead of the
// socket, which the BackpressureOff model flag tells the experiments.
type uvicornApp struct{}

var (
	_ App          = uvicornApp{}
	_ ModelChecker = uvicornApp{}
	_ RunningApp   = (*uvicornRun)(nil)
	_ HeldCounter  = (*uvicornRun)(nil)
)

func (uvicornApp) Name() string       { return "uvicorn" }
func (uvicornApp) Needs() []string    { return []string{"python3"} }
func (uvicornApp) Packages() []string { return []string{"python3-uvicorn"} }
func (uvicornApp) Real() bool         { return true }

func (uvicornApp) Models() []Model {
	return []Model{{Name: "uvicorn", Sized: true, Async: true, BackpressureOff: true}}
}

// Validate accepts every setting: none of them is Uvicorn's.
func (uvicornApp) Validate(Settings) error { return nil }

// ModelInstalled implements ModelChecker: uvicorn is a Python module, which
// the python3 on PATH may lack (a pyenv or venv build) while Debian's has it.
func (uvicornApp) ModelInstalled(string) error {
	_, err := findUvicornPython(uvicornPythons)
	return err
}

// Versions implements Versioned: the uvicorn module's, and its Python's.
func (uvicornApp) Versions() map[string]string {
	py, err := findUvicornPython(uvicornPythons)
	if err != nil {
		return nil
	}
	return map[string]string{"uvicorn": pythonModuleVersion(py, "uvicorn"), "python3": programVersion(py, "--version")}
}

// uvicornPythons are the interpreters tried for uvicorn, in order: the
// python3 on PATH, then Debian's, where python3-uvicorn installs it.
var uvicornPythons = []string{"python3", "/usr/bin/python3"}

// findUvicornPython returns the first of candidates (names on PATH or
// paths) that can import uvicorn, else an error naming the package.
// Once a process for each list of candidates.
func findUvicornPython(candidates []string) (string, error) {
	r := installed("uvicorn python\x00"+strings.Join(candidates, "\x00"), func() result[string] {
		py, err := probeUvicornPython(candidates)
		return result[string]{py, err}
	})
	return r.v, r.err
}

func probeUvicornPython(candidates []string) (string, error) {
	var tried []string
	for _, c := range candidates {
		py, err := exec.LookPath(c)
		if err != nil || slices.Contains(tried, py) {
			continue
		}
		tried = append(tried, py)
		if exec.Command(py, "-c", "import uvicorn").Run() == nil {
			return py, nil
		}
	}
	if len(tried) == 0 {
		return "", fmt.Errorf("uvicorn needs python3 (apt-get install python3-uvicorn): no %s found", strings.Join(candidates, ", "))
	}
	return "", fmt.Errorf("uvicorn needs a python3 that can import uvicorn (apt-get install python3-uvicorn): tried %s", strings.Join(tried, ", "))
}

// uvicornListenFD is the listening socket's descriptor in Uvicorn: the
// first of the files passed on (child.StartWithFiles).
const uvicornListenFD = 3

// Uvicorn's log lines that Start waits for: each worker logs its PID, then
// the ready line once app.py has answered the lifespan startup (just
// before it accepts). A failure ends the wait early, since with several
// workers Uvicorn's parent outlives a worker that could not load the app:
// the last line of a traceback (which names the cause) or Uvicorn's own.
var (
	uvicornWorkerRE    = regexp.MustCompile(`Started server process \[(\d+)\]`)
	uvicornWorkerReady = []byte("Application startup complete.")
	uvicornFailedRE    = regexp.MustCompile(`(?m)^(?:[\w.]*(?:Error|Exception): .*|.*Error loading ASGI app.*|.*Application startup failed.*)$`)
)

// Start writes the app into the work dir and starts Uvicorn inside cg from
// its first instruction on (cgroup.ExecArgv), on a loopback socket bound
// here to a kernel-chosen port and passed as --fd: with several workers
// Uvicorn's parent binds the socket and logs the port it was asked for,
// so --port 0 would leave the port unknown. Start returns once every
// worker has started and /fast answers.
//
// Connections accepted on a passed socket go without TCP_NODELAY (asyncio
// sets it only on sockets it knows to be TCP), as they do on the socket
// Uvicorn's own multi-worker parent binds; so every uvicorn-W behaves as
// uvicorn-2 would with --port, uvicorn-1 included.
func (uvicornApp) Start(ctx context.Context, d Deployment, s Settings, cg *cgroup.Cgroup) (RunningApp, error) {
	if d.AppTimeout != 0 {
		// Measured (Uvicorn 0.17.6, h11): a connection that sends nothing,
		// or a header a byte at a time, is held until the client leaves;
		// --timeout-keep-alive only closes a kept-alive connection after a
		// response, and nothing bounds a request being served.
		return nil, fmt.Errorf("app timeout %v: uvicorn has no worker timeout (--timeout-keep-alive only closes a kept-alive connection between requests); leave it 0", d.AppTimeout)
	}
	py, err := findUvicornPython(uvicornPythons)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(d.WorkDir, "asgi")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("app dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.py"), asgi.AppSource, 0o644); err != nil {
		return nil, fmt.Errorf("write app.py: %w", err)
	}
	ap, err := newAppProcess(d.WorkDir)
	if err != nil {
		return nil, err
	}
	r := &uvicornRun{appProcess: ap}
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("uvicorn's socket: %w", err)
	}
	r.addr = ln.Addr().String()
	sock, err := ln.File() // a copy of the socket, for Uvicorn
	ln.Close()
	if err != nil {
		return nil, fmt.Errorf("uvicorn's socket: %w", err)
	}
	defer sock.Close() // once started, only Uvicorn holds the socket
	var procs []string
	if cg != nil {
		procs = cg.ProcsFiles()
	}
	argv := cgroup.ExecArgv(procs, uvicornArgv(py, dir, d.Server.Workers))
	r.p, err = child.StartWithFiles(ctx, "uvicorn", filepath.Join(d.LogDir, d.RunID+"-uvicorn.log"), argv, r.env(d), []*os.File{sock})
	if err != nil {
		return nil, err
	}
	if err := r.waitReady(ctx, d.Server.Workers); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// uvicornArgv is Uvicorn's command line: the HTTP and WebSocket
// implementations and event loop pinned to the pure-Python ones Debian's
// package runs (httptools, websockets or uvloop, where installed, would
// change what is measured; wsproto is a dependency of python3-uvicorn);
// lifespan on,
// for the per-worker ready line; no access log; its log at info on stderr.
// --no-proxy-headers: the client address the app sees (and reports as
// X-Slowlab-Peer-Port, which pairs its socket with the proxy's) is the
// connection's, never one an X-Forwarded-For header from a user's NGINX
// snippet put there (Uvicorn's default trusts it from 127.0.0.1 and then
// reports port 0).
func uvicornArgv(py, dir string, workers int) []string {
	return []string{py, "-m", "uvicorn", "--fd", strconv.Itoa(uvicornListenFD), "--workers", strconv.Itoa(workers),
		"--app-dir", dir, "--http", "h11", "--loop", "asyncio", "--ws", "wsproto", "--lifespan", "on",
		"--no-access-log", "--log-level", "info", "--no-use-colors", "--no-proxy-headers", asgi.AppModule}
}

// uvicornRun is a started Uvicorn.
type uvicornRun struct {
	*appProcess
	workers []int // the worker processes' PIDs (the parent's own with one worker)
}

// env is Uvicorn's environment: app.py's settings, and none of the
// UVICORN_* variables that would set options behind the lab's back.
func (r *uvicornRun) env(d Deployment) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "UVICORN_") })
	return r.appEnv(withoutEnv(env, "WEB_CONCURRENCY"), d, "PYTHONDONTWRITEBYTECODE=1")
}

// waitReady waits for every worker's ready line, then for /fast to
// answer; a worker that failed to load the app fails it at once.
func (r *uvicornRun) waitReady(ctx context.Context, workers int) error {
	deadline := time.Now().Add(child.ReadyTimeout)
	var log []byte
	_, err := child.WaitLog(ctx, r.p, deadline, func(b []byte) ([][]byte, bool) {
		log = b
		return nil, uvicornFailedRE.Match(b) || bytes.Count(b, uvicornWorkerReady) >= workers
	})
	if err != nil {
		return err
	}
	if m := uvicornFailedRE.Find(log); m != nil {
		return fmt.Errorf("uvicorn: a worker failed to start: %s (log %s)", m, r.p.LogPath())
	}
	for _, m := range uvicornWorkerRE.FindAllSubmatch(log, -1) {
		pid, _ := strconv.Atoi(string(m[1]))
		r.workers = append(r.workers, pid)
	}
	return child.WaitHTTP(ctx, r.p, "http://"+r.addr+"/fast", deadline)
}

// WorkersFailed implements WorkerWatcher: Uvicorn's parent neither
// notices nor replaces a worker that died (killed for memory, say), so
// the run would go on with fewer workers than its server label says.
func (r *uvicornRun) WorkersFailed() error {
	if len(r.workers) < 2 { // one worker is the parent, which Failed watches
		return nil
	}
	for _, pid := range r.workers {
		if !child.Alive(pid) {
			return fmt.Errorf("worker %d exited during the run", pid)
		}
	}
	return nil
}
