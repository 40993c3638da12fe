package stack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/slowlab/slowlab/appserver/wsgi"
	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/child"
)

func init() { RegisterApp(gunicornApp{}) }

// gunicornApp is Gunicorn (Debian gunicorn) serving appserver/wsgi/app.py, a
// framework-free WSGI app with the embedded app's endpoints and
// Server-Timing semantics, with the sync, gthread and gevent worker
// classes (gevent-WxC: W workers of C worker connections each; Debian
// python3-gevent).
type gunicornApp struct{}

func (gunicornApp) Name() string       { return "gunicorn" }
func (gunicornApp) Needs() []string    { return []string{"gunicorn"} }
func (gunicornApp) Packages() []string { return []string{"gunicorn"} }
func (gunicornApp) Real() bool         { return true }

func (gunicornApp) Models() []Model {
	return []Model{{Name: "sync", Sized: true}, {Name: "gthread", Sized: true, Threads: true}, {Name: "gevent", Sized: true, Threads: true, Second: "C"}}
}

// ModelInstalled implements ModelChecker: the gevent worker class needs
// the gevent module in the Python that runs Gunicorn.
func (gunicornApp) ModelInstalled(model string) error {
	if model != "gevent" {
		return nil
	}
	py, err := gunicornPython()
	if err != nil {
		return err
	}
	return installed("import gevent\x00"+py, func() error {
		if out, err := exec.Command(py, "-c", "import gevent").CombinedOutput(); err != nil {
			return fmt.Errorf("gunicorn's gevent worker needs the gevent module in %s (apt-get install python3-gevent): %v: %s", py, err, bytes.TrimSpace(out))
		}
		return nil
	})
}

// Versions implements Versioned: Gunicorn's, and its Python's and the
// gevent module's in it (the gevent worker class), where installed.
func (gunicornApp) Versions() map[string]string {
	v := map[string]string{"gunicorn": programVersion("gunicorn", "--version")}
	if py, err := gunicornPython(); err == nil {
		v["python3"], v["gevent"] = programVersion(py, "--version"), pythonModuleVersion(py, "gevent")
	}
	return v
}

// gunicornPython is the interpreter the gunicorn on PATH runs with, from
// its #! line.
func gunicornPython() (string, error) {
	bin, err := exec.LookPath("gunicorn")
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	fields := strings.Fields(strings.TrimPrefix(string(line), "#!"))
	if !bytes.HasPrefix(line, []byte("#!")) || len(fields) == 0 {
		return "", fmt.Errorf("%s: no #! line naming its Python", bin)
	}
	if filepath.Base(fields[0]) == "env" && len(fields) > 1 {
		return exec.LookPath(fields[1])
	}
	return fields[0], nil
}

// Validate checks the extra Gunicorn arguments.
func (gunicornApp) Validate(s Settings) error { return ValidateGunicornArgs(s.GunicornArgs) }

// gunicornOwnedFlags are set by the lab: the bind address, worker model and
// log are how it finds and measures Gunicorn.
var gunicornOwnedFlags = []string{"-b", "--bind", "-w", "--workers", "-k", "--worker-class", "--threads",
	"--chdir", "-c", "--config", "-D", "--daemon", "--error-logfile", "--log-file", "--log-level", "--worker-tmp-dir"}

// ValidateModel implements ModelValidator: a gevent server's worker
// connections are its size (gevent-WxC), which the lab sets.
func (gunicornApp) ValidateModel(model string, s Settings) error {
	if model != "gevent" {
		return nil
	}
	return validateGunicornFlags(s.GunicornArgs, []string{"--worker-connections"}, "for a gevent server (its size, gevent-WxC)")
}

// ValidateGunicornArgs refuses extra arguments that are empty or set a
// flag the lab sets itself.
func ValidateGunicornArgs(args []string) error {
	return validateGunicornFlags(args, gunicornOwnedFlags, "")
}

// validateGunicornFlags refuses empty arguments and any that sets one of
// owned; why says when the lab sets them.
func validateGunicornFlags(args, owned []string, why string) error {
	for _, a := range args {
		if a == "" || strings.ContainsRune(a, 0) {
			return fmt.Errorf("extra gunicorn argument %q: must be non-empty text", a)
		}
		for _, f := range owned {
			short := len(f) == 2
			if a == f || !short && strings.HasPrefix(a, f+"=") || short && !strings.HasPrefix(a, "--") && strings.HasPrefix(a, f) {
				return fmt.Errorf("extra gunicorn argument %q: %s is set by the lab%s", a, f, strings.TrimRight(" "+why, " "))
			}
		}
	}
	return nil
}

var gunicornListeningRE = regexp.MustCompile(`Listening at: http://(127\.0\.0\.1:\d+)`)

