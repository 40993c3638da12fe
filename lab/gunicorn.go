package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slowlab/slowlab/target"
	"github.com/slowlab/slowlab/target/wsgi"
)

// GunicornNginx is the real stack of EXPERIMENTS.md section 1: Gunicorn
// serving target/wsgi/app.py and, on the proxy routes, a single-process
// NGINX in front of it. Each is a child of the lab, started with a generated
// config in the run's work directory and, when Limits is set, inside its
// own cgroup from its first instruction on (see cgroupExecArgv).
type GunicornNginx struct {
	// Limits are the cgroup limits by component: app (Gunicorn and its
	// workers) and proxy (NGINX); a component missing from a non-nil map
	// gets a cgroup without limits, so it is still measured. loadgen is
	// accepted but not applied here: the lab runs the load generator.
	// nil runs everything unlimited, without cgroups.
	Limits map[string]Limits
	// CgroupRoot is where cgroup filesystems are mounted; DefaultCgroupRoot
	// when empty.
	CgroupRoot string
	// ExtraGunicornArgs are added to Gunicorn's command line, except flags
	// the lab sets itself (see gunicornOwnedFlags).
	ExtraGunicornArgs []string
	// NginxSnippet is added to NGINX's location block, after the lab's
	// proxy settings; it must not set those again.
	NginxSnippet string
}

var _ Stack = GunicornNginx{}

// Name implements Stack.
func (GunicornNginx) Name() string { return "gunicorn-nginx" }

// GunicornNginxAvailable returns nil when gunicorn and nginx are both on
// PATH, else an error naming what is missing.
func GunicornNginxAvailable() error {
	var missing []string
	for _, bin := range []string{"gunicorn", "nginx"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the gunicorn-nginx stack needs %s on PATH (Debian packages gunicorn and nginx)", strings.Join(missing, " and "))
	}
	return nil
}

// stackComponents are the components the stack starts and may limit.
var stackComponents = []string{"app", "proxy"}

// Validate checks the stack's settings before anything starts.
func (g GunicornNginx) Validate() error {
	for comp, l := range g.Limits {
		if comp != "loadgen" && !slices.Contains(stackComponents, comp) {
			return fmt.Errorf("limits for %q: components are app, proxy and loadgen", comp)
		}
		if err := l.Validate(); err != nil {
			return fmt.Errorf("limits for %s: %w", comp, err)
		}
	}
	if g.CgroupRoot != "" && !filepath.IsAbs(g.CgroupRoot) {
		return fmt.Errorf("cgroup root %q: must be an absolute path", g.CgroupRoot)
	}
	if err := validateGunicornArgs(g.ExtraGunicornArgs); err != nil {
		return err
	}
	return validateNginxSnippet(g.NginxSnippet)
}

// gunicornOwnedFlags are set by the lab: the bind address, worker model and
// log are how it finds and measures Gunicorn.
var gunicornOwnedFlags = []string{"-b", "--bind", "-w", "--workers", "-k", "--worker-class", "--threads",
	"--chdir", "-c", "--config", "-D", "--daemon", "--error-logfile", "--log-file", "--log-level", "--worker-tmp-dir"}

func validateGunicornArgs(args []string) error {
	for _, a := range args {
		if a == "" || strings.ContainsRune(a, 0) {
			return fmt.Errorf("extra gunicorn argument %q: must be non-empty text", a)
		}
		for _, f := range gunicornOwnedFlags {
			short := len(f) == 2
			if a == f || !short && strings.HasPrefix(a, f+"=") || short && !strings.HasPrefix(a, "--") && strings.HasPrefix(a, f) {
				return fmt.Errorf("extra gunicorn argument %q: %s is set by the lab", a, f)
			}
		}
	}
	return nil
}

