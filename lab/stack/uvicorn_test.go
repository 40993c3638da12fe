package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// uvicorn is the started app as Uvicorn.
func (s *realStack) uvicorn() *uvicornRun { return s.run.app.(*uvicornRun) }

// requireUvicorn requires a Python that imports uvicorn (CI=true fails
// without it), for tests that start the app without the whole stack.
func requireUvicorn(t *testing.T) {
	t.Helper()
	err := uvicornApp{}.ModelInstalled("uvicorn")
	why := ""
	if err != nil {
		why = err.Error()
	}
	slowlabtest.Require(t, err == nil, why)
}

func TestUvicornModel(t *testing.T) {
	s, err := ParseServer("uvicorn-2")
	if err != nil || s != (Server{Model: "uvicorn", Workers: 2, Threads: 1}) || s.Name() != "uvicorn-2" || s.Slots() != 0 {
		t.Errorf("ParseServer(uvicorn-2) = %+v (%s, %d slots), %v", s, s.Name(), s.Slots(), err)
	}
	if m, ok := s.ModelInfo(); !ok || !m.Async || !m.BackpressureOff {
		t.Errorf("uvicorn model %+v, %t", m, ok)
	}
	for _, bad := range []string{"uvicorn", "uvicorn-0", "uvicorn-2x4"} {
		if _, err := ParseServer(bad); err == nil {
			t.Errorf("ParseServer(%q) accepted", bad)
		}
	}
	if !strings.Contains(ModelSyntax(), "uvicorn-W") {
		t.Errorf("ModelSyntax() = %q, want uvicorn-W in it", ModelSyntax())
	}
}

// findUvicornPython takes the first interpreter that imports uvicorn and
// names the package when none does.
func TestUvicornPython(t *testing.T) {
	if _, err := findUvicornPython([]string{"/nonexistent/python3"}); err == nil ||
		err.Error() != "uvicorn needs python3 (apt-get install python3-uvicorn): no /nonexistent/python3 found" {
		t.Errorf("no interpreter: %v", err)
	}
	const want = "uvicorn needs a python3 that can import uvicorn (apt-get install python3-uvicorn): tried /bin/false"
	if _, err := findUvicornPython([]string{"/nonexistent/python3", "/bin/false", "/bin/false"}); err == nil || err.Error() != want {
		t.Errorf("no uvicorn: %v, want %q", err, want)
	}
	requireUvicorn(t)
	py, err := findUvicornPython(append([]string{"/bin/false"}, uvicornPythons...))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, "-c", "import uvicorn").CombinedOutput(); err != nil {
		t.Errorf("%s cannot import uvicorn: %v: %s", py, err, out)
	}
}

// checkUvicornWorkers asserts that Start returned with every worker up:
// W live worker processes in Uvicorn's process group, besides its parent.
func (s *realStack) checkUvicornWorkers(t *testing.T) {
	t.Helper()
	pid, workers := s.run.PIDs()["app"], s.uvicorn().workers
	members := groupMembers(pid)
	if len(workers) != s.d.Server.Workers || slices.Contains(workers, pid) != (s.d.Server.Workers == 1) {
		t.Errorf("workers %v of parent %d, want %d", workers, pid, s.d.Server.Workers)
	}
	for _, w := range workers {
		if !slices.Contains(members, w) {
			t.Errorf("worker %d is not in uvicorn's process group %v", w, members)
		}
	}
}

// TestUvicornRoutes serves every endpoint through every route, and with
// one worker, which Uvicorn runs in its parent process.
func TestUvicornRoutes(t *testing.T) {
	type tc struct {
		route  Route
		server string
	}
	var cases []tc
	for _, route := range Routes {
		cases = append(cases, tc{route, "uvicorn-2"})
	}
	cases = append(cases, tc{RouteDirect, "uvicorn-1"})
	for _, c := range cases {
		t.Run(string(c.route)+"/"+c.server, func(t *testing.T) {
			g := lookup(t, NameReal, c.server)
			const largeSize = 300_000 // not a whole number of blocks
			s := startReal(t, g, c.route, c.server, largeSize)
			s.checkUvicornWorkers(t)
			testUvicornServes(t, s)
			s.stopAndCheck(t)
		})
	}
}

