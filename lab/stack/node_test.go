package stack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver/node"
	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

var _ testedApp = (*nodeRun)(nil)

// checkWorkers asserts that Start returned with every worker listening:
// node-1 is one process, node-W a cluster primary and W workers.
func (r *nodeRun) checkWorkers(t *testing.T, d Deployment) {
	t.Helper()
	want := 1
	if w := d.Server.Workers; w > 1 {
		want = 1 + w
	}
	if m := groupMembers(r.p.PID()); len(m) != want {
		t.Errorf("app.js's process group has %v, want %d processes for %s", m, want, d.Server.Name())
	}
}

// servingPIDs are the processes that serve requests: the primary's
// children, or the one process of node-1.
func (r *nodeRun) servingPIDs() []int {
	pid := r.p.PID()
	members := groupMembers(pid)
	if len(members) == 1 {
		return members
	}
	return slices.DeleteFunc(members, func(p int) bool { return p == pid })
}

func TestNodeReadyAddr(t *testing.T) {
	for _, tc := range []struct {
		log, want string
	}{
		{"", ""},
		{"ready listen=127.0.0.1:4000", ""}, // still being written
		{"ready listen=127.0.0.1:4000\n", "127.0.0.1:4000"},
		{"slowlab node app[7]: hello\nready pid=7\nready listen=127.0.0.1:4001\nready listen=127.0.0.1:9\n", "127.0.0.1:4001"},
		{"not ready listen=127.0.0.1:4000\n", ""},
		// What app.js prints is the child protocol's ready line.
		{child.ReadyLine(child.Field{Key: child.KeyListen, Value: "127.0.0.1:4002"}) + "\n", "127.0.0.1:4002"},
	} {
		if got, ok := nodeReadyAddr([]byte(tc.log)); got != tc.want || ok != (tc.want != "") {
			t.Errorf("nodeReadyAddr(%q) = %q, %t; want %q", tc.log, got, ok, tc.want)
		}
	}
}

// The app's environment is the lab's: its settings, no NODE_OPTIONS or
// scheduling policy from outside.
func TestNodeEnv(t *testing.T) {
	t.Setenv("NODE_OPTIONS", "--require /nonexistent.js")
	t.Setenv("NODE_CLUSTER_SCHED_POLICY", "none")
	t.Setenv(node.WorkersEnv, "9")
	r := &nodeRun{&appProcess{sendLog: "/w/app-send.jsonl", heldDir: "/w/held"}}
	env := r.env(Deployment{Server: Server{Model: "node", Workers: 3, Threads: 1}, LargeSize: 1000})
	for _, kv := range []string{node.WorkersEnv + "=3", "SLOWLAB_APP_SEND_LOG=/w/app-send.jsonl", "SLOWLAB_LARGE_SIZE=1000", "SLOWLAB_HELD_DIR=/w/held"} {
		if !slices.Contains(env, kv) {
			t.Errorf("env lacks %s", kv)
		}
	}
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == "NODE_OPTIONS" || k == "NODE_CLUSTER_SCHED_POLICY" || kv == node.WorkersEnv+"=9" {
			t.Errorf("env keeps %s", kv)
		}
	}
}

// app.js refuses a bad environment before it listens, saying why.
func TestNodeAppConfig(t *testing.T) {
	bin := slowlabtest.RequireTool(t, "node")
	app := filepath.Join(t.TempDir(), node.AppFile)
	if err := os.WriteFile(app, node.AppSource, 0o644); err != nil {
		t.Fatal(err)
	}
	// A regression that let app.js start would leave it serving: the
	// context ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for env, want := range map[string]string{
		"SLOWLAB_LARGE_SIZE=x":          `SLOWLAB_LARGE_SIZE "x": want 0..1073741824 bytes`,
		"SLOWLAB_LARGE_SIZE=1073741825": `SLOWLAB_LARGE_SIZE "1073741825": want 0..1073741824 bytes`,
		node.WorkersEnv + "=0":          node.WorkersEnv + ` "0": want 1..1024 processes`,
	} {
		cmd := exec.CommandContext(ctx, bin, app)
		cmd.Env = append(withoutEnv(os.Environ(), "NODE_OPTIONS", node.WorkersEnv, "SLOWLAB_LARGE_SIZE", "SLOWLAB_APP_SEND_LOG", "SLOWLAB_HELD_DIR"), env)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !bytes.Contains(out, []byte(want)) {
			t.Errorf("%s: %v, %q; want exit status 2 and %q", env, err, out, want)
		}
	}
}

