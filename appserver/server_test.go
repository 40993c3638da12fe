package appserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// startServer serves o on loopback and returns app and admin base URLs.
func startServer(t testing.TB, o Options) (*Server, string, string) {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	app, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, app, admin) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(slowlabtest.HangGuard):
			t.Error("Serve did not return after cancel")
		}
	})
	return s, "http://" + app.Addr().String(), "http://" + admin.Addr().String()
}

// holdLarge opens a connection, requests /large and reads nothing, so the
// worker serving it stays stuck writing once the socket buffers are full.
func holdLarge(t *testing.T, base, id string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /large HTTP/1.1\r\nHost: x\r\n%s: %s\r\n\r\n", RequestIDHeader, id)
	return c
}

// waitBusy waits until the server reports n busy slots.
func waitBusy(t *testing.T, s *Server, n int) {
	t.Helper()
	slowlabtest.WaitFor(t, fmt.Sprintf("%d busy slots", n), func() bool {
		total := 0.0
		for _, v := range gauges(s, "slowlab_target_busy_slots") {
			total += v
		}
		return int(total) == n
	})
}

// getFast GETs /fast on a new connection; timeout 0 waits as long as it
// takes. Expecting an answer, pass slowlabtest.HangGuard: a slow machine answers late,
// not never.
func getFast(base string, timeout time.Duration) error {
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(base + "/fast")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if string(b) != `{"ok": true}` {
		return fmt.Errorf("body %q", b)
	}
	return nil
}

// The 64 MiB body is far more than loopback socket buffers hold, so a
// holder that never reads keeps its worker writing.
const stuckSize = 64 << 20

func TestSyncWorkersStuckBehindSlowReaders(t *testing.T) {
	o := DefaultOptions()
	o.LargeSize = stuckSize
	s, base, admin := startServer(t, o)

	h1 := holdLarge(t, base, "h1")
	waitBusy(t, s, 1)
	if err := getFast(base, slowlabtest.HangGuard); err != nil {
		t.Fatalf("one worker stuck, the other should answer /fast: %v", err)
	}
	holdLarge(t, base, "h2")
	waitBusy(t, s, 2)
	// Nothing can answer now, however long one waits: the timeout only
	// ends the wait.
	if err := getFast(base, 300*time.Millisecond); err == nil {
		t.Fatal("both sync workers are stuck writing, yet /fast was answered")
	}
	// The admin listener is outside the pool and answers now.
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatalf("admin while workers stuck: %v", err)
	}
	resp.Body.Close()
	// Freeing one worker lets /fast through again.
	h1.Close()
	if err := getFast(base, slowlabtest.HangGuard); err != nil {
		t.Fatalf("after a holder left, /fast: %v", err)
	}
	recs := appSend(t, admin, "h1")
	if len(recs) != 1 || recs[0].Complete || recs[0].Error == "" {
		t.Fatalf("app-send for the abandoned download: %+v", recs)
	}
}

func TestGthreadAndAsyncServeBesideSlowReaders(t *testing.T) {
	for _, o := range []Options{
		{Model: ModelGthread, Workers: 1, Threads: 4, LargeSize: stuckSize, BlockSize: DefaultBlockSize},
		{Model: ModelAsync, Workers: 1, Threads: 1, LargeSize: stuckSize, BlockSize: DefaultBlockSize},
	} {
		t.Run(o.Name(), func(t *testing.T) {
			s, base, _ := startServer(t, o)
			holdLarge(t, base, "h1")
			holdLarge(t, base, "h2")
			if o.Model == ModelGthread {
				waitBusy(t, s, 2)
			}
			if err := getFast(base, slowlabtest.HangGuard); err != nil {
				t.Fatalf("/fast beside two slow readers: %v", err)
			}
		})
	}
}

func TestGthreadQueuesWhenThreadsAreFull(t *testing.T) {
	s, base, _ := startServer(t, Options{Model: ModelGthread, Workers: 1, Threads: 2, LargeSize: stuckSize, BlockSize: DefaultBlockSize})
	holdLarge(t, base, "h1")
	holdLarge(t, base, "h2")
	waitBusy(t, s, 2)
	if err := getFast(base, 300*time.Millisecond); err == nil { // as above: a non-event
		t.Fatal("1x2 gthread with both threads stuck answered /fast")
	}
}

