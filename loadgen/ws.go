package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/coder/websocket"
)

// WSDial is how a WebSocket client connects: the URL (ws:// or http://,
// its query the app's /ws parameters), the socket's receive buffer and
// the dial guard, as SlowReader's.
type WSDial struct {
	URL         *url.URL
	RcvBuf      int           // SO_RCVBUF before connect; 0 leaves the kernel's
	Timeout     time.Duration // bounds the connect and the handshake; 0 is none
	AllowRemote bool
}

// WSMaxMessage is the largest message the clients read: a message over
// it ends the session (close 1009).
const WSMaxMessage = 16<<20 + 1024

// dial connects and completes the handshake: the time it took and the
// upgrade's status (101, or what refused it; 0 when no answer came).
func (d WSDial) dial(ctx context.Context) (*websocket.Conn, time.Duration, int, error) {
	if d.URL == nil {
		return nil, 0, 0, errors.New("websocket: no URL")
	}
	u := *d.URL
	switch u.Scheme {
	case "ws", "http":
		u.Scheme = "http"
	case "wss", "https":
		u.Scheme = "https"
	default:
		return nil, 0, 0, fmt.Errorf("websocket URL %s: want ws:// or http:// (wss:// or https:// for TLS)", d.URL)
	}
	dialer := &net.Dialer{Control: chainControl(dialGuard(d.AllowRemote), rcvBufControl(d.RcvBuf))}
	// One transport per session, never kept alive: a failed handshake's
	// connection is closed below, a successful one belongs to the socket.
	tr := &http.Transport{DialContext: dialer.DialContext, Proxy: nil, MaxResponseHeaderBytes: MaxResponseHeaderBytes}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	hctx := ctx
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	start := time.Now()
	c, resp, err := websocket.Dial(hctx, u.String(), &websocket.DialOptions{HTTPClient: hc, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		if resp != nil {
			return nil, 0, resp.StatusCode, fmt.Errorf("websocket handshake: status %d: %w", resp.StatusCode, err)
		}
		return nil, 0, 0, fmt.Errorf("websocket handshake: %w", err)
	}
	c.SetReadLimit(WSMaxMessage)
	return c, time.Since(start), resp.StatusCode, nil
}

// open starts a session's result and connects: a nil connection when it
// failed, the result then ended with why.
func (d WSDial) open(ctx context.Context) (WSResult, *websocket.Conn) {
	r := WSResult{Start: time.Now(), Expected: -1, CloseCode: -1}
	c, hs, status, err := d.dial(ctx)
	r.Handshake, r.Status = hs, status
	if err != nil {
		return r.end(err), nil
	}
	return r, c
}

// WSDelivery is one pushed message as a consumer read it: the app's
// stamp (seq, t_us, see appserver.WSMessage) and when the reader took it.
type WSDelivery struct {
	Seq      int
	SentUS   int64 // the app's wall clock in unix microseconds
	Received time.Time
	Bytes    int
}

// Delay is how long after its stamp the reader took the message.
func (d WSDelivery) Delay() time.Duration { return d.Received.Sub(time.UnixMicro(d.SentUS)) }

// WSResult is one WebSocket session as a client saw it.
type WSResult struct {
	Start     time.Time
	Handshake time.Duration // connect and upgrade
	// Status is the upgrade's answer: 101, or the status that refused it
	// (426 from an app that cannot hold a WebSocket); 0 when none came.
	Status   int
	Duration time.Duration // Start until the session ended
	Messages int           // messages read (a consumer's pushes, a holder's echoes)
	Bytes    int64         // their bytes
	// Expected is the messages the app said it pushed (its close reason),
	// -1 when it did not say.
	Expected int
	// CloseCode is the close status the peer sent (1000 normal), -1 when
	// the session ended without one.
	CloseCode int
	// End is how the session ended: "closed" (the peer's close frame),
	// "held" (a holder closed it after its hold), or the load generator's
	// error reasons (timeout, refused, reset, eof, canceled, other).
	End string
	Err error
	// Pings and Pongs count a holder's pings and the answers they got.
	Pings, Pongs int
}

// WSConsumer reads a pushing /ws, a message at a time, at Rate bytes a
// second (0: as they come): a slow consumer, whose small SO_RCVBUF
// (WSDial.RcvBuf) makes the app's sends wait or queue.
type WSConsumer struct {
	WSDial
	Rate      float64
	OnMessage func(WSDelivery) // each message read, on the session's goroutine
}

// Run holds one session until the app closes it, the connection fails or
// ctx ends.
func (w WSConsumer) Run(ctx context.Context) WSResult {
	r, c := w.open(ctx)
	if c == nil {
		return r
	}
	defer c.CloseNow()
	begun := time.Now()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return r.closed(err)
		}
		now := time.Now()
		r.Messages++
		r.Bytes += int64(len(b))
		if seq, tUS, ok := ParseWSStamp(b); ok && w.OnMessage != nil {
			w.OnMessage(WSDelivery{Seq: seq, SentUS: tUS, Received: now, Bytes: len(b)})
		}
		if w.Rate > 0 {
			due := begun.Add(time.Duration(float64(r.Bytes) / w.Rate * float64(time.Second)))
			if err := sleepCtx(ctx, time.Until(due)); err != nil {
				return r.end(err)
			}
		}
	}
}