// Without the ws module app.js does not start: it says what it tried and
// what to install, and exits 2 (here the module's names are changed to
// ones nothing installs).
func TestNodeAppNeedsWS(t *testing.T) {
	bin := slowlabtest.RequireTool(t, "node")
	const candidates = "['ws', ...WS_DIRS.map("
	if !bytes.Contains(node.AppSource, []byte(candidates)) {
		t.Fatalf("app.js no longer tries %q: update this test", candidates)
	}
	src := bytes.Replace(node.AppSource, []byte(candidates), []byte("['slowlab-no-such-ws', ...[].map("), 1)
	app := filepath.Join(t.TempDir(), node.AppFile)
	if err := os.WriteFile(app, src, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, app)
	cmd.Env = withoutEnv(os.Environ(), "NODE_OPTIONS", "NODE_PATH")
	out, err := cmd.CombinedOutput()
	want := "cannot load the ws module (tried slowlab-no-such-ws): /ws needs it (apt-get install node-ws)"
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !bytes.Contains(out, []byte(want)) {
		t.Errorf("app.js without ws: %v, %q; want exit status 2 and %q", err, out, want)
	}
}

// app.js serves /ws with the ws module, whose version the lab records.
func TestNodeWSVersion(t *testing.T) {
	slowlabtest.RequireTool(t, "node")
	v, err := nodeWSVersion()
	if err != nil || !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+`).MatchString(v) {
		t.Fatalf("nodeWSVersion() = %q, %v; want a version (apt-get install node-ws)", v, err)
	}
	if got := (nodeApp{}).Versions()["ws"]; got != v {
		t.Errorf(`Versions()["ws"] = %q, want %q`, got, v)
	}
}

// TestNodeRoutes serves every endpoint through every route with one and two
// workers, and checks what the lab reads from the stack.
func TestNodeRoutes(t *testing.T) {
	for _, server := range []string{"node-1", "node-2"} {
		for _, route := range Routes {
			t.Run(string(route)+"/"+server, func(t *testing.T) { testServes(t, route, server, nil, nil) })
		}
	}
}

// Stopping the cluster's primary alone stops its workers: with SIGTERM it
// stops them itself, killed it leaves them without their IPC channel, on
// which a worker exits.
func TestNodePrimaryStops(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			s := startReal(t, lookup(t, NameReal, "node-2"), RouteDirect, "node-2", 1<<20)
			s.checkWorkers(t)
			pid := s.run.PIDs()["app"]
			syscall.Kill(pid, sig)
			slowlabtest.WaitFor(t, "app.js's primary and workers gone", func() bool { return len(groupMembers(pid)) == 0 },
				func() string { return fmt.Sprint(groupMembers(pid)) })
			want := fmt.Sprintf("app: node (pid %d) exited during the run: <nil>", pid)
			if sig == syscall.SIGKILL {
				want = fmt.Sprintf("app: node (pid %d) exited during the run: signal: killed", pid)
			}
			// The processes are gone before this process reaped the
			// primary: its exit is seen once Wait returned.
			slowlabtest.WaitFor(t, "the stack to see its app exited", func() bool { return s.run.Failed() != nil },
				func() string { return "Failed() = nil" })
			if err := s.run.Failed(); err == nil || err.Error() != want {
				t.Errorf("Failed() = %v, want %q", err, want)
			}
			s.stopAndCheck(t)
		})
	}
}

// A worker that dies once the cluster serves is replaced, as Gunicorn's
// master replaces one: the app keeps serving with W workers, and the dead
// worker's held-long-poll file no longer counts.
func TestNodeWorkerRestarts(t *testing.T) {
	s := startReal(t, lookup(t, NameReal, "node-2"), RouteDirect, "node-2", 1<<20)
	before := s.servingPIDs()
	if len(before) != 2 {
		t.Fatalf("workers %v, want 2", before)
	}
	// Both workers write their held-long-poll files (the primary hands
	// the two connections to one each).
	for range 2 {
		if resp, _ := get(t, s.run.URL()+"/longpoll?wait=0s", nil); resp.StatusCode != 204 {
			t.Fatalf("/longpoll?wait=0s: %s", resp.Status)
		}
	}
	if held, err := s.app().LongPollsHeld(context.Background()); err != nil || len(held) != 2 {
		t.Fatalf("LongPollsHeld = %v, %v; want both workers", held, err)
	}
	dead := before[0]
	syscall.Kill(dead, syscall.SIGKILL)
	slowlabtest.WaitFor(t, "a new worker in place of the killed one", func() bool {
		now := s.servingPIDs()
		return len(now) == 2 && !slices.Contains(now, dead)
	}, func() string { return fmt.Sprint(s.servingPIDs()) })
	held, err := s.app().LongPollsHeld(context.Background())
	if _, ok := held[strconv.Itoa(dead)]; err != nil || ok {
		t.Errorf("LongPollsHeld = %v, %v; want the killed worker %d skipped", held, err, dead)
	}
	for range 4 {
		if resp, body := get(t, s.run.URL()+"/fast", nil); resp.StatusCode != 200 || string(body) != `{"ok": true}` {
			t.Errorf("/fast after the restart: %s %q", resp.Status, body)
		}
	}
	if err := s.run.Failed(); err != nil {
		t.Errorf("Failed() = %v after a worker restart", err)
	}
	log, _ := os.ReadFile(s.run.app.Process().LogPath())
	if want := fmt.Sprintf("worker %d exited (SIGKILL)", dead); !bytes.Contains(log, []byte(want)) {
		t.Errorf("app log lacks %q:\n%s", want, log)
	}
	s.stopAndCheck(t)
}

// A connection the cluster's primary handed to a worker that is killed
// before it took the connection stays open in the primary, its request
// unread and never answered, however long its client waits: Node.js's
// cluster (lib/internal/cluster/round_robin_handle.js, handoff) closes its
// copy of a connection it handed over only once the worker acknowledges
// it, and nothing closes it when the worker dies first. A worker the
// kernel OOM-kills while a connection is on its way to it leaves that
// client waiting out its own timeout, which is why TestRealStackOOMKill
// (lab/slowclient) bounds its clients' timeouts. Should Node.js close such
// connections, this fails and those bounds can go.
func TestNodeKilledWorkersConnectionHeld(t *testing.T) {
	s := startReal(t, lookup(t, NameReal, "node-2"), RouteDirect, "node-2", 1<<20)
	primary, workers := s.run.PIDs()["app"], s.servingPIDs()
	if len(workers) != 2 {
		t.Fatalf("workers %v, want 2", workers)
	}
	stopped, killed := workers[0], false
	syscall.Kill(stopped, syscall.SIGSTOP)
	t.Cleanup(func() {
		if !killed { // for the stack's stop
			syscall.Kill(stopped, syscall.SIGCONT)
		}
	})
	// Both workers are free; the stopped one never acknowledges the
	// connection it is handed, so never becomes free again: of two
	// connections it gets exactly one, whichever worker comes first.
	addr := s.run.AppAddr()
	answered := make(chan int, 2)
	var conns []net.Conn
	for i := range 2 {
		conn := rawGet(t, addr, "/fast", fmt.Sprintf("in-transit-%d", i))
		conns = append(conns, conn)
		go func() {
			if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil && resp.StatusCode == 200 {
				answered <- i
			}
		}()
	}
	var held net.Conn
	select {
	case i := <-answered:
		held = conns[1-i]
	case <-time.After(slowlabtest.HangGuard):
		t.Fatalf("neither /fast answered with worker %d stopped", stopped)
	}
	// The primary accepts and hands over in one step: once it holds the
	// connection, the stopped worker has been handed it.
	sock := func() string { return serverSocket(t, addr, held.LocalAddr().String()) }
	slowlabtest.WaitFor(t, "the primary to accept the second connection", func() bool { return sock() != "" && holds(primary, sock()) })
	syscall.Kill(stopped, syscall.SIGKILL)
	killed = true
	slowlabtest.WaitFor(t, "a new worker in place of the killed one", func() bool {
		now := s.servingPIDs()
		return len(now) == 2 && !slices.Contains(now, stopped)
	}, func() string { return fmt.Sprint(s.servingPIDs()) })
	if resp, _ := get(t, s.run.URL()+"/fast", nil); resp.StatusCode != 200 {
		t.Fatalf("/fast after the restart: %s", resp.Status)
	}
	if !holds(primary, sock()) {
		t.Errorf("the primary (pid %d) no longer holds the connection it handed to killed worker %d (%s): Node.js closes it now", primary, stopped, held.LocalAddr())
	}
	select {
	case <-answered:
		t.Errorf("the connection handed to killed worker %d was answered", stopped)
	default:
	}
	s.stopAndCheck(t)
}

// serverSocket is the inode of the IPv4 TCP socket at server whose peer
// is client (HOST:PORT each), "" when there is none.
func serverSocket(t *testing.T, server, client string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	local, remote := procNetAddr(t, server), procNetAddr(t, client)
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 10 && f[1] == local && f[2] == remote {
			return f[9]
		}
	}
	return ""
}

// holds reports whether process pid has socket inode open.
func holds(pid int, inode string) bool {
	fds, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "fd", "*"))
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && l == "socket:["+inode+"]" {
			return true
		}
	}
	return false
}
