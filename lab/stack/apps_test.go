package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
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

// The tests in this file run on every installed app (Gunicorn, Uvicorn,
// Node.js): their runs embed *appProcess, and what differs between them
// is asked of testedApp, which each app's test file implements.

// testedApp is a started installed app as the shared tests see it.
type testedApp interface {
	// appProc is the run's *appProcess (promoted from it).
	appProc() *appProcess
	// checkWorkers asserts that Start returned with every worker of d's
	// server up.
	checkWorkers(t *testing.T, d Deployment)
	// servingPIDs are the processes that serve requests.
	servingPIDs() []int
}

func (r *appProcess) appProc() *appProcess { return r }

// app is the started app's appProcess, whichever installed app runs.
func (s *realStack) app() *appProcess { return s.run.app.(testedApp).appProc() }

// checkWorkers asserts that Start returned with every worker up.
func (s *realStack) checkWorkers(t *testing.T) {
	t.Helper()
	s.run.app.(testedApp).checkWorkers(t, s.d)
}

// servingPIDs are the app's processes that serve requests.
func (s *realStack) servingPIDs() []int { return s.run.app.(testedApp).servingPIDs() }

// testServes starts server on route, checks that it serves every endpoint
// and that Stop leaves nothing; setup (if any) changes the stack before
// it starts, more (if any) checks more before it stops.
func testServes(t *testing.T, route Route, server string, setup func(*Stack), more func(*testing.T, *realStack)) {
	g := lookup(t, NameReal, server)
	if setup != nil {
		setup(&g)
	}
	const largeSize = 300_000 // not a whole number of blocks
	s := startReal(t, g, route, server, largeSize)
	s.checkWorkers(t)
	testRealServes(t, s, g)
	if more != nil {
		more(t, s)
	}
	s.stopAndCheck(t)
}