func testUvicornServes(t *testing.T, s *realStack) {
	r := s.run
	resp, body := get(t, r.URL()+"/fast", map[string]string{appserver.RequestIDHeader: "fast-1"})
	if resp.StatusCode != 200 || string(body) != `{"ok": true}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("/fast: %s %q %v", resp.Status, body, resp.Header)
	}
	if st := resp.Header.Get("Server-Timing"); !serverTimingRE.MatchString(st) {
		t.Errorf("/fast Server-Timing %q", st)
	}
	const trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct {
		id, query string
		size      int
	}{
		{"large-default", "", int(s.d.LargeSize)},
		{"large-1m", "?size=1048576", 1 << 20},
		{"large-on", "?backpressure=on&size=200000", 200_000},
		{"large-off", "?backpressure=off", int(s.d.LargeSize)},
		{"large-off-0", "?backpressure=off&size=0", 0},
	} {
		u := r.URL() + "/large" + tc.query
		resp, body := get(t, u, map[string]string{appserver.RequestIDHeader: tc.id, "traceparent": trace})
		if resp.StatusCode != 200 || resp.ContentLength != int64(tc.size) || !bytes.Equal(body, largeBody(tc.size)) {
			t.Errorf("%s: %s, Content-Length %d, %d bytes, byte-exact %t", u, resp.Status, resp.ContentLength, len(body), bytes.Equal(body, largeBody(tc.size)))
		}
		if st := resp.Header.Get("Server-Timing"); !serverTimingRE.MatchString(st) {
			t.Errorf("%s Server-Timing %q", u, st)
		}
		if v := waitAppSend(t, r, tc.id); !(v > 0 && v < 10) {
			t.Errorf("%s: app_send_s %v", tc.id, v)
		}
	}
	// The request id and traceparent reached the app through the proxy,
	// and each record says what the app handed over.
	log, _ := os.ReadFile(s.uvicorn().sendLog)
	for _, want := range []string{`"id":"large-1m","bytes":1048576,`, `"id":"large-off","bytes":300000,`, `"complete":true,"traceparent":"` + trace + `"}`} {
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("app-send log lacks %s:\n%s", want, log)
		}
	}
	if bytes.Contains(log, []byte(`"complete":false`)) {
		t.Errorf("app-send log has an incomplete response:\n%s", log)
	}
	for path, code := range map[string]int{"/large?size=x": 400, "/large?size=1073741825": 400, "/large?backpressure=maybe": 400,
		"/bytes": 400, "/longpoll?wait=1h": 400, "/longpoll?wait=x": 400, "/longpoll?wait=50ms": 204, "/nope": 404} {
		resp, _ := get(t, r.URL()+path, nil)
		if resp.StatusCode != code || !serverTimingRE.MatchString(resp.Header.Get("Server-Timing")) {
			t.Errorf("%s: %s, Server-Timing %q; want %d with Server-Timing", path, resp.Status, resp.Header.Get("Server-Timing"), code)
		}
	}
	if resp, body := get(t, r.URL()+"/bytes?n=70000", nil); resp.StatusCode != 200 || !bytes.Equal(body, largeBody(70000)) {
		t.Errorf("/bytes?n=70000: %s, %d bytes", resp.Status, len(body))
	}
	// HEAD has the GET's headers and no body; other methods are refused.
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Head(r.URL() + "/large")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != s.d.LargeSize || !serverTimingRE.MatchString(resp.Header.Get("Server-Timing")) {
		t.Errorf("HEAD /large: %s, Content-Length %d, %v", resp.Status, resp.ContentLength, resp.Header)
	}
	resp, err = client.Post(r.URL()+"/fast", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" || !serverTimingRE.MatchString(resp.Header.Get("Server-Timing")) {
		t.Errorf("POST /fast: %s, %v", resp.Status, resp.Header)
	}
	if err := r.Failed(); err != nil {
		t.Errorf("Failed() = %v on a healthy stack", err)
	}
}

// TestUvicornLongPollsHeld holds long-polls on Uvicorn's workers: the held
// counts add up by worker PID, and a finished long-poll leaves the count.
func TestUvicornLongPollsHeld(t *testing.T) {
	s := startReal(t, lookup(t, NameReal, "uvicorn-2"), RouteDirect, "uvicorn-2", 1<<20)
	run := s.uvicorn()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	poll := func(wait string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.run.URL()+"/longpoll?wait="+wait, nil)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	const long = 6
	for range long {
		wg.Go(func() { poll("60s") })
	}
	held := uvicornWaitHeld(t, run, func(sum int) bool { return sum == long })
	t.Logf("held by worker PID: %v (workers %v)", held, run.workers)
	for pid := range held {
		if p, _ := strconv.Atoi(pid); !slices.Contains(run.workers, p) {
			t.Errorf("held counts %v name %s, not one of the workers %v", held, pid, run.workers)
		}
	}
	// Short long-polls come and go: once each has answered, only the long
	// ones are held again.
	var short sync.WaitGroup
	for range 3 {
		short.Go(func() {
			if code, err := poll("200ms"); err != nil || code != 204 {
				t.Errorf("short long-poll: %d, %v", code, err)
			}
		})
	}
	short.Wait()
	if _, got := uvicornHeld(t, run); got != long {
		t.Errorf("after the short long-polls answered: %d held, want %d", got, long)
	}
	cancel()
	s.stopAndCheck(t)
	if m, err := run.LongPollsHeld(context.Background()); err != nil || len(m) != 0 {
		t.Errorf("after Stop: LongPollsHeld = %v, %v; want the exited workers skipped", m, err)
	}
}

// uvicornHeld returns the app's held long-polls by worker and their sum.
func uvicornHeld(t *testing.T, r *uvicornRun) (map[string]int, int) {
	t.Helper()
	m, err := r.LongPollsHeld(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, n := range m {
		sum += n
	}
	return m, sum
}

// uvicornWaitHeld polls the held long-polls until ok says their sum is
// what the test waits for.
func uvicornWaitHeld(t *testing.T, r *uvicornRun, ok func(sum int) bool) map[string]int {
	t.Helper()
	deadline := time.Now().Add(slowlabtest.HangGuard)
	for {
		m, sum := uvicornHeld(t, r)
		if ok(sum) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("held long-polls never reached the count: %v", m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestUvicornBackpressure sends a 16 MiB /large to a reader that reads
// nothing yet: with backpressure off the app renders the whole body into
// its worker's memory and records app_send_s before the client has read a
// byte; with backpressure on it stalls with the socket, the worker's
// memory stays put, and app_send_s comes only once the client has read.
func TestUvicornBackpressure(t *testing.T) {
	const size = 16 << 20
	for _, mode := range []string{"on", "off"} {
		t.Run(mode, func(t *testing.T) {
			s := startReal(t, lookup(t, NameReal, "uvicorn-2"), RouteDirect, "uvicorn-2", size)
			run := s.uvicorn()
			rss0, hwm0 := uvicornWorkersKB(t, run.workers, "VmRSS"), uvicornWorkersKB(t, run.workers, "VmHWM")
			id := "bp-" + mode
			conn := uvicornRawGet(t, run.addr, "/large?backpressure="+mode, id)
			var rss int64
			if mode == "off" {
				// The producer has queued the whole body, though the
				// client has not read any of it.
				waitAppSend(t, s.run, id)
				rss = uvicornWorkersKB(t, run.workers, "VmRSS")
				t.Logf("backpressure off: workers' RSS %d KiB -> %d KiB once app_send_s was recorded", rss0, rss)
				if rss-rss0 < size/2>>10 {
					t.Errorf("workers' RSS grew by %d KiB, want most of the %d KiB body held", rss-rss0, size>>10)
				}
			} else {
				// The worker's socket has data the client does not take:
				// the app now waits for it.
				uvicornWaitTxQueue(t, run.addr, conn.LocalAddr().String())
				rss = uvicornWorkersKB(t, run.workers, "VmRSS")
				if m, err := s.run.AppSend(context.Background()); err != nil || len(m) != 0 {
					t.Errorf("app_send_s recorded before the client read: %v, %v", m, err)
				}
				if rss-rss0 > size/4>>10 {
					t.Errorf("workers' RSS grew by %d KiB while stalled, want far less than the %d KiB body", rss-rss0, size>>10)
				}
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != 200 || !bytes.Equal(body, largeBody(size)) || !serverTimingRE.MatchString(resp.Header.Get("Server-Timing")) {
				t.Fatalf("%s: %d bytes, byte-exact %t, %v; headers %v", resp.Status, len(body), bytes.Equal(body, largeBody(size)), err, resp.Header)
			}
			sendS := waitAppSend(t, s.run, id)
			hwm := uvicornWorkersKB(t, run.workers, "VmHWM")
			t.Logf("backpressure %s: RSS %d -> %d KiB, peak %d -> %d KiB, app_send_s %.3f", mode, rss0, rss, hwm0, hwm, sendS)
			if mode == "on" && hwm-hwm0 > size/4>>10 {
				t.Errorf("workers' peak RSS grew by %d KiB over the download, want far less than the %d KiB body", hwm-hwm0, size>>10)
			}
			if mode == "on" {
				// A reader that leaves while the app waits for it: the
				// record says how much was handed over, and incomplete.
				conn := uvicornRawGet(t, run.addr, "/large", "bp-gone")
				uvicornWaitTxQueue(t, run.addr, conn.LocalAddr().String())
				conn.Close()
				rec := uvicornWaitRecord(t, run, "bp-gone")
				t.Logf("reader that left: %+v", rec)
				if rec.Complete || rec.Bytes <= 0 || rec.Bytes >= size {
					t.Errorf("record of a reader that left: %+v, want incomplete with part of %d bytes", rec, size)
				}
			}
			s.stopAndCheck(t)
		})
	}
}

// uvicornWaitRecord waits for the app's send log to have id's record.
func uvicornWaitRecord(t *testing.T, r *uvicornRun, id string) appserver.SendRecord {
	t.Helper()
	deadline := time.Now().Add(slowlabtest.HangGuard)
	for {
		b, _ := os.ReadFile(r.sendLog)
		for line := range bytes.SplitSeq(b, []byte("\n")) {
			var rec appserver.SendRecord
			if json.Unmarshal(line, &rec) == nil && rec.ID == id {
				return rec
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no record of %s in %s:\n%s", id, r.sendLog, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// uvicornRawGet sends GET path to addr on a connection with a small receive
// buffer and reads nothing: the caller reads the response.
func uvicornRawGet(t *testing.T, addr, path, id string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(slowlabtest.HangGuard))
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n%s: %s\r\nConnection: close\r\n\r\n", path, addr, appserver.RequestIDHeader, id)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	return conn
}

// uvicornWorkersKB sums field (VmRSS, VmHWM) of /proc/PID/status over pids.
func uvicornWorkersKB(t *testing.T, pids []int, field string) int64 {
	t.Helper()
	var sum int64
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		if err != nil {
			t.Fatal(err)
		}
		n, err := uvicornStatusKB(b, field)
		if err != nil {
			t.Fatalf("pid %d: %v", pid, err)
		}
		sum += n
	}
	return sum
}

// uvicornStatusKB reads "field:   N kB" from a /proc/PID/status text.
func uvicornStatusKB(status []byte, field string) (int64, error) {
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in status", field)
}

// uvicornWaitTxQueue waits until the IPv4 TCP socket from local to remote
// (HOST:PORT each) has bytes in its send queue (/proc/net/tcp tx_queue):
// its peer's receive window is full.
func uvicornWaitTxQueue(t *testing.T, local, remote string) {
	t.Helper()
	deadline := time.Now().Add(slowlabtest.HangGuard)
	for {
		b, err := os.ReadFile("/proc/net/tcp")
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := uvicornTxQueue(b, uvicornProcNetAddr(t, local), uvicornProcNetAddr(t, remote)); ok && n > 0 {
			t.Logf("send queue %d bytes", n)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no bytes queued on %s -> %s", local, remote)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// uvicornProcNetAddr writes an IPv4 HOST:PORT as /proc/net/tcp does: 0100007F:1F90.
func uvicornProcNetAddr(t *testing.T, hostport string) string {
	t.Helper()
	ap, err := net.ResolveTCPAddr("tcp4", hostport)
	if err != nil || ap.IP.To4() == nil {
		t.Fatalf("address %q: %v", hostport, err)
	}
	ip := ap.IP.To4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], ap.Port)
}

// uvicornTxQueue finds the socket from local to remote in a /proc/net/tcp text
// and returns its tx_queue.
func uvicornTxQueue(procNetTCP []byte, local, remote string) (int64, bool) {
	for line := range strings.SplitSeq(string(procNetTCP), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[1] != local || f[2] != remote {
			continue
		}
		tx, _, _ := strings.Cut(f[4], ":")
		n, err := strconv.ParseInt(tx, 16, 64)
		return n, err == nil
	}
	return 0, false
}

// A worker that cannot load the app fails Start at once with the cause,
// though Uvicorn's parent lives on, and nothing is left behind.
func TestUvicornStartFails(t *testing.T) {
	requireUvicorn(t)
	d := Deployment{RunID: "test-uvicorn-fail", Route: RouteDirect, Server: Server{Model: "uvicorn", Workers: 2, Threads: 1},
		LargeSize: 1 << 31, LogDir: t.TempDir(), WorkDir: t.TempDir()}
	r, err := uvicornApp{}.Start(context.Background(), d, Settings{}, nil)
	if err == nil {
		r.Stop()
		t.Fatal("uvicorn started with an app that cannot load")
	}
	const want = `uvicorn: a worker failed to start: ValueError: SLOWLAB_LARGE_SIZE '2147483648': want 0..1073741824 bytes`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want it to start with %q", err, want)
	}
	if left := processesMentioning(d.WorkDir); len(left) > 0 {
		t.Errorf("processes %v still running with the run's work dir", left)
	}
}

// A worker that dies fails the run: Uvicorn's parent lives on without
// it, so only the worker check can tell.
func TestUvicornWorkerDiesFailsRun(t *testing.T) {
	s := startReal(t, lookup(t, NameReal, "uvicorn-2"), RouteDirect, "uvicorn-2", 1<<20)
	run := s.uvicorn()
	if err := s.run.Failed(); err != nil || len(run.workers) != 2 {
		t.Fatalf("fresh run: Failed %v, workers %v", err, run.workers)
	}
	victim := run.workers[1]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	slowlabtest.WaitFor(t, "the killed worker to be gone", func() bool { return !processAlive(victim) }, func() string { return run.p.LogTail() })
	want := fmt.Sprintf("app: uvicorn: worker %d exited during the run", victim)
	if err := s.run.Failed(); err == nil || err.Error() != want {
		t.Errorf("Failed() = %v, want %q", err, want)
	}
	if done, _ := run.p.Exited(); done {
		t.Error("uvicorn's parent exited too: the worker check was not what told")
	}
}