// validateDeployment checks what this stack needs from d.
func validateDeployment(d Deployment) error {
	switch {
	case !d.Route.Valid():
		return fmt.Errorf("route %q: allowed %v", d.Route, Routes)
	case d.Server.Model != "sync" && d.Server.Model != "gthread":
		return fmt.Errorf("server model %q: the gunicorn-nginx stack runs sync or gthread", d.Server.Model)
	case d.Server.Workers < 1:
		return fmt.Errorf("server workers %d: must be at least 1", d.Server.Workers)
	case d.Server.Model == "gthread" && d.Server.Threads < 1:
		return fmt.Errorf("server threads %d: must be at least 1", d.Server.Threads)
	case d.LargeSize < 0 || d.LargeSize > 1<<30:
		return fmt.Errorf("large size %d: want 0..%d bytes", d.LargeSize, 1<<30)
	case d.RunID == "" || d.RunID == "." || d.RunID == ".." || strings.ContainsAny(d.RunID, "/\x00"):
		return fmt.Errorf("run id %q: must be a non-empty name without /", d.RunID)
	case d.WorkDir == "" || d.LogDir == "":
		return errors.New("deployment needs a work dir and a log dir")
	}
	return nil
}

// Start implements Stack. On error everything it started is stopped and
// every cgroup it created removed.
func (g GunicornNginx) Start(ctx context.Context, d Deployment) (Running, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := validateDeployment(d); err != nil {
		return nil, err
	}
	if err := GunicornNginxAvailable(); err != nil {
		return nil, err
	}
	r := &gunicornRun{cgroups: map[string]*Cgroup{}, sendLog: filepath.Join(d.WorkDir, "app-send.jsonl")}
	started := false
	defer func() {
		if !started {
			r.Stop()
		}
	}()
	comps := stackComponents[:1]
	if d.Route != RouteDirect {
		comps = stackComponents
	}
	if g.Limits != nil {
		root := g.CgroupRoot
		if root == "" {
			root = DefaultCgroupRoot
		}
		for _, comp := range comps {
			cg, err := NewCgroup(root, "slowlab/"+d.RunID+"/"+comp, g.Limits[comp])
			if err != nil {
				return nil, fmt.Errorf("%s cgroup: %w", comp, err)
			}
			r.cgroups[comp] = cg
		}
	}
	deadline := time.Now().Add(ReadyTimeout)
	appAddr, err := r.startGunicorn(ctx, g, d, deadline)
	if err != nil {
		return nil, err
	}
	r.url = "http://" + appAddr
	if d.Route != RouteDirect {
		if err := r.startNginx(ctx, g, d, appAddr, deadline); err != nil {
			return nil, err
		}
	}
	started = true
	return r, nil
}

// gunicornRun is a started GunicornNginx.
type gunicornRun struct {
	app, proxy *child
	url        string
	tempDir    string
	sendLog    string
	heldDir    string             // where app.py's workers report their held long-polls
	cgroups    map[string]*Cgroup // component -> its cgroup; empty without limits

	stopOnce sync.Once
	stopErr  error
}

// procsFiles are the cgroup.procs files comp's process must join.
func (r *gunicornRun) procsFiles(comp string) []string {
	if cg := r.cgroups[comp]; cg != nil {
		return cg.procsFiles()
	}
	return nil
}

var gunicornListeningRE = regexp.MustCompile(`Listening at: http://(127\.0\.0\.1:\d+)`)

