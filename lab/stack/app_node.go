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
	"strconv"
	"strings"
	"time"

	"github.com/slowlab/slowlab/appserver/node"
	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/child"
)

func init() { RegisterApp(nodeApp{}) }

// nodeApp is Node.js (Debian nodejs) serving appserver/node/app.js, a
// node:http app with the embedded app's endpoints and Server-Timing
// semantics, its /ws on the ws library (Debian node-ws), as server
// node-W: W worker processes, each an event loop that takes every request
// it is handed (no slots).
//
// With W > 1 a node:cluster primary forks the workers and, on Linux,
// accepts every connection itself and hands it to the next worker
// round-robin (cluster.SCHED_RR), unlike Gunicorn's workers, which each
// accept from the shared socket: which worker serves a connection is the
// primary's turn order, not which one got to accept first, and the
// primary, which serves no request, spends CPU of the app's cgroup on
// every accept. With W = 1 one process accepts and serves.
//
// /large?backpressure=off writes the whole body into the response at once,
// ignoring res.write's return value, so a slow reader's body waits in the
// worker's memory (Model.BackpressureOff); without it, app.js writes the
// next chunk only once the socket took the last.
type nodeApp struct{}

var (
	_ App          = nodeApp{}
	_ ModelChecker = nodeApp{}
	_ RunningApp   = (*nodeRun)(nil)
	_ HeldCounter  = (*nodeRun)(nil)
)

func (nodeApp) Name() string            { return "node" }
func (nodeApp) Needs() []string         { return []string{"node"} }
func (nodeApp) Packages() []string      { return []string{"nodejs", "node-ws"} }
func (nodeApp) Real() bool              { return true }
func (nodeApp) Validate(Settings) error { return nil }

// Versions implements Versioned: node --version, and the version of the
// ws module app.js serves /ws with, where it loads.
func (nodeApp) Versions() map[string]string {
	ws, _ := nodeWSVersion()
	return map[string]string{"node": programVersion("node", "--version"), "ws": ws}
}

// nodeWSVersion is the version of the ws module app.js loads, which
// `node - --ws-version` with app.js on stdin prints (with its file); the
// error says why there is none (app.js's own message). Once a process.
func nodeWSVersion() (string, error) {
	r := installed("node ws", func() result[string] {
		v, err := probeNodeWS()
		return result[string]{v, err}
	})
	return r.v, r.err
}

func probeNodeWS() (string, error) {
	bin, err := exec.LookPath("node")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-", "--ws-version")
	cmd.Stdin = bytes.NewReader(node.AppSource)
	cmd.Env = withoutEnv(os.Environ(), "NODE_OPTIONS")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("node app.js --ws-version: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	version, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	return version, nil
}

func (nodeApp) Models() []Model {
	return []Model{{Name: "node", Sized: true, Async: true, BackpressureOff: true}}
}

// nodeMinMajor is the oldest Node.js app.js runs on (cluster.isPrimary,
// ??, OutgoingMessage.destroyed; Debian bookworm has 18).
const nodeMinMajor = 18

var nodeVersionRE = regexp.MustCompile(`^v(\d+)\.`)

// ModelInstalled implements ModelChecker: app.js needs a recent enough
// Node.js, and the ws module (Debian node-ws).
func (nodeApp) ModelInstalled(string) error {
	return installed("node installed", nodeInstalled)
}

func nodeInstalled() error {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return fmt.Errorf("node --version: %w", err)
	}
	m := nodeVersionRE.FindSubmatch(bytes.TrimSpace(out))
	if m == nil {
		return fmt.Errorf("node --version: %q is not a version", bytes.TrimSpace(out))
	}
	if major, _ := strconv.Atoi(string(m[1])); major < nodeMinMajor {
		return fmt.Errorf("node %s is too old: the node server needs Node.js %d or later (apt-get install nodejs)", bytes.TrimSpace(out), nodeMinMajor)
	}
	_, err = nodeWSVersion()
	return err
}

