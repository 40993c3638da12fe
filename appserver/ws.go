package appserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// Limits of GET /ws, the same in every app that serves it: beyond them a
// value is a typo, answered 400 before the upgrade.
const (
	MinWSInterval     = time.Millisecond
	MaxWSInterval     = 10 * time.Second
	DefaultWSInterval = 100 * time.Millisecond
	MaxWSCount        = 1_000_000
	DefaultWSCount    = 100
	// MaxWSMessage bounds a pushed message's padding and an echoed
	// message: 16 MiB.
	MaxWSMessage = 16 << 20
)

// WebSocket modes of GET /ws.
const (
	WSEcho = "echo" // every message the client sends comes back, until it closes
	WSPush = "push" // Count stamped messages, one every Interval, then a close
)

// WebSocket queues of GET /ws?mode=push: how the app meets a client that
// reads more slowly than it pushes.
const (
	// WSQueueWait writes each message when the socket takes it: the
	// client's slowness holds the app (backpressure) and later messages
	// are stamped late.
	WSQueueWait = "wait"
	// WSQueueUnbounded stamps and queues each message on schedule in the
	// app's memory, and a writer drains the queue as the socket takes it:
	// a slow client grows the app's memory without limit, as servers that
	// buffer per-connection sends do.
	WSQueueUnbounded = "unbounded"
)

// WSParams is what a GET /ws asks for.
type WSParams struct {
	Mode     string
	Interval time.Duration
	Count    int
	Pad      int // bytes of padding in each pushed message
	Queue    string
}

// Query is the request's query string.
func (p WSParams) Query() string {
	if p.Mode != WSPush {
		return "mode=" + WSEcho
	}
	return fmt.Sprintf("mode=push&interval=%s&count=%d&pad=%d&queue=%s", p.Interval, p.Count, p.Pad, p.Queue)
}

// ParseWSQuery reads /ws's query: mode (echo, the default, or push), and
// for push interval (a Go duration, 1ms to 10s, default 100ms), count (0
// to 1000000 messages, default 100), pad (0 to 16 MiB) and queue (wait,
// the default, or unbounded). Its errors are the 400's text, the same in
// every app that can answer one before the upgrade (Uvicorn refuses a
// handshake its ASGI app closed before accepting with a bare 403).
func ParseWSQuery(get func(string) string) (WSParams, error) {
	p := WSParams{Mode: WSEcho, Interval: DefaultWSInterval, Count: DefaultWSCount, Queue: WSQueueWait}
	switch q := get("mode"); q {
	case "", WSEcho:
	case WSPush:
		p.Mode = WSPush
	default:
		return p, fmt.Errorf("mode %q: want echo or push", q)
	}
	if q := get("interval"); q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d < MinWSInterval || d > MaxWSInterval {
			return p, fmt.Errorf("interval %q: want a duration from %s to %s", q, MinWSInterval, MaxWSInterval)
		}
		p.Interval = d
	}
	if q := get("count"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 0 || n > MaxWSCount {
			return p, fmt.Errorf("count %q: want 0..%d messages", q, MaxWSCount)
		}
		p.Count = n
	}
	if q := get("pad"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 0 || n > MaxWSMessage {
			return p, fmt.Errorf("pad %q: want 0..%d bytes", q, MaxWSMessage)
		}
		p.Pad = n
	}
	switch q := get("queue"); q {
	case "", WSQueueWait:
	case WSQueueUnbounded:
		p.Queue = WSQueueUnbounded
	default:
		return p, fmt.Errorf("queue %q: want wait or unbounded", q)
	}
	return p, nil
}

// WSMessage is one pushed message as every app writes it, a text message:
// its sequence number and the app's wall clock in unix microseconds when
// it stamped it, with pad bytes of padding:
//
//	{"seq": 3, "t_us": 1712345678123456, "pad": "aaaa"}
//
// After the last one the app closes with status 1000 and the reason
// `{"messages": N}`.
func WSMessage(seq int, tUS int64, pad string) []byte {
	return fmt.Appendf(nil, "{\"seq\": %d, \"t_us\": %d, \"pad\": \"%s\"}", seq, tUS, pad)
}

// WSEndReason is the close reason after the last pushed message.
func WSEndReason(messages int) string { return fmt.Sprintf("{\"messages\": %d}", messages) }