// testRealServes checks every endpoint of an installed app on s's route,
// the app's records of them, and what the lab reads from the stack.
func testRealServes(t *testing.T, s *realStack, g Stack) {
	r := s.run
	resp, body := get(t, r.URL()+"/fast", map[string]string{appserver.RequestIDHeader: "fast-1"})
	if resp.StatusCode != 200 || string(body) != `{"ok": true}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("/fast: %s %q %v", resp.Status, body, resp.Header)
	}
	if v := resp.Header.Values(appserver.PeerPortHeader); v != nil {
		t.Errorf("/fast has %s %q: want it on /large only", appserver.PeerPortHeader, v)
	}
	if st := resp.Header.Get("Server-Timing"); !serverTimingRE.MatchString(st) {
		t.Errorf("/fast Server-Timing %q", st)
	}
	if g.Settings.NginxSnippet != "" && resp.Header.Get("X-Slowlab-Snippet") != "on" {
		t.Errorf("NginxSnippet not applied: %v", resp.Header)
	}
	const trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	type large struct {
		id, query string
		size      int
	}
	cases := []large{{"large-default", "", int(s.d.LargeSize)}, {"large-1m", "?size=1048576", 1 << 20}}
	peers := map[string]string{} // X-Slowlab-Peer-Port by request id
	if m, _ := s.d.Server.ModelInfo(); m.BackpressureOff {
		cases = append(cases, large{"large-on", "?backpressure=on&size=200000", 200_000},
			large{"large-on-1m", "?backpressure=on&size=1048576", 1 << 20},
			large{"large-off", "?backpressure=off", int(s.d.LargeSize)},
			large{"large-off-1m", "?size=1048576&backpressure=off", 1 << 20},
			large{"large-off-0", "?backpressure=off&size=0", 0})
	}
	for _, tc := range cases {
		u := r.URL() + "/large" + tc.query
		resp, body, port := getPort(t, http.MethodGet, u, map[string]string{appserver.RequestIDHeader: tc.id, "traceparent": trace})
		if resp.StatusCode != 200 || resp.ContentLength != int64(tc.size) || !bytes.Equal(body, largeBody(tc.size)) {
			t.Errorf("%s: %s, Content-Length %d, %d bytes, byte-exact %t", u, resp.Status, resp.ContentLength, len(body), bytes.Equal(body, largeBody(tc.size)))
		}
		s.checkPeerPort(t, "GET "+u, resp, port)
		peers[tc.id] = resp.Header.Get(appserver.PeerPortHeader)
		if st := resp.Header.Get("Server-Timing"); !serverTimingRE.MatchString(st) {
			t.Errorf("%s Server-Timing %q", u, st)
		}
		if v := waitAppSend(t, r, tc.id); !(v > 0 && v < 10) {
			t.Errorf("%s: app_send_s %v", tc.id, v)
		}
	}
	// The request id and traceparent reached the app through the proxy,
	// and each record says the app handed over the whole body.
	log, _ := os.ReadFile(s.app().sendLog)
	served, ok, err := r.AppServed(context.Background())
	if !ok || err != nil {
		t.Errorf("AppServed: %t, %v", ok, err)
	}
	for _, tc := range cases {
		if _, line, ok := sendRecord(log, tc.id); !ok {
			t.Errorf("app-send log has no record of %s:\n%s", tc.id, log)
		} else {
			checkRecordLine(t, line, tc.id, tc.size, trace, s.servingPIDs(), peers[tc.id])
		}
		checkStartLine(t, log, tc.id, s.servingPIDs(), peers[tc.id])
		if sv := served[tc.id]; !sv.Ended || !sv.Complete || !slices.Contains(s.servingPIDs(), sv.PID) || peerPortKey(strconv.Itoa(sv.PeerPort)) != peerPortKey(peers[tc.id]) && (sv.PeerPort != 0 || peers[tc.id] != "") {
			t.Errorf("AppServed[%s] = %+v, want ended complete by one of the workers %v from peer port %s", tc.id, sv, s.servingPIDs(), peers[tc.id])
		}
	}
	if bytes.Contains(log, []byte(`"complete":false`)) {
		t.Errorf("app-send log has an incomplete response:\n%s", log)
	}
	checkCodes(t, r.URL(), map[string]int{"/large?size=x": 400, "/large?size=1073741825": 400, "/bytes": 400, "/bytes?n=-1": 400,
		"/longpoll?wait=1h": 400, "/longpoll?wait=x": 400, "/longpoll?wait=50ms": 204, "/nope": 404, "/fast/": 404})
	// The long-poll above is over: its worker holds none.
	if held, err := s.app().LongPollsHeld(context.Background()); err != nil || len(held) != 1 || slices.Max(slices.Collect(maps.Values(held))) != 0 {
		t.Errorf("LongPollsHeld after a finished long-poll = %v, %v; want one worker holding 0", held, err)
	}
	resp, body, port := getPort(t, http.MethodGet, r.URL()+"/large?size=x", nil)
	if want := "size \"x\": want 0..1073741824 bytes\n"; string(body) != want || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("/large?size=x: %q, %v; want %q", body, resp.Header, want)
	}
	s.checkPeerPort(t, "GET /large?size=x", resp, port)
	if resp, body := get(t, r.URL()+"/bytes?n=70000", nil); resp.StatusCode != 200 || !bytes.Equal(body, largeBody(70000)) || resp.Header.Values(appserver.PeerPortHeader) != nil {
		t.Errorf("/bytes?n=70000: %s, %d bytes, %v", resp.Status, len(body), resp.Header)
	}
	// HEAD has the GET's headers and no body; other methods are refused.
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	if resp, _, port := getPort(t, http.MethodHead, r.URL()+"/large", nil); resp.StatusCode != 200 || resp.ContentLength != s.d.LargeSize || !serverTimingRE.MatchString(resp.Header.Get("Server-Timing")) {
		t.Errorf("HEAD /large: %s, Content-Length %d, %v", resp.Status, resp.ContentLength, resp.Header)
	} else {
		s.checkPeerPort(t, "HEAD /large", resp, port)
	}
	if resp, err := client.Post(r.URL()+"/fast", "text/plain", strings.NewReader("x")); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" || !serverTimingRE.MatchString(resp.Header.Get("Server-Timing")) {
			t.Errorf("POST /fast: %s, %v", resp.Status, resp.Header)
		}
	}
	s.checkGroups(t)
	if s.d.Route == RouteDirect {
		if len(r.TempDirs()) != 0 || len(r.PIDs()) != 1 {
			t.Errorf("direct route: TempDirs %v, PIDs %v", r.TempDirs(), r.PIDs())
		}
	} else if name := g.Proxy.Name(); name == "haproxy" || name == "apache" || name == "caddy" {
		// HAProxy, Apache and Caddy write no temp files: one directory,
		// existing and empty.
		if td := r.TempDirs(); len(td) != 1 || !exists(td[0]) {
			t.Errorf("TempDirs = %v, want one existing directory", td)
		} else if left, _ := os.ReadDir(td[0]); len(left) > 0 {
			t.Errorf("%s's temp dir holds %v", g.Proxy.Name(), left)
		}
	} else if td, want := r.TempDirs(), []string{filepath.Join(s.d.WorkDir, "proxy_temp"), filepath.Join(s.d.WorkDir, "nginx", "client_body_temp")}; !slices.Equal(td, want) || !exists(td[0]) || !exists(td[1]) {
		t.Errorf("TempDirs = %v, want the existing %v (proxy_temp_path, client_body_temp_path)", td, want)
	}
	if err := r.Failed(); err != nil {
		t.Errorf("Failed() = %v on a healthy stack", err)
	}
}

// getPort sends method u with the given request headers on a new
// connection and reads the response; it returns the local port of the
// client's socket too, learned from the dialer.
func getPort(t *testing.T, method, u string, hdr map[string]string) (*http.Response, []byte, int) {
	t.Helper()
	req, _ := http.NewRequest(method, u, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	var port int
	var d net.Dialer
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			port = c.LocalAddr().(*net.TCPAddr).Port
		}
		return c, err
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Timeout: 20 * time.Second, Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if port == 0 {
		t.Fatalf("%s %s: the dialer saw no connection", method, u)
	}
	return resp, body, port
}

// checkPeerPort checks the PeerPortHeader of a /large response that a
// client got on a connection from local port clientPort: the remote port
// of the connection the app accepted. Direct, that is clientPort. Through
// the proxy it is the local port of the proxy's upstream socket, which the
// client cannot see: then the kernel must know a TCP connection between
// 127.0.0.1 on that port and the app's address, still open or in
// TIME_WAIT (for a minute after it closed). Not behind HAProxy, which
// closes some of its connections to the app so that neither side is left
// in TIME_WAIT (seen on /large with HAProxy 2.6): there the port is only
// checked to be another than the client's.
func (s *realStack) checkPeerPort(t *testing.T, what string, resp *http.Response, clientPort int) {
	t.Helper()
	v := resp.Header.Values(appserver.PeerPortHeader)
	port, err := strconv.Atoi(strings.Join(v, ","))
	if err != nil || port < 1 || port > 65535 {
		t.Errorf("%s from port %d: %s %q, want one port number", what, clientPort, appserver.PeerPortHeader, v)
		return
	}
	if !s.d.Route.Proxied() {
		if port != clientPort {
			t.Errorf("%s: %s %d, want the client's local port %d", what, appserver.PeerPortHeader, port, clientPort)
		}
		return
	}
	if s.proxy != nil && s.proxy.Name() == "haproxy" {
		if port == clientPort {
			t.Errorf("%s through HAProxy: %s %d is the client's own port", what, appserver.PeerPortHeader, port)
		}
		return
	}
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	peer, app := procNetAddr(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))), procNetAddr(t, s.run.AppAddr())
	if !tcpConnExists(b, peer, app) {
		var seen []string
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.Contains(line, app) {
				seen = append(seen, strings.TrimSpace(line))
			}
		}
		t.Errorf("%s through the proxy: %s %d, but /proc/net/tcp has no connection between %s and the app at %s (%s); its sockets of the app:\n%s",
			what, appserver.PeerPortHeader, port, peer, s.run.AppAddr(), app, strings.Join(seen, "\n"))
	}
}

// tcpConnExists reports whether a /proc/net/tcp text has a socket of the
// connection between a and b (as procNetAddr writes them), from either
// end, in any state.
func tcpConnExists(procNetTCP []byte, a, b string) bool {
	for line := range strings.SplitSeq(string(procNetTCP), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && (f[1] == a && f[2] == b || f[1] == b && f[2] == a) {
			return true
		}
	}
	return false
}

// checkCodes GETs base+path for each path: it must answer its status
// code, with Server-Timing.
func checkCodes(t *testing.T, base string, codes map[string]int) {
	t.Helper()
	for path, code := range codes {
		resp, _ := get(t, base+path, nil)
		if resp.StatusCode != code || !serverTimingRE.MatchString(resp.Header.Get("Server-Timing")) {
			t.Errorf("%s: %s, Server-Timing %q; want %d with Server-Timing", path, resp.Status, resp.Header.Get("Server-Timing"), code)
		}
	}
}

// checkGroups checks the exporter selectors of the app and the proxy
// (Running.Groups): their cgroups when limited, else their process trees;
// and that the app's cgroup holds exactly the app's process group.
func (s *realStack) checkGroups(t *testing.T) {
	t.Helper()
	groups, pids := s.run.Groups(), s.run.PIDs()
	for _, comp := range []string{"app", "proxy"} {
		want := []string{"tree:" + strconv.Itoa(pids[comp])}
		if s.limited {
			want = []string{"cgroup:slowlab/" + strconv.Itoa(os.Getpid()) + "/" + s.d.RunID + "/" + comp}
		}
		if comp == "proxy" && s.d.Route == RouteDirect {
			want = nil
		}
		if fmt.Sprint(groups[comp]) != fmt.Sprint(want) {
			t.Errorf("Groups()[%s] = %v, want %v", comp, groups[comp], want)
		}
	}
	if s.limited {
		got, err := s.run.Cgroup("app").Pids()
		slices.Sort(got)
		want := groupMembers(pids["app"])
		slices.Sort(want)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("app cgroup holds %v (%v), want the app's process group %v", got, err, want)
		}
	}
}

// sendRecord finds id's record in a send log text: the record and its
// line; start records are skipped.
func sendRecord(log []byte, id string) (appserver.SendRecord, []byte, bool) {
	for line := range bytes.SplitSeq(log, []byte("\n")) {
		var rec appserver.SendRecord
		if json.Unmarshal(line, &rec) == nil && rec.ID == id && rec.Event == "" {
			return rec, line, true
		}
	}
	return appserver.SendRecord{}, nil, false
}

// waitRecord waits for the app's send log to have id's record.
func (s *realStack) waitRecord(t *testing.T, id string) (appserver.SendRecord, []byte) {
	t.Helper()
	path := s.app().sendLog
	var rec appserver.SendRecord
	var line []byte
	slowlabtest.WaitFor(t, "the app-send record of "+id, func() bool {
		b, _ := os.ReadFile(path)
		var ok bool
		rec, line, ok = sendRecord(b, id)
		return ok
	}, func() string { b, _ := os.ReadFile(path); return path + ":\n" + string(b) })
	return rec, line
}

// checkRecordLine checks a send-log line of a whole response of n bytes,
// to the byte, as the apps write it (app.py's json.dumps with compact
// separators, its keys in order): {"id":ID,"bytes":N,"app_send_s":S,
// "complete":true,"pid":P,"peer_port":PORT} with "traceparent":trace last
// when the request had one; P one of pids, PORT the response's
// X-Slowlab-Peer-Port.
func checkRecordLine(t *testing.T, line []byte, id string, n int, trace string, pids []int, port string) {
	t.Helper()
	prefix := fmt.Sprintf(`{"id":"%s","bytes":%d,"app_send_s":`, id, n)
	tail := peerPortKey(port) + "}"
	if trace != "" {
		tail = fmt.Sprintf(`%s,"traceparent":"%s"}`, peerPortKey(port), trace)
	}
	var rec appserver.SendRecord
	json.Unmarshal(line, &rec)
	suffix := fmt.Sprintf(`,"complete":true,"pid":%d`, rec.PID) + tail
	if !bytes.HasPrefix(line, []byte(prefix)) || !bytes.HasSuffix(line, []byte(suffix)) || !slices.Contains(pids, rec.PID) {
		t.Errorf("app-send record %s, want %s...%s with the pid one of the workers %v", line, prefix, suffix, pids)
	}
}

// peerPortKey is a send record's "peer_port" key: none when the response
// had no X-Slowlab-Peer-Port.
func peerPortKey(port string) string {
	if port == "" {
		return ""
	}
	return `,"peer_port":` + port
}

// checkStartLine checks that the send log has id's start record, to the
// byte: {"event":"start","id":ID,"pid":P,"peer_port":PORT}, P one of
// pids, before id's end record.
func checkStartLine(t *testing.T, log []byte, id string, pids []int, port string) {
	t.Helper()
	for line := range bytes.SplitSeq(log, []byte("\n")) {
		var rec appserver.SendRecord
		if json.Unmarshal(line, &rec) != nil || rec.ID != id {
			continue
		}
		want := fmt.Sprintf(`{"event":"start","id":"%s","pid":%d%s}`, id, rec.PID, peerPortKey(port))
		if string(line) != want || !slices.Contains(pids, rec.PID) {
			t.Errorf("first app-send record of %s: %s, want %s with the pid one of the workers %v", id, line, want, pids)
		}
		return
	}
	t.Errorf("app-send log has no record of %s:\n%s", id, log)
}

// rawGet sends GET path with request id id to addr on a connection whose
// receive buffer is 4 KiB, set before connect (Linux doubles it) so that
// the window the app sees stays small, and reads nothing: the caller
// reads the response (readResponse).
func rawGet(t *testing.T, addr, path, id string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) }); err != nil {
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

// readResponse reads the response on conn to its end.
func readResponse(t *testing.T, conn net.Conn) (*http.Response, []byte) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(slowlabtest.HangGuard))
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 64<<10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s, %d bytes: %v", resp.Status, len(body), err)
	}
	return resp, body
}

// statusField is field's value in a /proc/PID/status text, trimmed:
// "1234 kB", "S (sleeping)".
func statusField(status []byte, field string) (string, bool) {
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// procStatus is field of process pid's /proc/PID/status.
func procStatus(t *testing.T, pid int, field string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	v, ok := statusField(b, field)
	if !ok {
		t.Fatalf("/proc/%d/status has no %s", pid, field)
	}
	return v
}

// procMemory is field (VmRSS, VmHWM) summed over pids, in bytes.
func procMemory(t *testing.T, pids []int, field string) int64 {
	t.Helper()
	var sum int64
	for _, pid := range pids {
		v := procStatus(t, pid, field)
		kb, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/status %s: %q", pid, field, v)
		}
		sum += kb << 10
	}
	return sum
}

// procState is the one-letter state of process pid's main thread.
func procState(t *testing.T, pid int) string {
	t.Helper()
	state, _, _ := strings.Cut(procStatus(t, pid, "State"), " ")
	return state
}

// procNetAddr writes an IPv4 HOST:PORT as /proc/net/tcp does: 0100007F:1F90.
func procNetAddr(t *testing.T, hostport string) string {
	t.Helper()
	ap, err := net.ResolveTCPAddr("tcp4", hostport)
	if err != nil || ap.IP.To4() == nil {
		t.Fatalf("address %q: %v", hostport, err)
	}
	ip := ap.IP.To4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], ap.Port)
}

// parseSendQueue is the send queue (tx_queue: bytes not yet acknowledged)
// of the socket from local to remote (as procNetAddr writes them) in a
// /proc/net/tcp text; 0 when there is no such socket.
func parseSendQueue(procNetTCP []byte, local, remote string) (int64, error) {
	for line := range strings.SplitSeq(string(procNetTCP), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[1] != local || f[2] != remote {
			continue
		}
		tx, _, _ := strings.Cut(f[4], ":")
		n, err := strconv.ParseInt(tx, 16, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/net/tcp: %q: %w", line, err)
		}
		return n, nil
	}
	return 0, nil
}

// sendQueue is the send queue of the IPv4 TCP socket from local to
// remote (HOST:PORT each).
func sendQueue(t *testing.T, local, remote string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	n, err := parseSendQueue(b, procNetAddr(t, local), procNetAddr(t, remote))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitStalled waits until the app waits on its full socket to conn's
// client: the kernel holds bytes the client has no room for, and every
// process that serves requests sleeps. It returns the send queue.
func (s *realStack) waitStalled(t *testing.T, conn net.Conn) int64 {
	t.Helper()
	var txq int64
	var states []string
	slowlabtest.WaitFor(t, "the app waiting on the full socket", func() bool {
		txq, states = sendQueue(t, s.run.AppAddr(), conn.LocalAddr().String()), nil
		for _, pid := range s.servingPIDs() {
			states = append(states, procState(t, pid))
		}
		return txq > 0 && !slices.ContainsFunc(states, func(st string) bool { return st != "S" })
	}, func() string { return fmt.Sprintf("send queue %d, states %v", txq, states) })
	return txq
}

// held returns the app's held long-polls by worker PID and their sum.
func (s *realStack) held(t *testing.T) (map[string]int, int) {
	t.Helper()
	m, err := s.app().LongPollsHeld(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, n := range m {
		sum += n
	}
	return m, sum
}

// waitHeld waits until the app's workers hold n long-polls in all.
func (s *realStack) waitHeld(t *testing.T, n int) map[string]int {
	t.Helper()
	var m map[string]int
	slowlabtest.WaitFor(t, fmt.Sprintf("%d long-polls held", n), func() bool {
		var sum int
		m, sum = s.held(t)
		return sum == n
	}, func() string { return fmt.Sprint(m) })
	return m
}

// TestLongPollsHeld holds long-polls on an app's workers: each worker's
// file counts the ones it waits on, by its PID, and a finished long-poll
// leaves the count. node:cluster's primary hands connections to its
// workers in turn, so each holds some; Uvicorn's workers take them as
// they accept.
func TestLongPollsHeld(t *testing.T) {
	slowlabtest.Timing(t)
	for _, tc := range []struct {
		server string
		polls  int
		inTurn bool
	}{{"uvicorn-2", 6, false}, {"node-1", 3, true}, {"node-2", 6, true}} {
		t.Run(tc.server, func(t *testing.T) {
			s := startReal(t, lookup(t, NameReal, tc.server), RouteDirect, tc.server, 1<<20)
			s.checkWorkers(t)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			// Cleanups run last first: the clients hang up, are waited
			// for, then the stack stops (if the test did not stop it).
			t.Cleanup(wg.Wait)
			t.Cleanup(cancel)
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
			// Longer than the test can wait for anything (HangGuard).
			for range tc.polls {
				wg.Go(func() { poll("10m") })
			}
			held := s.waitHeld(t, tc.polls)
			workers := s.servingPIDs()
			t.Logf("held by worker PID: %v (workers %v)", held, workers)
			for pid, n := range held {
				if p, _ := strconv.Atoi(pid); !slices.Contains(workers, p) || n < 1 {
					t.Errorf("held %v: %s holds %d; want only workers %v, each holding some", held, pid, n, workers)
				}
			}
			if tc.inTurn && len(held) != len(workers) {
				t.Errorf("held %v: want every worker of %v to hold long-polls", held, workers)
			}
			// Short long-polls come and go: once each has answered, only
			// the long ones are held again.
			var short sync.WaitGroup
			for range 3 {
				short.Go(func() {
					if code, err := poll("200ms"); err != nil || code != 204 {
						t.Errorf("short long-poll: %d, %v", code, err)
					}
				})
			}
			short.Wait()
			if m, got := s.held(t); got != tc.polls {
				t.Errorf("after the short long-polls answered: %v, %d held, want %d", m, got, tc.polls)
			}
			// Stopped with the long-polls held: stopAndCheck also wants
			// the exited workers' files skipped.
			s.stopAndCheck(t)
		})
	}
}

// TestBackpressure sends a 16 MiB /large, on every server model whose
// app can ignore backpressure, to a reader with a tiny receive window
// that reads nothing until the app waits on the full socket. With
// backpressure=off the app has handed the whole body over by then
// (app_send_s is recorded) and its workers hold most of it; with
// backpressure on they hold about a chunk, nothing is recorded until the
// client reads, and their peak resident memory stays flat for the whole
// download. The premise is a kernel that cannot take the whole body into
// the socket's send buffer (net.ipv4.tcp_wmem's maximum, 4 MiB by
// default).
func TestBackpressure(t *testing.T) {
	slowlabtest.Timing(t)
	const size = 16 << 20
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem"); err == nil {
		t.Logf("net.ipv4.tcp_wmem %s", bytes.TrimSpace(b))
	}
	real, _, err := compose(NameReal, realApps(), realProxy())
	if err != nil {
		t.Fatal(err)
	}
	var servers []string
	for _, a := range real.Apps {
		for _, m := range a.Models() {
			if m.BackpressureOff {
				servers = append(servers, Server{Model: m.Name, Workers: 2, Threads: 1}.Name())
			}
		}
	}
	if len(servers) == 0 {
		t.Fatal("no server model of the real stack has BackpressureOff")
	}
	for _, server := range servers {
		t.Run(server, func(t *testing.T) {
			// One stack for both modes: a second start checked what the
			// first did (its workers). On first: it bounds the workers'
			// peak memory (VmHWM) over its download, which an earlier
			// off download on the same workers would have raised already;
			// off reads its own growth of VmRSS from where it starts.
			s := startReal(t, lookup(t, NameReal, server), RouteDirect, server, int64(size))
			s.checkWorkers(t)
			for _, mode := range []string{"on", "off"} {
				t.Run(mode, func(t *testing.T) { testBackpressure(t, s, mode, size) })
			}
			s.stopAndCheck(t)
		})
	}
}

func testBackpressure(t *testing.T, s *realStack, mode string, size int) {
	pids := s.servingPIDs()
	rss0, hwm0 := procMemory(t, pids, "VmRSS"), procMemory(t, pids, "VmHWM")
	id := "bp-" + mode
	conn := rawGet(t, s.run.AppAddr(), "/large?backpressure="+mode, id)
	txq := s.waitStalled(t, conn)
	if mode == "off" {
		// Handed over though the client has read nothing; only the
		// record may lag.
		waitAppSend(t, s.run, id)
	}
	rss1 := procMemory(t, pids, "VmRSS")
	sends, err := s.run.AppSend(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, handed := sends[id]
	t.Logf("backpressure=%s, stalled with %d bytes in the kernel's send queue: workers' VmRSS %d -> %d KiB (+%d KiB), app_send recorded %t",
		mode, txq, rss0>>10, rss1>>10, (rss1-rss0)>>10, handed)
	switch grew := rss1 - rss0; mode {
	case "off":
		if !handed || grew < int64(size/2) {
			t.Errorf("backpressure=off: app handed the body %t, VmRSS grew %d KiB; want it handed and at least %d KiB held", handed, grew>>10, size/2>>10)
		}
	case "on":
		if len(sends) != 0 {
			t.Errorf("backpressure=on: app_send_s recorded before the client read: %v", sends)
		}
		if grew > int64(size/4) {
			t.Errorf("backpressure=on: VmRSS grew %d KiB while stalled, want under %d KiB", grew>>10, size/4>>10)
		}
	}

	resp, body := readResponse(t, conn)
	if resp.StatusCode != 200 || !bytes.Equal(body, largeBody(size)) || !serverTimingRE.MatchString(resp.Header.Get("Server-Timing")) {
		t.Fatalf("%s: %d bytes, byte-exact %t; headers %v", resp.Status, len(body), bytes.Equal(body, largeBody(size)), resp.Header)
	}
	_, line := s.waitRecord(t, id)
	checkRecordLine(t, line, id, size, "", pids, resp.Header.Get(appserver.PeerPortHeader))
	hwm1 := procMemory(t, pids, "VmHWM")
	t.Logf("backpressure=%s: workers' VmHWM %d -> %d KiB (+%d KiB) over the download", mode, hwm0>>10, hwm1>>10, (hwm1-hwm0)>>10)
	if mode == "on" {
		if grew := hwm1 - hwm0; grew > int64(size/4) {
			t.Errorf("backpressure=on: peak VmRSS grew %d KiB over the download, want under %d KiB", grew>>10, size/4>>10)
		}
		// A reader that leaves while the app waits for it: the record
		// says how much was handed over, and incomplete.
		conn := rawGet(t, s.run.AppAddr(), "/large", "bp-gone")
		s.waitStalled(t, conn)
		conn.Close()
		rec, _ := s.waitRecord(t, "bp-gone")
		t.Logf("reader that left: %+v", rec)
		if rec.Complete || rec.Bytes <= 0 || rec.Bytes >= int64(size) {
			t.Errorf("record of a reader that left: %+v, want incomplete with part of %d bytes", rec, size)
		}
	}
}

// The readers of /proc texts, on what Linux writes.
func TestProcParsers(t *testing.T) {
	status := []byte("Name:\tnode\nState:\tS (sleeping)\nVmHWM:\t   50332 kB\nVmRSS:\t   48936 kB\n")
	for field, want := range map[string]string{"State": "S (sleeping)", "VmHWM": "50332 kB", "VmRSS": "48936 kB", "Vm": ""} {
		if got, ok := statusField(status, field); got != want || ok != (want != "") {
			t.Errorf("statusField(%s) = %q, %t; want %q", field, got, ok, want)
		}
	}
	const tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 0100007F:9C41 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n" +
		"   1: 0100007F:9C41 0100007F:D431 01 002AD000:00000000 01:00000014 00000000     0        0 2 1 0 20 4 30 10 -1\n" +
		"   2: 0100007F:D431 0100007F:9C41 01 00000000:00002000 00:00000000 00000000     0        0 3 1 0 20 4 30 10 -1\n"
	if got := procNetAddr(t, "127.0.0.1:40001"); got != "0100007F:9C41" {
		t.Errorf("procNetAddr = %s", got)
	}
	for _, tc := range []struct {
		local, remote string
		want          int64
	}{{"0100007F:9C41", "0100007F:D431", 0x2AD000}, {"0100007F:D431", "0100007F:9C41", 0}, {"0100007F:9C41", "0100007F:0001", 0}} {
		if got, err := parseSendQueue([]byte(tcp), tc.local, tc.remote); err != nil || got != tc.want {
			t.Errorf("parseSendQueue(%s, %s) = %d, %v; want %d", tc.local, tc.remote, got, err, tc.want)
		}
	}
	if _, err := parseSendQueue([]byte("   1: 0100007F:9C41 0100007F:D431 01 zz:00000000\n"), "0100007F:9C41", "0100007F:D431"); err == nil {
		t.Error("a bad tx_queue read as a number")
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"0100007F:9C41", "0100007F:D431", true}, {"0100007F:D431", "0100007F:9C41", true},
		{"0100007F:9C41", "0100007F:0001", false}, {"0100007F:D431", "0100007F:D431", false}} {
		if got := tcpConnExists([]byte(tcp), tc.a, tc.b); got != tc.want {
			t.Errorf("tcpConnExists(%s, %s) = %t, want %t", tc.a, tc.b, got, tc.want)
		}
	}
}