// WSHolder holds an echoing /ws open and idle for Hold, sending a ping
// every Ping (0: none), as a browser tab that keeps a socket it does not
// use: a proxy's idle timeout ends it unless something crosses it.
type WSHolder struct {
	WSDial
	Hold, Ping time.Duration
}

// Run holds one session for Hold, then closes it normally ("held"),
// unless the peer or the path ends it first.
func (w WSHolder) Run(ctx context.Context) WSResult {
	r, c := w.open(ctx)
	if c == nil {
		return r
	}
	defer c.CloseNow()
	// CloseRead reads the control frames (pongs, the peer's close) and
	// ends readCtx when the peer closes or the connection breaks.
	readCtx := c.CloseRead(ctx)
	hold := time.NewTimer(w.Hold)
	defer hold.Stop()
	var ping <-chan time.Time
	if w.Ping > 0 {
		t := time.NewTicker(w.Ping)
		defer t.Stop()
		ping = t.C
	}
	for {
		select {
		case <-hold.C:
			r.End, r.Duration = "held", time.Since(r.Start)
			c.Close(websocket.StatusNormalClosure, "held")
			return r
		case <-readCtx.Done():
			return r.closed(c.Close(websocket.StatusNormalClosure, ""))
		case <-ping:
			r.Pings++
			pctx, cancel := context.WithTimeout(readCtx, max(w.Ping, time.Second))
			err := c.Ping(pctx)
			cancel()
			if err == nil {
				r.Pongs++
			}
		}
	}
}

// closed ends r with the error a read or close returned: the peer's close
// frame, or how the connection failed.
func (r WSResult) closed(err error) WSResult {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		r.CloseCode = int(ce.Code)
		r.End, r.Duration = "closed", time.Since(r.Start)
		if n, ok := parseWSEnd(ce.Reason); ok {
			r.Expected = n
		}
		return r
	}
	return r.end(err)
}

func (r WSResult) end(err error) WSResult {
	r.Err, r.Duration = err, time.Since(r.Start)
	r.End = ErrorReason(err)
	return r
}

// ParseWSStamp reads a pushed message's seq and t_us (appserver.WSMessage)
// from its start; false when it does not begin as one.
func ParseWSStamp(b []byte) (seq int, tUS int64, ok bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`{"seq": `))
	if !ok {
		return 0, 0, false
	}
	s, rest, ok := cutNumber(rest)
	if !ok {
		return 0, 0, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`, "t_us": `)); !ok {
		return 0, 0, false
	}
	t, _, ok := cutNumber(rest)
	if !ok || s > int64(^uint(0)>>1) {
		return 0, 0, false
	}
	return int(s), t, true
}

// cutNumber reads the decimal digits at b's start (at most 18, so the
// value fits an int64) and what follows them.
func cutNumber(b []byte) (int64, []byte, bool) {
	i := 0
	for i < len(b) && i < 19 && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == 0 || i > 18 || b[0] == '0' && i > 1 { // as the apps write it: no leading zeros
		return 0, b, false
	}
	n, err := strconv.ParseInt(string(b[:i]), 10, 64)
	return n, b[i:], err == nil
}

// parseWSEnd reads the close reason after the last push:
// {"messages": N}.
func parseWSEnd(reason string) (int, bool) {
	rest, ok := bytes.CutPrefix([]byte(reason), []byte(`{"messages": `))
	if !ok {
		return 0, false
	}
	n, rest, ok := cutNumber(rest)
	if !ok || string(rest) != "}" || n > 1<<31-1 {
		return 0, false
	}
	return int(n), true
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
