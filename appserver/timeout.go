package appserver

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxWorkerTimeout bounds Options.WorkerTimeout.
const MaxWorkerTimeout = time.Hour

// WorkerTimeoutLog starts the line the server writes when it aborts a sync
// worker's connection, as Gunicorn's arbiter logs "WORKER TIMEOUT (pid:N)"
// when it kills a worker.
const WorkerTimeoutLog = "WORKER TIMEOUT"

// timeouts is the sync model's worker timeout: Gunicorn's --timeout. A
// Gunicorn sync worker tells its arbiter it is alive only between
// connections, so one that spends longer than the timeout on a single
// connection (waiting for its request, working on it, or writing the
// response) is killed and replaced; the client sees its connection closed
// with no response (FIN; a reset if it still had unread data there), or a
// response cut short. Here the worker's connection is closed at the
// timeout, which frees the worker's slot at once and makes the request's
// context done. Gunicorn checks its workers about once a second, so its
// kills come up to a second after the timeout; these come at it.
type timeouts struct {
	timeout time.Duration
	log     io.Writer
	logMu   sync.Mutex
	total   prometheus.Counter
}

func newTimeouts(reg prometheus.Registerer, o Options) *timeouts {
	t := &timeouts{timeout: o.WorkerTimeout, log: o.ErrorLog, total: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "slowlab_target_worker_timeouts_total",
		Help: "Sync workers whose connection outlived the worker timeout and was aborted (Gunicorn's WORKER TIMEOUT).",
	})}
	if t.log == nil {
		t.log = io.Discard
	}
	if o.Model == ModelSync && o.WorkerTimeout > 0 {
		reg.MustRegister(t.total)
	}
	return t
}

// listener wraps worker id's listener so that each connection it hands out
// is aborted once it has been open for the timeout; without a timeout it
// returns ln.
func (t *timeouts) listener(ln net.Listener, id int) net.Listener {
	if t.timeout <= 0 {
		return ln
	}
	return &timeoutListener{Listener: ln, t: t, worker: id}
}

func (t *timeouts) expired(worker int, peer net.Addr) {
	t.total.Inc()
	t.logMu.Lock()
	defer t.logMu.Unlock()
	fmt.Fprintf(t.log, "%s [CRITICAL] %s (worker:%d, peer %v, after %v)\n", time.Now().UTC().Format("2006-01-02 15:04:05.000"), WorkerTimeoutLog, worker, peer, t.timeout)
}

type timeoutListener struct {
	net.Listener
	t      *timeouts
	worker int
}

func (l *timeoutListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &timeoutConn{Conn: c}
	tc.timer = time.AfterFunc(l.t.timeout, func() {
		if tc.closed.Load() {
			return
		}
		l.t.expired(l.worker, c.RemoteAddr())
		tc.abort()
	})
	return tc, nil
}

// timeoutConn stops its timer when the worker closes it in time.
type timeoutConn struct {
	net.Conn
	timer  *time.Timer
	closed atomic.Bool
}

func (c *timeoutConn) Close() error {
	c.timer.Stop()
	return c.abort()
}

// abort closes the connection; the timer calls it, so it leaves the timer
// alone (Accept may not have stored it yet).
func (c *timeoutConn) abort() error {
	c.closed.Store(true)
	return c.Conn.Close()
}