// startGunicorn writes the app into the work dir and starts Gunicorn on a
// kernel-chosen loopback port, which it reads back from Gunicorn's log (no
// window in which another process could take a port picked in advance).
func (r *gunicornRun) startGunicorn(ctx context.Context, g GunicornNginx, d Deployment, deadline time.Time) (string, error) {
	dir := filepath.Join(d.WorkDir, "wsgi")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("app dir: %w", err)
	}
	conf := filepath.Join(dir, "gunicorn.conf.py")
	for name, b := range map[string][]byte{"app.py": wsgi.AppSource, "gunicorn.conf.py": []byte(gunicornConf)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", name, err)
		}
	}
	bin, err := exec.LookPath("gunicorn")
	if err != nil {
		return "", err
	}
	argv := []string{bin, "--config", conf, "--chdir", dir, "--bind", "127.0.0.1:0",
		"--worker-class", d.Server.Model, "--workers", strconv.Itoa(d.Server.Workers)}
	if d.Server.Model == "gthread" {
		argv = append(argv, "--threads", strconv.Itoa(d.Server.Threads))
	}
	// No access log (Gunicorn's default); errors to stderr, at info so the
	// "Listening at" line is there; a short graceful timeout so that Stop
	// does not wait for a slow download.
	argv = append(argv, "--graceful-timeout", "2", "--worker-tmp-dir", d.WorkDir,
		"--error-logfile", "-", "--log-level", "info")
	argv = append(argv, g.ExtraGunicornArgs...)
	argv = append(argv, wsgi.AppModule)
	r.heldDir = filepath.Join(d.WorkDir, "held")
	if err := os.MkdirAll(r.heldDir, 0o755); err != nil {
		return "", fmt.Errorf("held long-polls directory: %w", err)
	}
	env := append(withoutEnv(os.Environ(), "GUNICORN_CMD_ARGS", "SLOWLAB_APP_SEND_LOG", "SLOWLAB_LARGE_SIZE", "SLOWLAB_HELD_DIR"),
		"SLOWLAB_APP_SEND_LOG="+r.sendLog, "SLOWLAB_LARGE_SIZE="+strconv.FormatInt(d.LargeSize, 10), "SLOWLAB_HELD_DIR="+r.heldDir,
		"PYTHONDONTWRITEBYTECODE=1")
	c, err := startChild(ctx, "gunicorn", filepath.Join(d.LogDir, d.RunID+"-gunicorn.log"),
		cgroupExecArgv(r.procsFiles("app"), argv), env)
	if err != nil {
		return "", err
	}
	r.app = c
	m, err := waitLog(ctx, c, deadline, func(log []byte) ([][]byte, bool) {
		m := gunicornListeningRE.FindSubmatch(log)
		return m, m != nil && bytes.Count(log, []byte(gunicornWorkerReady)) >= d.Server.Workers
	})
	if err != nil {
		return "", err
	}
	addr := string(m[1])
	return addr, waitHTTP(ctx, c, "http://"+addr+"/fast", deadline)
}

// gunicornWorkerReady is what gunicornConf logs when a worker has loaded the
// app and is about to accept: a run must not start with workers still
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

// waitLog polls c's log until done says it shows readiness, and returns
// what done found in it.
func waitLog(ctx context.Context, c *child, deadline time.Time, done func(log []byte) ([][]byte, bool)) ([][]byte, error) {
	for {
		if b, err := os.ReadFile(c.logf.Name()); err == nil {
			if m, ok := done(b); ok {
				return m, nil
			}
		}
		if err := pollReady(ctx, c, deadline, "its log does not show it listening with every worker booted"); err != nil {
			return nil, err
		}
	}
}

// waitHTTP polls url until it answers 200: the readiness of a server that
// prints no ready line of its own.
func waitHTTP(ctx context.Context, c *child, url string, deadline time.Time) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	why := ""
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			why = "answers " + resp.Status
		} else {
			why = err.Error()
		}
		if err := pollReady(ctx, c, deadline, "GET "+url+": "+why); err != nil {
			return err
		}
	}
}

// pollReady waits one polling interval and returns an error, with the log
// tail, if c exited, the deadline passed or ctx ended meanwhile.
func pollReady(ctx context.Context, c *child, deadline time.Time, why string) error {
	t := time.NewTimer(25 * time.Millisecond)
	defer t.Stop()
	select {
	case <-c.done:
		return fmt.Errorf("%s exited before it was ready (%v): %s", c.name, c.err, c.logTail())
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", c.name, ctx.Err())
	case <-t.C:
	}
	if time.Now().After(deadline) {
		return fmt.Errorf("%s not ready after %s (%s): %s", c.name, ReadyTimeout, why, c.logTail())
	}
	return nil
}

// withoutEnv returns env without the named variables.
func withoutEnv(env []string, names ...string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}