// Start writes the app into the work dir and starts it on a kernel-chosen
// loopback port, which app.js reports in a ready line once every worker
// listens (no window in which another process could take a port picked in
// advance), inside cg from its first instruction on (cgroup.ExecArgv).
func (nodeApp) Start(ctx context.Context, d Deployment, s Settings, cg *cgroup.Cgroup) (RunningApp, error) {
	if d.AppTimeout != 0 {
		// Measured (Node.js 20): server.headersTimeout (60 s, checked every
		// connectionsCheckingInterval, 30 s) answers 408 to a connection
		// whose header has not arrived, and requestTimeout (300 s) bounds
		// receiving a request; neither ends a request being served, which
		// is what Gunicorn's --timeout does.
		return nil, fmt.Errorf("app timeout %v: node has no worker timeout (headersTimeout and requestTimeout bound receiving a request, not serving it); leave it 0", d.AppTimeout)
	}
	dir := filepath.Join(d.WorkDir, "node")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("app dir: %w", err)
	}
	app := filepath.Join(dir, node.AppFile)
	if err := os.WriteFile(app, node.AppSource, 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", node.AppFile, err)
	}
	bin, err := exec.LookPath("node")
	if err != nil {
		return nil, err
	}
	ap, err := newAppProcess(d.WorkDir)
	if err != nil {
		return nil, err
	}
	r := &nodeRun{ap}
	var procs []string
	if cg != nil {
		procs = cg.ProcsFiles()
	}
	r.p, err = child.Start(ctx, "node", filepath.Join(d.LogDir, d.RunID+"-node.log"), cgroup.ExecArgv(procs, []string{bin, app}), r.env(d))
	if err != nil {
		return nil, err
	}
	if err := r.waitReady(ctx); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// nodeRun is a started app.js: on SIGTERM its primary also stops its
// workers and exits once they are gone; app.js keeps the send log and
// held files in app.py's formats.
type nodeRun struct{ *appProcess }

// env is app.js's environment: its settings, and none of the NODE_
// variables that would change how it runs (preloaded modules, heap
// limits, the cluster's scheduling).
func (r *nodeRun) env(d Deployment) []string {
	return r.appEnv(withoutEnv(os.Environ(), "NODE_OPTIONS", "NODE_CLUSTER_SCHED_POLICY", node.WorkersEnv), d,
		node.WorkersEnv+"="+strconv.Itoa(d.Server.Workers))
}

// waitReady waits for app.js's ready line, then for /fast to answer.
// app.js prints it on stderr, which goes to the log: child.Start takes the
// first ready line on stdout, cgroup.ExecArgv's, and would swallow a
// second one there.
func (r *nodeRun) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(child.ReadyTimeout)
	m, err := child.WaitLog(ctx, r.p, deadline, func(log []byte) ([][]byte, bool) {
		addr, ok := nodeReadyAddr(log)
		return [][]byte{[]byte(addr)}, ok
	})
	if err != nil {
		return err
	}
	r.addr = string(m[0])
	if host, _, err := net.SplitHostPort(r.addr); err != nil || host != "127.0.0.1" {
		return fmt.Errorf("node: ready on %q, want 127.0.0.1:PORT: %s", r.addr, r.p.LogTail())
	}
	return child.WaitHTTP(ctx, r.p, "http://"+r.addr+"/fast", deadline)
}

// nodeReadyAddr returns the listen address of the first whole ready line
// in log.
func nodeReadyAddr(log []byte) (string, bool) {
	whole := log[:bytes.LastIndexByte(log, '\n')+1]
	for _, line := range bytes.Split(whole, []byte("\n")) {
		if rd, ok := child.ParseReady(string(line)); ok && rd[child.KeyListen] != "" {
			return rd[child.KeyListen], true
		}
	}
	return "", false
}
