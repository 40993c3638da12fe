package appserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func TestParseWSQuery(t *testing.T) {
	def := WSParams{Mode: WSEcho, Interval: 100 * time.Millisecond, Count: 100, Queue: WSQueueWait}
	for _, tc := range []struct {
		query, err string
		want       WSParams
	}{
		{"", "", def},
		{"mode=push&interval=1ms&count=0&pad=16777216&queue=unbounded", "", WSParams{Mode: WSPush, Interval: time.Millisecond, Pad: 16 << 20, Queue: WSQueueUnbounded}},
		{"mode=push&interval=10s&count=1000000", "", WSParams{Mode: WSPush, Interval: 10 * time.Second, Count: 1000000, Queue: WSQueueWait}},
		{"mode=pull", `mode "pull": want echo or push`, def},
		{"interval=0s", `interval "0s": want a duration from 1ms to 10s`, def},
		{"interval=11s", `interval "11s": want a duration from 1ms to 10s`, def},
		{"count=-1", `count "-1": want 0..1000000 messages`, def},
		{"count=1000001", `count "1000001": want 0..1000000 messages`, def},
		{"pad=16777217", `pad "16777217": want 0..16777216 bytes`, def},
		{"queue=drop", `queue "drop": want wait or unbounded`, def},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := ParseWSQuery(q.Get)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: error %v, want %s", tc.query, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.query, got, err, tc.want)
		}
		if again, err := ParseWSQuery(mustQuery(t, got.Query()).Get); err != nil || again != got {
			t.Errorf("%q: Query() %q reads back as %+v %v", tc.query, got.Query(), again, err)
		}
	}
}

func mustQuery(t *testing.T, q string) url.Values {
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A WebSocket holds a sync worker for its whole life: with one worker,
// /fast is not answered while a socket is open (held counts it), and is
// once the client closed it. Echo gives each message back. Without an
// upgrade /ws answers 426, with a bad query 400, each counted.
func TestWSHoldsSyncWorker(t *testing.T) {
	slowlabtest.Timing(t)
	o := DefaultOptions()
	o.Workers = 1
	s, base, _ := startServer(t, o)
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if typ, b, err := c.Read(ctx); err != nil || typ != websocket.MessageText || string(b) != "hello" {
		t.Fatalf("echo: %v %q %v", typ, b, err)
	}
	if g := gauges(s, "slowlab_target_longpolls_in_progress"); g["0"] != 1 {
		t.Errorf("held %v, want the socket on worker 0", g)
	}
	if err := getFast(base, 300*time.Millisecond); err == nil {
		t.Fatal("the only sync worker holds a WebSocket, yet /fast was answered")
	}
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	if err := getFast(base, slowlabtest.HangGuard); err != nil {
		t.Fatalf("after the socket closed, /fast: %v", err)
	}
	for q, want := range map[string]int{"": http.StatusUpgradeRequired, "?mode=pull": http.StatusBadRequest} {
		resp, err := http.Get(base + "/ws" + q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /ws%s without an upgrade: %d %q, want %d", q, resp.StatusCode, b, want)
		}
	}
	// The library closes the connection inside Read as the client's close
	// frame arrives, which frees the worker before the handler counts the
	// session: wait for that count, then check them all.
	slowlabtest.WaitFor(t, "the WebSocket session counted", func() bool {
		return counter(t, s, "ws", "101")+counter(t, s, "ws", "499") > 0
	})
	for code, want := range map[string]float64{"101": 1, "426": 1, "400": 1, "499": 0} {
		if got := counter(t, s, "ws", code); got != want {
			t.Errorf("requests_total{endpoint=ws,code=%s} %v, want %v", code, got, want)
		}
	}
}

func counter(t *testing.T, s *Server, endpoint, code string) float64 {
	t.Helper()
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "slowlab_target_requests_total" {
			continue
		}
		for _, m := range mf.Metric {
			l := map[string]string{}
			for _, p := range m.Label {
				l[p.GetName()] = p.GetValue()
			}
			if l["endpoint"] == endpoint && l["code"] == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no requests_total{endpoint=%s,code=%s}", endpoint, code)
	return 0
}

// Serve's shutdown ends open WebSockets (hijacked, so http.Server's
// Shutdown does not see them): the client reads the connection's end and
// Serve returns (startServer's cleanup fails the test if it does not).
func TestWSClosedOnShutdown(t *testing.T) {
	slowlabtest.Timing(t)
	o := DefaultOptions()
	o.Model = ModelAsync
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	_, base, stop := serveStoppable(t, s)
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); err != nil { // the session is open in the app
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, _, err := c.Read(ctx); err == nil {
		t.Fatal("the socket is still open after the server stopped")
	}
}

// serveStoppable serves s on loopback until stop, which returns Serve's
// error (or fails the test if Serve does not return).
func serveStoppable(t *testing.T, s *Server) (*Server, string, func() error) {
	t.Helper()
	app, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, app, nil) }()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(slowlabtest.HangGuard):
			t.Fatal("Serve did not return after cancel")
			return nil
		}
	}
	return s, "http://" + app.Addr().String(), stop
}
