package assess

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// capListener accepts at most limit open connections: one more is closed
// at once, as a server at its connection limit refuses it.
type capListener struct {
	net.Listener
	limit int
	mu    sync.Mutex
	open  int
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		full := l.open >= l.limit
		if !full {
			l.open++
		}
		l.mu.Unlock()
		if full {
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			continue
		}
		return &capConn{Conn: c, l: l}, nil
	}
}

type capConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

func (c *capConn) Close() error {
	c.once.Do(func() { c.l.mu.Lock(); c.l.open--; c.l.mu.Unlock() })
	return c.Conn.Close()
}

// TestShortWhenTheStackRefuses: a front that takes at most 3 open
// connections holds 1 and 2 idle connections (/fast is served beside it,
// so only the probe's clients count), then refuses the 4th: that level is
// short (3 of 4 in place), not held and not a threshold, the search stops
// there, and a bound above what held in place is broken, one at it passes.
func TestShortWhenTheStackRefuses(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it runs levels of load for seconds")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fastLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	srv, fast := &http.Server{Handler: ok}, &http.Server{Handler: ok}
	go srv.Serve(&capListener{Listener: ln, limit: 3})
	go fast.Serve(fastLn)
	t.Cleanup(func() { srv.Close(); fast.Close() })
	c := quick("sync-1", stack.RouteDirect, 4, ProbeIdle)
	reqs, err := recorder.CreateFile[recorder.Request](t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer reqs.Close()
	r := &run{cfg: c, env: &lab.Env{}, probe: ProbeIdle, reqs: reqs, fastTimeout: time.Second, t0: time.Now(),
		t: targets{fast: "http://" + fastLn.Addr().String() + "/fast", front: ln.Addr().String()}, maxLag: DefaultMaxLag}
	v := Verdict{Probe: string(ProbeIdle), MaxClients: 4}
	c.levels(context.Background(), &lab.Env{}, r, &v, 5*time.Millisecond, time.Now().Add(5*time.Minute))
	for _, lv := range v.Levels {
		t.Logf("%d clients: %s, %d connected, /fast %d/%d ok, ends %v", lv.Clients, lv.Status, lv.Connected, lv.FastOK, lv.FastSent, lv.Ends)
	}
	last := v.Levels[len(v.Levels)-1]
	if last.Clients != 4 || last.Status != statusShort || last.Connected != 3 || v.ClientsToDegrade != nil || v.HeldInPlace != 2 || !strings.HasPrefix(v.Stopped, "short: 3 of 4") {
		t.Fatalf("%q: last level %d %s (%d connected), threshold %v, held in place %d; want short at 4 (3 connected), none, 2",
			v.Stopped, last.Clients, last.Status, last.Connected, v.ClientsToDegrade, v.HeldInPlace)
	}
	res := &Result{Assessment: Assessment{Verdicts: []Verdict{v}}}
	for bound, broken := range map[string]bool{"idle<3": false, "idle<4": true} {
		res.bounds, _ = ParseFailOn(bound)
		b, u := res.Judge()
		if (len(b) == 1) != broken || len(u) != 0 {
			t.Errorf("%s: broken %v, not judged %v; want broken %v", bound, b, u, broken)
		}
	}
}