// appSend waits until /app-send has an end record for id and returns the
// end records, having checked that a start record naming this process
// and a peer port came first.
func appSend(t *testing.T, admin, id string) []SendRecord {
	t.Helper()
	var recs []SendRecord
	slowlabtest.WaitFor(t, "an app-send end record for "+id, func() bool {
		resp, err := http.Get(admin + "/app-send?id=" + id)
		if err != nil {
			t.Fatal(err)
		}
		recs = nil
		err = json.NewDecoder(resp.Body).Decode(&recs)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return len(recs) > 1
	})
	if s := recs[0]; s.Event != SendStart || s.ID != id || s.PID != os.Getpid() || s.PeerPort == 0 || s.Bytes != 0 {
		t.Errorf("first app-send record of %s: %+v, want a start record of this process with a peer port", id, s)
	}
	var ends []SendRecord
	for _, r := range recs[1:] {
		if r.Event != "" || r.PID != os.Getpid() || r.PeerPort != recs[0].PeerPort {
			t.Errorf("app-send record of %s after its start: %+v, want an end record of this process from peer port %d", id, r, recs[0].PeerPort)
		}
		ends = append(ends, r)
	}
	return ends
}

func TestEndpoints(t *testing.T) {
	o := DefaultOptions()
	o.LargeSize = 1<<20 + 123 // not a multiple of the block
	_, base, admin := startServer(t, o)
	get := func(path string, hdr ...string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if len(hdr) == 2 {
			req.Header.Set(hdr[0], hdr[1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET %s body: %v", path, err)
		}
		return resp, b
	}
	resp, body := get("/fast")
	if resp.StatusCode != 200 || string(body) != `{"ok": true}` || len(body) != 12 {
		t.Errorf("/fast: %d %q", resp.StatusCode, body)
	}
	if st := resp.Header.Get("Server-Timing"); !strings.HasPrefix(st, "app;dur=") {
		t.Errorf("/fast Server-Timing %q", st)
	}
	if resp.Close != true {
		t.Error("sync worker kept the connection open")
	}

	resp, body = get("/large", RequestIDHeader, "big-1")
	if resp.StatusCode != 200 || int64(len(body)) != o.LargeSize || resp.ContentLength != o.LargeSize {
		t.Fatalf("/large: status %d, %d bytes, Content-Length %d", resp.StatusCode, len(body), resp.ContentLength)
	}
	for i, b := range body {
		if want := byte('a' + (i%DefaultBlockSize)%26); b != want {
			t.Fatalf("/large byte %d = %q, want %q", i, b, want)
		}
	}
	recs := appSend(t, admin, "big-1")
	if len(recs) != 1 || !recs[0].Complete || recs[0].Bytes != o.LargeSize || !(recs[0].AppSendS > 0) {
		t.Errorf("app-send: %+v", recs)
	}

	if resp, body = get("/large?size=10"); len(body) != 10 {
		t.Errorf("/large?size=10: %d bytes", len(body))
	}
	if resp, body = get("/bytes?n=70000"); resp.StatusCode != 200 || len(body) != 70000 {
		t.Errorf("/bytes?n=70000: %d, %d bytes", resp.StatusCode, len(body))
	}
	start := time.Now()
	if resp, _ = get("/longpoll?wait=50ms"); resp.StatusCode != http.StatusNoContent || time.Since(start) < 50*time.Millisecond {
		t.Errorf("/longpoll?wait=50ms: %d after %s", resp.StatusCode, time.Since(start))
	}
	for _, bad := range []string{"/bytes?n=-1", "/bytes?n=x", "/bytes", "/large?size=abc", "/longpoll?wait=forever", "/longpoll?wait=-1s", "/longpoll?wait=11m"} {
		if resp, body = get(bad); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", bad, resp.StatusCode)
		}
	}
	if resp, _ = get("/nope"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/nope: %d", resp.StatusCode)
	}
}

// getPort GETs (or HEADs) base+path on a new connection from 127.0.0.1
// and returns the response, its body and the local port the client's
// socket had, learned from the dialer.
func getPort(t *testing.T, method, url string) (*http.Response, []byte, int) {
	t.Helper()
	var port int
	var d net.Dialer
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			port = c.LocalAddr().(*net.TCPAddr).Port
		}
		return c, err
	}}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := (&http.Client{Timeout: slowlabtest.HangGuard, Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s body: %v", method, url, err)
	}
	if port == 0 {
		t.Fatalf("%s %s: the dialer saw no connection", method, url)
	}
	return resp, body, port
}

