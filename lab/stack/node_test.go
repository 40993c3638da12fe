package stack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/appserver/node"
	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"golang.org/x/sys/unix"
)

// nodeOf is the started app as app.js.
func nodeOf(s *realStack) *nodeRun { return s.run.app.(*nodeRun) }

// nodeCheckWorkers asserts that Start returned with every worker listening:
// node-1 is one process, node-W a cluster primary and W workers.
func nodeCheckWorkers(t *testing.T, s *realStack) {
	t.Helper()
	want := 1
	if w := s.d.Server.Workers; w > 1 {
		want = 1 + w
	}
	if m := groupMembers(s.run.PIDs()["app"]); len(m) != want {
		t.Errorf("app.js's process group has %v, want %d processes for %s", m, want, s.d.Server.Name())
	}
}

// nodeWorkers are the processes that serve requests: the primary's
// children, or the one process of node-1.
func nodeWorkers(s *realStack) []int {
	pid := s.run.PIDs()["app"]
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

// TestNodeRoutes serves every endpoint through every route with one and two
// workers, and checks what the lab reads from the stack.
func TestNodeRoutes(t *testing.T) {
	for _, server := range []string{"node-1", "node-2"} {
		for _, route := range Routes {
			t.Run(string(route)+"/"+server, func(t *testing.T) {
				g := lookup(t, NameReal, server)
				const largeSize = 300_000 // not a whole number of blocks
				s := startReal(t, g, route, server, largeSize)
				nodeCheckWorkers(t, s)
				nodeServes(t, s)
				s.stopAndCheck(t)
				if held, err := nodeOf(s).LongPollsHeld(context.Background()); err != nil || len(held) != 0 {
					t.Errorf("LongPollsHeld after Stop = %v, %v; want none (its workers exited)", held, err)
				}
			})
		}
	}
}

func nodeServes(t *testing.T, s *realStack) {
	r := s.run
	resp, body := get(t, r.URL()+"/fast", map[string]string{appserver.RequestIDHeader: "fast-1"})
	if resp.StatusCode != 200 || string(body) != `{"ok": true}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("/fast: %s %q %v", resp.Status, body, resp.Header)
	}
	if st := resp.Header.Get("Server-Timing"); !serverTimingRE.MatchString(st) {
		t.Errorf("/fast Server-Timing %q", st)
	}
	const trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for id, query := range map[string]string{"large-default": "", "large-1m": "?size=1048576",
		"large-off": "?size=1048576&backpressure=off", "large-on": "?backpressure=on&size=1048576"} {
		size := 1 << 20
		if query == "" {
			size = int(s.d.LargeSize)
		}
		u := r.URL() + "/large" + query
		resp, body := get(t, u, map[string]string{appserver.RequestIDHeader: id, "traceparent": trace})
		if resp.StatusCode != 200 || resp.ContentLength != int64(size) || !bytes.Equal(body, largeBody(size)) {
			t.Errorf("%s: %s, Content-Length %d, %d bytes, byte-exact %t", u, resp.Status, resp.ContentLength, len(body), bytes.Equal(body, largeBody(size)))
		}
		if st := resp.Header.Get("Server-Timing"); !serverTimingRE.MatchString(st) {
			t.Errorf("%s Server-Timing %q", u, st)
		}
		if v := waitAppSend(t, r, id); !(v > 0 && v < 10) {
			t.Errorf("%s: app_send_s %v", id, v)
		}
	}
	// The request id and traceparent reached the app through the proxy,
	// and every response was complete.
	log, _ := os.ReadFile(nodeOf(s).sendLog)
	if !bytes.Contains(log, []byte(`"id":"large-1m","bytes":1048576,`)) || !bytes.Contains(log, []byte(`"traceparent":"`+trace+`"`)) ||
		bytes.Contains(log, []byte(`"complete":false`)) {
		t.Errorf("app-send log lacks the request id or traceparent, or has an incomplete response:\n%s", log)
	}
	for path, code := range map[string]int{"/large?size=x": 400, "/large?size=1073741825": 400, "/bytes": 400, "/bytes?n=-1": 400,
		"/longpoll?wait=1h": 400, "/longpoll?wait=x": 400, "/longpoll?wait=50ms": 204, "/nope": 404, "/fast/": 404} {
		resp, _ := get(t, r.URL()+path, nil)
		if resp.StatusCode != code || !serverTimingRE.MatchString(resp.Header.Get("Server-Timing")) {
			t.Errorf("%s: %s, Server-Timing %q; want %d with Server-Timing", path, resp.Status, resp.Header.Get("Server-Timing"), code)
		}
	}
	// The long-poll above is over: its worker holds none.
	if held, err := nodeOf(s).LongPollsHeld(context.Background()); err != nil || len(held) != 1 || slices.Max(slices.Collect(maps.Values(held))) != 0 {
		t.Errorf("LongPollsHeld after a finished long-poll = %v, %v; want one worker holding 0", held, err)
	}
	resp, body = get(t, r.URL()+"/large?size=x", nil)
	if want := "size \"x\": want 0..1073741824 bytes\n"; string(body) != want || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("/large?size=x: %q, %v; want %q", body, resp.Header, want)
	}
	if resp, body := get(t, r.URL()+"/bytes?n=70000", nil); resp.StatusCode != 200 || !bytes.Equal(body, largeBody(70000)) {
		t.Errorf("/bytes?n=70000: %s, %d bytes", resp.Status, len(body))
	}
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	if resp, err := client.Post(r.URL()+"/fast", "text/plain", strings.NewReader("x")); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" || !serverTimingRE.MatchString(resp.Header.Get("Server-Timing")) {
			t.Errorf("POST /fast: %s %v", resp.Status, resp.Header)
		}
	}
	if resp, err := client.Head(r.URL() + "/large"); err != nil || resp.StatusCode != 200 || resp.ContentLength != s.d.LargeSize {
		t.Errorf("HEAD /large: %v, %v", resp, err)
	}

	groups, pids := r.Groups(), r.PIDs()
	for _, comp := range []string{"app", "proxy"} {
		want := []string{"tree:" + strconv.Itoa(pids[comp])}
		if s.limited {
			want = []string{"cgroup:slowlab/" + s.d.RunID + "/" + comp}
		}
		if comp == "proxy" && s.d.Route == RouteDirect {
			want = nil
		}
		if fmt.Sprint(groups[comp]) != fmt.Sprint(want) {
			t.Errorf("Groups()[%s] = %v, want %v", comp, groups[comp], want)
		}
	}
	if s.limited {
		got, err := r.Cgroup("app").Pids()
		slices.Sort(got)
		want := groupMembers(pids["app"])
		slices.Sort(want)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("app cgroup holds %v (%v), want app.js's processes %v", got, err, want)
		}
	}
	if err := r.Failed(); err != nil {
		t.Errorf("Failed() = %v on a healthy stack", err)
	}
}

// TestNodeLongPollsHeld holds long-polls on node-1 and node-2: each
// worker's file counts the ones it waits on, by its PID; the cluster's
// primary hands connections to its workers in turn, so both hold some.
func TestNodeLongPollsHeld(t *testing.T) {
	for _, tc := range []struct {
		server string
		polls  int
	}{{"node-1", 3}, {"node-2", 6}} {
		t.Run(tc.server, func(t *testing.T) {
			s := startReal(t, lookup(t, NameReal, tc.server), RouteDirect, tc.server, 1<<20)
			nodeCheckWorkers(t, s)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			// Cleanups run last first: the clients hang up, are waited
			// for, then the stack stops.
			t.Cleanup(wg.Wait)
			t.Cleanup(cancel)
			client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
			for range tc.polls {
				wg.Go(func() {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.run.URL()+"/longpoll?wait=2m", nil)
					if resp, err := client.Do(req); err == nil {
						resp.Body.Close()
					}
				})
			}
			var held map[string]int
			total := func() int {
				var err error
				if held, err = nodeOf(s).LongPollsHeld(context.Background()); err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, v := range held {
					n += v
				}
				return n
			}
			slowlabtest.WaitFor(t, fmt.Sprintf("%d long-polls held", tc.polls), func() bool { return total() == tc.polls },
				func() string { return fmt.Sprint(held) })
			workers := nodeWorkers(s)
			var pids []string
			for _, p := range workers {
				pids = append(pids, strconv.Itoa(p))
			}
			for pid, n := range held {
				if !slices.Contains(pids, pid) || n < 1 {
					t.Errorf("held %v: %s holds %d; want only workers %v, each holding some", held, pid, n, pids)
				}
			}
			if len(held) != len(workers) {
				t.Errorf("held %v: want every worker of %v to hold long-polls", held, workers)
			}
			s.stopAndCheck(t)
			if after, err := nodeOf(s).LongPollsHeld(context.Background()); err != nil || len(after) != 0 {
				t.Errorf("LongPollsHeld after Stop = %v, %v; want none (its workers exited)", after, err)
			}
		})
	}
}

// TestNodeBackpressure reads a 16 MiB /large through a tiny receive
// window, reading nothing until the app waits on the full socket. With
// backpressure=off the app has handed the whole body to res by then and
// its process holds most of it; with backpressure on it holds about a
// chunk, and its peak resident memory stays flat for the whole download.
// The premise is a kernel that cannot take the whole body into the
// socket's send buffer (net.ipv4.tcp_wmem's maximum, 4 MiB by default).
func TestNodeBackpressure(t *testing.T) {
	const size = 16 << 20
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem"); err == nil {
		t.Logf("net.ipv4.tcp_wmem %s", bytes.TrimSpace(b))
	}
	for _, mode := range []string{"off", "on"} {
		t.Run(mode, func(t *testing.T) {
			s := startReal(t, lookup(t, NameReal, "node-1"), RouteDirect, "node-1", size)
			pid := s.run.PIDs()["app"]
			rss0, hwm0 := nodeMemory(t, pid, "VmRSS"), nodeMemory(t, pid, "VmHWM")

			c := nodeDialSmallWindow(t, s.run.AppAddr())
			id := "slow-" + mode
			fmt.Fprintf(c, "GET /large?backpressure=%s HTTP/1.1\r\nHost: x\r\n%s: %s\r\nConnection: close\r\n\r\n", mode, appserver.RequestIDHeader, id)
			// The app waits on its socket: the kernel holds bytes the
			// client has no room for, and app.js's only thread sleeps.
			_, appPort, _ := net.SplitHostPort(s.run.AppAddr())
			_, clientPort, _ := net.SplitHostPort(c.LocalAddr().String())
			var txq int
			var state string
			slowlabtest.WaitFor(t, "app.js waiting on the full socket", func() bool {
				txq, state = nodeSendQueue(t, appPort, clientPort), nodeState(t, pid)
				return txq > 0 && state == "S"
			}, func() string { return fmt.Sprintf("send queue %d, state %s", txq, state) })
			if mode == "off" {
				waitAppSend(t, s.run, id) // handed to res in the same tick; only the log line may lag
			}
			rss1 := nodeMemory(t, pid, "VmRSS")
			sends, err := s.run.AppSend(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			_, handed := sends[id]
			t.Logf("backpressure=%s, blocked with %d bytes in the kernel's send queue: VmRSS %d -> %d KiB (+%d KiB), app_send recorded %t",
				mode, txq, rss0>>10, rss1>>10, (rss1-rss0)>>10, handed)

			body := nodeReadResponse(t, c)
			if !bytes.Equal(body, largeBody(size)) {
				t.Errorf("body: %d bytes, byte-exact %t", len(body), bytes.Equal(body, largeBody(size)))
			}
			waitAppSend(t, s.run, id)
			hwm1 := nodeMemory(t, pid, "VmHWM")
			t.Logf("backpressure=%s: VmHWM %d -> %d KiB (+%d KiB) over the download", mode, hwm0>>10, hwm1>>10, (hwm1-hwm0)>>10)
			log, _ := os.ReadFile(nodeOf(s).sendLog)
			if !bytes.Contains(log, []byte(`{"id":"`+id+`","bytes":16777216,`)) || !bytes.Contains(log, []byte(`"complete":true}`)) {
				t.Errorf("app-send log:\n%s", log)
			}
			switch mode {
			case "off":
				if grew := rss1 - rss0; !handed || grew < size/2 {
					t.Errorf("backpressure=off: app handed the body %t, VmRSS grew %d KiB; want it handed and at least %d KiB held", handed, grew>>10, size/2>>10)
				}
			case "on":
				if grew := hwm1 - hwm0; handed || grew > 4<<20 {
					t.Errorf("backpressure=on: app handed the body %t, peak VmRSS grew %d KiB; want it waiting and under 4096 KiB", handed, grew>>10)
				}
			}
			s.stopAndCheck(t)
		})
	}
}

// nodeDialSmallWindow connects to addr with an 8 KiB SO_RCVBUF set before
// connect (Linux doubles it), so the window the app sees stays small.
func nodeDialSmallWindow(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<10) }); err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// nodeReadResponse reads the response on c to its end and returns its body.
func nodeReadResponse(t *testing.T, c net.Conn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(slowlabtest.HangGuard))
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 64<<10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s, %d bytes: %v", resp.Status, len(body), err)
	}
	return body
}

// nodeMemory is field (VmRSS, VmHWM) of process pid in bytes.
func nodeMemory(t *testing.T, pid int, field string) int64 {
	t.Helper()
	v := nodeStatus(t, pid, field)
	kb, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
	if err != nil {
		t.Fatalf("/proc/%d/status %s: %q", pid, field, v)
	}
	return kb << 10
}

// nodeState is the one-letter state of process pid's main thread.
func nodeState(t *testing.T, pid int) string {
	t.Helper()
	state, _, _ := strings.Cut(nodeStatus(t, pid, "State"), " ")
	return state
}

func nodeStatus(t *testing.T, pid int, field string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return ""
}

// nodeSendQueue is the send queue (bytes not yet acknowledged) of the
// loopback TCP socket from port local to port remote, from /proc/net/tcp;
// 0 when there is none.
func nodeSendQueue(t *testing.T, local, remote string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	hexAddr := func(port string) string {
		p, _ := strconv.Atoi(port)
		return fmt.Sprintf("0100007F:%04X", p)
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 || f[1] != hexAddr(local) || f[2] != hexAddr(remote) {
			continue
		}
		tx, _, _ := strings.Cut(f[4], ":")
		n, err := strconv.ParseInt(tx, 16, 64)
		if err != nil {
			t.Fatalf("/proc/net/tcp: %q", line)
		}
		return int(n)
	}
	return 0
}

// Stopping the cluster's primary alone stops its workers: with SIGTERM it
// stops them itself, killed it leaves them without their IPC channel, on
// which a worker exits.
func TestNodePrimaryStops(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			s := startReal(t, lookup(t, NameReal, "node-2"), RouteDirect, "node-2", 1<<20)
			nodeCheckWorkers(t, s)
			pid := s.run.PIDs()["app"]
			syscall.Kill(pid, sig)
			slowlabtest.WaitFor(t, "app.js's primary and workers gone", func() bool { return len(groupMembers(pid)) == 0 },
				func() string { return fmt.Sprint(groupMembers(pid)) })
			want := fmt.Sprintf("app: node (pid %d) exited during the run: <nil>", pid)
			if sig == syscall.SIGKILL {
				want = fmt.Sprintf("app: node (pid %d) exited during the run: signal: killed", pid)
			}
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
	before := nodeWorkers(s)
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
	if held, err := nodeOf(s).LongPollsHeld(context.Background()); err != nil || len(held) != 2 {
		t.Fatalf("LongPollsHeld = %v, %v; want both workers", held, err)
	}
	dead := before[0]
	syscall.Kill(dead, syscall.SIGKILL)
	slowlabtest.WaitFor(t, "a new worker in place of the killed one", func() bool {
		now := nodeWorkers(s)
		return len(now) == 2 && !slices.Contains(now, dead)
	}, func() string { return fmt.Sprint(nodeWorkers(s)) })
	held, err := nodeOf(s).LongPollsHeld(context.Background())
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