// waitGroupGone waits, at most timeout, until no process of process group
// pgid exists: child.stop SIGKILLs Gunicorn's workers but cannot wait for
// them (they are not its children), and the lab's next run, or the cgroup
// removal, should not overlap with them.
func waitGroupGone(pgid int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// URL implements Running: NGINX on the proxy routes, else Gunicorn.
func (r *gunicornRun) URL() string { return r.url }

// PIDs implements Running: Gunicorn's master and NGINX.
func (r *gunicornRun) PIDs() map[string]int {
	m := map[string]int{"app": r.app.pid()}
	if r.proxy != nil {
		m["proxy"] = r.proxy.pid()
	}
	return m
}

// Groups implements Running: a component's cgroup when it has one, else
// its process tree (Gunicorn's master and workers).
func (r *gunicornRun) Groups() map[string][]string {
	g := map[string][]string{}
	for comp, c := range map[string]*child{"app": r.app, "proxy": r.proxy} {
		switch {
		case c == nil:
		case r.cgroups[comp] != nil:
			g[comp] = []string{"cgroup:" + r.cgroups[comp].Path()}
		default:
			g[comp] = []string{"tree:" + strconv.Itoa(c.pid())}
		}
	}
	return g
}

// TempDirs implements Running: NGINX's proxy_temp_path on the proxy routes.
func (r *gunicornRun) TempDirs() []string {
	if r.proxy == nil {
		return nil
	}
	return []string{r.tempDir}
}

// AppSend implements Running from the app's SLOWLAB_APP_SEND_LOG file.
func (r *gunicornRun) AppSend(ctx context.Context) (map[string]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return readAppSendLog(r.sendLog)
}

// readAppSendLog reads the app's JSON lines. A torn last line (a worker
// killed while writing it) is skipped; any other bad line is an error.
func readAppSendLog(path string) (map[string]float64, error) {
	out := map[string]float64{}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil // no /large response finished yet
	}
	if err != nil {
		return nil, fmt.Errorf("app-send: %w", err)
	}
	lines := bytes.Split(b, []byte("\n"))
	for i, line := range lines {
		if len(line) == 0 {
			continue
		}
		var rec target.SendRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			if i == len(lines)-1 {
				continue
			}
			return nil, fmt.Errorf("app-send: %s line %d: %w", path, i+1, err)
		}
		out[rec.ID] = rec.AppSendS
	}
	return out, nil
}

// Failed implements Running.
// LongPollsHeld implements HeldCounter from the files app.py's workers keep
// in heldDir (held-<pid>), skipping workers that have exited.
func (r *gunicornRun) LongPollsHeld(context.Context) (map[string]int, error) {
	ents, err := os.ReadDir(r.heldDir)
	if err != nil {
		return nil, fmt.Errorf("held long-polls: %w", err)
	}
	out := map[string]int{}
	for _, e := range ents {
		pid, ok := strings.CutPrefix(e.Name(), "held-")
		if !ok {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.heldDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("held long-polls: %w", err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("held long-polls: %s: %q is not a count", e.Name(), b)
		}
		out[pid] = n
	}
	return out, nil
}

func (r *gunicornRun) Failed() error {
	for i, c := range []*child{r.app, r.proxy} {
		if c == nil {
			continue
		}
		comp := stackComponents[i]
		if done, err := c.exited(); done {
			return fmt.Errorf("%s: %s (pid %d) exited during the run: %v", comp, c.name, c.pid(), err)
		}
	}
	return nil
}

// Stop implements Running: NGINX, then Gunicorn (SIGTERM to its process
// group, SIGKILL after the grace), then the cgroups. Safe to call again.
func (r *gunicornRun) Stop() error {
	r.stopOnce.Do(func() {
		var errs []error
		if r.proxy != nil {
			errs = append(errs, r.proxy.stop(2*time.Second))
			waitGroupGone(r.proxy.pid(), time.Second)
		}
		if r.app != nil {
			errs = append(errs, r.app.stop(3*time.Second))
			waitGroupGone(r.app.pid(), 2*time.Second)
		}
		for _, comp := range stackComponents {
			if cg := r.cgroups[comp]; cg != nil {
				errs = append(errs, cg.Remove())
			}
		}
		r.stopErr = errors.Join(errs...)
	})
	return r.stopErr
}