// Every /large response (GET, HEAD, a 400) carries PeerPortHeader: the
// port of the client's own socket, the remote port of the connection the
// app accepted; no other endpoint has it, and a connection without a port
// (a Unix socket's RemoteAddr) leaves it out.
func TestPeerPortHeader(t *testing.T) {
	for _, o := range []Options{
		{Model: ModelSync, Workers: 2, Threads: 1, LargeSize: 300_000, BlockSize: DefaultBlockSize},
		{Model: ModelGthread, Workers: 1, Threads: 4, LargeSize: 300_000, BlockSize: DefaultBlockSize},
		{Model: ModelAsync, Workers: 1, Threads: 1, LargeSize: 300_000, BlockSize: DefaultBlockSize},
	} {
		t.Run(o.Name(), func(t *testing.T) {
			_, base, _ := startServer(t, o)
			for _, tc := range []struct {
				method, path string
				code         int
				want         bool
			}{
				{"GET", "/large", 200, true}, {"GET", "/large?size=10", 200, true}, {"HEAD", "/large", 200, true},
				{"GET", "/large?size=abc", 400, true},
				{"GET", "/fast", 200, false}, {"GET", "/bytes?n=10", 200, false}, {"GET", "/longpoll?wait=0s", 204, false},
			} {
				resp, body, port := getPort(t, tc.method, base+tc.path)
				got, want := resp.Header.Values(PeerPortHeader), []string(nil)
				if tc.want {
					want = []string{strconv.Itoa(port)}
				}
				if resp.StatusCode != tc.code || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s %s from port %d: %s, %d bytes, %s %q; want %d and %q", tc.method, tc.path, port, resp.Status, len(body), PeerPortHeader, got, tc.code, want)
				}
			}
		})
	}
	for _, remote := range []string{"@", "", "127.0.0.1:0"} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/large", nil)
		r.RemoteAddr = remote
		setPeerPort(w, r)
		if v, ok := w.Header()[PeerPortHeader]; ok {
			t.Errorf("RemoteAddr %q: %s %q, want none", remote, PeerPortHeader, v)
		}
	}
}