// wsSessions are the WebSockets open on a Server: http.Server's Shutdown
// does not track hijacked connections, so Serve closes these itself.
type wsSessions struct {
	mu     sync.Mutex
	conns  map[*websocket.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// add registers c; false once the server is shutting down.
func (w *wsSessions) add(c *websocket.Conn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	if w.conns == nil {
		w.conns = map[*websocket.Conn]struct{}{}
	}
	w.conns[c] = struct{}{}
	w.wg.Add(1)
	return true
}

func (w *wsSessions) remove(c *websocket.Conn) {
	w.mu.Lock()
	delete(w.conns, c)
	w.mu.Unlock()
	w.wg.Done()
}

// closeAll ends every open WebSocket and waits for their handlers.
func (w *wsSessions) closeAll() {
	w.mu.Lock()
	w.closed = true
	for c := range w.conns {
		c.CloseNow()
	}
	w.mu.Unlock()
	w.wg.Wait()
}

// ws serves GET /ws: a WebSocket that echoes, or pushes stamped messages
// (see ParseWSQuery). The worker is held for the socket's whole life, and
// the request counts as held (as a long-poll). It counts 101 when the
// session ended as asked (the pushes sent and closed, or the client's
// close), 499 when the connection broke first, and 400 or 426 (no
// upgrade asked) before it began.
func (s *Server) ws(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p, err := ParseWSQuery(r.URL.Query().Get)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		s.done("ws", http.StatusBadRequest, start)
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil { // Accept answered: 426 without an upgrade, 400 for a bad handshake
		code := http.StatusBadRequest
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			code = http.StatusUpgradeRequired
		}
		s.done("ws", code, start)
		return
	}
	if !s.wsOpen.add(c) {
		c.CloseNow()
		s.done("ws", statusClientClosed, start)
		return
	}
	defer s.wsOpen.remove(c)
	defer c.CloseNow()
	c.SetReadLimit(MaxWSMessage)
	if p.Mode == WSEcho {
		err = wsEcho(c)
	} else {
		err = wsPush(c, p, s.metrics.wsQueued)
	}
	code := http.StatusSwitchingProtocols
	if err != nil {
		code = statusClientClosed
	}
	s.done("ws", code, start)
}

// wsEcho sends every message back until the client closes: nil for its
// close frame, an error when the connection broke.
func wsEcho(c *websocket.Conn) error {
	ctx := context.Background()
	for {
		typ, b, err := c.Read(ctx)
		if websocket.CloseStatus(err) != -1 {
			return nil
		}
		if err != nil {
			return err
		}
		if err := c.Write(ctx, typ, b); err != nil {
			return err
		}
	}
}

// wsPush sends p.Count stamped messages, one every p.Interval from the
// start, then closes normally. Control frames (pings, the client's close)
// are read beside it.
func wsPush(c *websocket.Conn, p WSParams, queued prometheus.Gauge) error {
	ctx := c.CloseRead(context.Background())
	pad := strings.Repeat("a", p.Pad)
	start := time.Now()
	tick := time.NewTimer(0)
	defer tick.Stop()
	var q *wsQueue
	if p.Queue == WSQueueUnbounded {
		q = newWSQueue(ctx, c, queued)
		defer q.release()
	}
	for seq := 0; seq < p.Count; seq++ {
		tick.Reset(time.Until(start.Add(time.Duration(seq) * p.Interval)))
		select {
		case <-tick.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		m := WSMessage(seq, time.Now().UnixMicro(), pad)
		if q != nil {
			q.push(m)
			continue
		}
		if err := c.Write(ctx, websocket.MessageText, m); err != nil {
			return err
		}
	}
	if q != nil {
		if err := q.drain(); err != nil {
			return err
		}
	}
	return c.Close(websocket.StatusNormalClosure, WSEndReason(p.Count))
}

// wsQueue is an unbounded send queue drained by one writer; gauge
// counts its bytes.
type wsQueue struct {
	gauge    prometheus.Gauge
	mu       sync.Mutex
	pending  [][]byte
	bytes    int           // queued and not written
	released bool          // the session ended: its bytes are off the gauge
	more     chan struct{} // a message was queued, or the last one
	last     bool
	done     chan error // the writer's end: nil when it wrote them all
}

func newWSQueue(ctx context.Context, c *websocket.Conn, gauge prometheus.Gauge) *wsQueue {
	q := &wsQueue{gauge: gauge, more: make(chan struct{}, 1), done: make(chan error, 1)}
	go func() { q.done <- q.write(ctx, c) }()
	return q
}

func (q *wsQueue) push(m []byte) {
	q.mu.Lock()
	q.pending = append(q.pending, m)
	if !q.released {
		q.bytes += len(m)
		q.gauge.Add(float64(len(m)))
	}
	q.mu.Unlock()
	select {
	case q.more <- struct{}{}:
	default:
	}
}

// release takes what is still queued off the gauge once the session
// ended.
func (q *wsQueue) release() {
	q.mu.Lock()
	q.gauge.Sub(float64(q.bytes))
	q.bytes, q.released = 0, true
	q.mu.Unlock()
}

// drain waits for the writer to write every queued message.
func (q *wsQueue) drain() error {
	q.mu.Lock()
	q.last = true
	q.mu.Unlock()
	select {
	case q.more <- struct{}{}:
	default:
	}
	return <-q.done
}

func (q *wsQueue) write(ctx context.Context, c *websocket.Conn) error {
	for {
		q.mu.Lock()
		batch, last := q.pending, q.last
		q.pending = nil
		q.mu.Unlock()
		for i, m := range batch {
			if err := c.Write(ctx, websocket.MessageText, m); err != nil {
				return err
			}
			batch[i] = nil // written: the memory it held can go
			q.mu.Lock()
			if !q.released {
				q.bytes -= len(m)
				q.gauge.Sub(float64(len(m)))
			}
			q.mu.Unlock()
		}
		if last && len(batch) == 0 {
			return nil
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-q.more:
		case <-ctx.Done():
			return errors.Join(errors.New("the client went away with messages queued"), context.Cause(ctx))
		}
	}
}