// gunicornWorkerReady is what gunicornConf logs when a worker has loaded
// the app and is about to accept: a run must not start with workers still
// booting (under a 0.25-core quota that takes a moment), or its first
// requests would see fewer workers than the condition says.
const gunicornWorkerReady = "slowlab: worker ready"

// gunicornConf is given with --config, so that a gunicorn.conf.py in the
// current directory is not read. Settings are on the command line; this
// file only holds the hook that tells the lab a worker is ready.
const gunicornConf = `# Generated by slowlab: Gunicorn's settings are on its command line.


def post_worker_init(worker):
    worker.log.info("` + gunicornWorkerReady + ` (pid %s)", worker.pid)
`

// Start writes the app into the work dir and starts Gunicorn on a
// kernel-chosen loopback port, which it reads back from Gunicorn's log
// (no window in which another process could take a port picked in
// advance), inside cg from its first instruction on (cgroup.ExecArgv).
func (gunicornApp) Start(ctx context.Context, d Deployment, s Settings, cg *cgroup.Cgroup) (RunningApp, error) {
	if d.AppTimeout != 0 {
		if err := validateGunicornFlags(s.GunicornArgs, []string{"-t", "--timeout"}, "for this run (its app timeout)"); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(d.WorkDir, "wsgi")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("app dir: %w", err)
	}
	conf := filepath.Join(dir, "gunicorn.conf.py")
	for name, b := range map[string][]byte{"app.py": wsgi.AppSource, "gunicorn.conf.py": []byte(gunicornConf)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
	}
	bin, err := exec.LookPath("gunicorn")
	if err != nil {
		return nil, err
	}
	ap, err := newAppProcess(d.WorkDir)
	if err != nil {
		return nil, err
	}
	r := &gunicornRun{ap}
	argv := gunicornArgv(bin, conf, dir, d, s)
	var procs []string
	if cg != nil {
		procs = cg.ProcsFiles()
	}
	r.p, err = child.Start(ctx, "gunicorn", filepath.Join(d.LogDir, d.RunID+"-gunicorn.log"), cgroup.ExecArgv(procs, argv), r.env(d))
	if err != nil {
		return nil, err
	}
	if err := r.waitReady(ctx, d.Server.Workers); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// gunicornArgv is Gunicorn's command line: no access log (Gunicorn's
// default); errors to stderr, at info so the "Listening at" line is
// there; a short graceful timeout so that Stop does not wait for a slow
// download; the deployment's --timeout when it sets one; the user's extra
// arguments last.
func gunicornArgv(bin, conf, dir string, d Deployment, s Settings) []string {
	argv := []string{bin, "--config", conf, "--chdir", dir, "--bind", "127.0.0.1:0",
		"--worker-class", d.Server.Model, "--workers", strconv.Itoa(d.Server.Workers)}
	switch d.Server.Model {
	case "gthread":
		argv = append(argv, "--threads", strconv.Itoa(d.Server.Threads))
	case "gevent":
		argv = append(argv, "--worker-connections", strconv.Itoa(d.Server.Threads))
	}
	if d.AppTimeout != 0 {
		argv = append(argv, "--timeout", strconv.Itoa(int(d.AppTimeout/time.Second)))
	}
	argv = append(argv, "--graceful-timeout", "2", "--worker-tmp-dir", d.WorkDir,
		"--error-logfile", "-", "--log-level", "info")
	argv = append(argv, s.GunicornArgs...)
	return append(argv, wsgi.AppModule)
}

// gunicornRun is a started Gunicorn.
type gunicornRun struct{ *appProcess }

// env is Gunicorn's environment: app.py's settings, no inherited
// GUNICORN_CMD_ARGS.
func (r *gunicornRun) env(d Deployment) []string {
	return r.appEnv(withoutEnv(os.Environ(), "GUNICORN_CMD_ARGS"), d, "PYTHONDONTWRITEBYTECODE=1")
}

// waitReady waits for the "Listening at" line and every worker's ready
// line, then for /fast to answer.
func (r *gunicornRun) waitReady(ctx context.Context, workers int) error {
	deadline := time.Now().Add(child.ReadyTimeout)
	m, err := child.WaitLog(ctx, r.p, deadline, func(log []byte) ([][]byte, bool) {
		m := gunicornListeningRE.FindSubmatch(log)
		return m, m != nil && bytes.Count(log, []byte(gunicornWorkerReady)) >= workers
	})
	if err != nil {
		return err
	}
	r.addr = string(m[1])
	return child.WaitHTTP(ctx, r.p, "http://"+r.addr+"/fast", deadline)
}

// WhyNoWebSocket implements NoWebSocket: WSGI has no way to hold one, and
// the WSGI app's /ws answers 426.
func (gunicornApp) WhyNoWebSocket() string {
	return "gunicorn serves a WSGI app, which cannot hold a WebSocket (its /ws answers 426)"
}