func TestMetrics(t *testing.T) {
	s, base, _ := startServer(t, Options{Model: ModelGthread, Workers: 2, Threads: 3, LargeSize: 10, BlockSize: 4})
	for i := 0; i < 3; i++ {
		if err := getFast(base, slowlabtest.HangGuard); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP slowlab_target_requests_total Requests answered by the embedded target, by endpoint and status code.
# TYPE slowlab_target_requests_total counter
slowlab_target_requests_total{code="200",endpoint="bytes"} 0
slowlab_target_requests_total{code="200",endpoint="events"} 0
slowlab_target_requests_total{code="200",endpoint="fast"} 3
slowlab_target_requests_total{code="200",endpoint="large"} 0
slowlab_target_requests_total{code="101",endpoint="ws"} 0
slowlab_target_requests_total{code="200",endpoint="upload"} 0
slowlab_target_requests_total{code="204",endpoint="longpoll"} 0
slowlab_target_requests_total{code="200",endpoint="page"} 0
slowlab_target_requests_total{code="301",endpoint="redirect"} 0
slowlab_target_requests_total{code="302",endpoint="redirect"} 0
slowlab_target_requests_total{code="400",endpoint="bytes"} 0
slowlab_target_requests_total{code="400",endpoint="events"} 0
slowlab_target_requests_total{code="400",endpoint="large"} 0
slowlab_target_requests_total{code="400",endpoint="longpoll"} 0
slowlab_target_requests_total{code="400",endpoint="page"} 0
slowlab_target_requests_total{code="400",endpoint="redirect"} 0
slowlab_target_requests_total{code="400",endpoint="ws"} 0
slowlab_target_requests_total{code="426",endpoint="ws"} 0
slowlab_target_requests_total{code="499",endpoint="events"} 0
slowlab_target_requests_total{code="499",endpoint="longpoll"} 0
slowlab_target_requests_total{code="499",endpoint="upload"} 0
slowlab_target_requests_total{code="499",endpoint="ws"} 0
# HELP slowlab_target_slots Requests the server can work on at once (workers x threads); absent for the unbounded async model.
# TYPE slowlab_target_slots gauge
slowlab_target_slots 6
`
	if err := testutil.GatherAndCompare(s.Registry(), strings.NewReader(want), "slowlab_target_requests_total", "slowlab_target_slots"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(s.metrics.busy); n != 2 {
		t.Errorf("busy slot series = %d, want one per worker (2)", n)
	}
	if problems, err := testutil.GatherAndLint(s.Registry()); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Model: "prefork", Workers: 1, Threads: 1, BlockSize: 1}, `model "prefork": allowed sync, gthread, async`},
		{Options{Model: ModelSync, Workers: 0, Threads: 1, BlockSize: 1}, "workers 0: must be at least 1"},
		{Options{Model: ModelGthread, Workers: 1, Threads: -2, BlockSize: 1}, "threads -2: must be at least 1"},
		{Options{Model: ModelSync, Workers: 1, Threads: 4, BlockSize: 1}, "threads 4: only the gthread model has threads (use 1)"},
		{Options{Model: ModelGthread, Workers: 1, Threads: 1, BlockSize: 1, WorkerConnections: -1}, "worker connections -1: must be 0 (Gunicorn's default, 1000) or more"},
		{Options{Model: ModelAsync, Workers: 1, Threads: 1, BlockSize: 1, AcceptWhenFree: true}, "accept policy: only the gthread model has one (model async)"},
		{Options{Model: ModelSync, Workers: 1, Threads: 1, LargeSize: -1, BlockSize: 1}, "large size -1: must be 0 or more bytes"},
		{Options{Model: ModelSync, Workers: 1, Threads: 1}, "block size 0: must be at least 1 byte"},
	} {
		err := tc.o.Validate()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: got %v, want %q", tc.o, err, tc.want)
		}
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// gauges returns a per-worker gauge's values by worker label.
func gauges(s *Server, name string) map[string]float64 {
	out := map[string]float64{}
	mfs, _ := s.Registry().Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			key := ""
			for _, l := range m.Label {
				key = l.GetValue()
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}

// holdLongPolls starts n long-polls of wait each on new connections and
// returns once the server has taken all n (held on a thread or queued).
func holdLongPolls(t *testing.T, s *Server, base string, n int, wait time.Duration) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; i < n; i++ {
		go func() {
			resp, err := c.Get(fmt.Sprintf("%s/longpoll?wait=%s", base, wait))
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	slowlabtest.WaitFor(t, fmt.Sprintf("the server to take %d long-polls", n), func() bool {
		total := gauges(s, "slowlab_target_queued_requests")[""]
		for _, v := range gauges(s, "slowlab_target_longpolls_in_progress") {
			total += v
		}
		return int(total) == n
	})
}

// TestGthreadFullWorkerKeepsAccepting: 2 workers x 2 threads given 3
// long-polls have a worker with both threads held (pigeonhole) and one with
// a free thread. As in Gunicorn, the full worker still accepts, so some
// /fast requests queue behind its long-polls although a thread is free
// elsewhere. With AcceptWhenFree every /fast goes to the free thread. The
// /fast requests go one at a time, and each is either answered or seen
// queued (the long-polls outlast the test), so no timeout decides.
func TestGthreadFullWorkerKeepsAccepting(t *testing.T) {
	slowlabtest.EndToEnd(t, "it holds workers for seconds")
	for _, whenFree := range []bool{false, true} {
		t.Run(fmt.Sprintf("AcceptWhenFree=%v", whenFree), func(t *testing.T) {
			var pending sync.WaitGroup
			t.Cleanup(pending.Wait) // after the server's shutdown, which ends the queued requests
			s, base, _ := startServer(t, Options{Model: ModelGthread, Workers: 2, Threads: 2, LargeSize: 10, BlockSize: 4, AcceptWhenFree: whenFree})
			holdLongPolls(t, s, base, 3, MaxLongPollWait)
			held := gauges(s, "slowlab_target_longpolls_in_progress")
			if max(held["0"], held["1"]) != 2 {
				t.Fatalf("held per worker %v: want one worker with both threads held", held)
			}
			// Gunicorn's policy draws a worker per connection: 40 all to
			// the free worker has probability 2^-40.
			answered, queued := 0, 0
			for i := 0; i < 40 && (whenFree || queued == 0); i++ {
				done := make(chan error, 1)
				pending.Add(1)
				go func() {
					defer pending.Done()
					done <- getFast(base, 0)
				}()
				slowlabtest.WaitFor(t, "/fast to be answered or queued", func() bool {
					select {
					case err := <-done:
						if err != nil {
							t.Fatalf("/fast: %v", err)
						}
						answered++
						return true
					default:
					}
					if q := int(gauges(s, "slowlab_target_queued_requests")[""]); q > queued {
						queued = q
						return true
					}
					return false
				})
			}
			if whenFree && queued != 0 {
				t.Errorf("AcceptWhenFree: %d /fast queued behind long-polls (%d answered); the free thread should have taken them all", queued, answered)
			}
			if !whenFree && queued == 0 {
				t.Errorf("Gunicorn's policy: all %d /fast answered; want some queued behind the full worker's long-polls", answered)
			}
			t.Logf("held %v, /fast answered %d, queued %d", held, answered, queued)
		})
	}
}

// TestGthreadWorkerConnections: a worker stops accepting at its connection
// limit, as Gunicorn's worker_connections; the rest wait in the backlog.
func TestGthreadWorkerConnections(t *testing.T) {
	slowlabtest.EndToEnd(t, "it holds workers for seconds")
	var pending sync.WaitGroup
	t.Cleanup(pending.Wait) // after the server's shutdown, which ends the requests
	s, base, _ := startServer(t, Options{Model: ModelGthread, Workers: 1, Threads: 1, LargeSize: 10, BlockSize: 4, WorkerConnections: 2})
	holdLongPolls(t, s, base, 1, MaxLongPollWait)
	for range 3 {
		pending.Add(1)
		go func() {
			defer pending.Done()
			getFast(base, 0)
		}()
	}
	// The held connection and one /fast fill the limit: one /fast queues
	// for the thread, two stay in the kernel backlog unaccepted.
	slowlabtest.WaitFor(t, "a /fast to queue for the thread", func() bool { return gauges(s, "slowlab_target_queued_requests")[""] >= 1 })
	port := base[strings.LastIndex(base, ":")+1:]
	var backlog int
	slowlabtest.WaitFor(t, "two /fast to wait in the accept queue", func() bool {
		backlog = acceptQueue(t, port)
		return backlog >= 2
	})
	if q := gauges(s, "slowlab_target_queued_requests")[""]; q != 1 || backlog != 2 {
		t.Errorf("queued = %v, accept queue %d with worker_connections 2 and one held; want 1 queued and 2 unaccepted", q, backlog)
	}
}

// TestGthreadConnectionsGoToEveryWorker: each connection goes to a worker
// drawn at random, so 20 long-polls land on both workers of 2 (all on one
// has probability 2^-19); goroutines sharing one descriptor would not.
func TestGthreadConnectionsGoToEveryWorker(t *testing.T) {
	slowlabtest.EndToEnd(t, "it holds workers for seconds")
	s, base, _ := startServer(t, Options{Model: ModelGthread, Workers: 2, Threads: 16, LargeSize: 10, BlockSize: 4})
	holdLongPolls(t, s, base, 20, time.Minute)
	held := gauges(s, "slowlab_target_longpolls_in_progress")
	if held["0"] == 0 || held["1"] == 0 {
		t.Errorf("held per worker %v: want both workers to have taken some of 20", held)
	}
}
