package loadgen

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The protocol's flow-control constants (RFC 9113 section 6.9).
const (
	// H2DefaultWindow is the initial window of every stream and of the
	// connection until a SETTINGS or WINDOW_UPDATE frame changes it.
	H2DefaultWindow = 65535
	// H2MaxWindow is the largest window either may have.
	H2MaxWindow = 1<<31 - 1
)

// H2Options are one HTTP/2 connection's: where it goes, and the
// flow-control windows it advertises, the way an HTTP/2 client is slow:
// not with its TCP receive window (the connection's socket is read as
// fast as frames come) but by granting the server room to send.
type H2Options struct {
	Addr      string // host:port
	Authority string // the requests' :authority; Addr when empty
	// TLS, when set, is TLS with ALPN "h2"; nil is cleartext HTTP/2 with
	// prior knowledge (h2c).
	TLS *tls.Config
	// StreamWindow is every stream's receive window
	// (SETTINGS_INITIAL_WINDOW_SIZE, H2DefaultWindow by the protocol's
	// default; 0 lets the server send no body byte until a stream's reader
	// grants some). ConnWindow is the connection's, shared by its streams:
	// at least H2DefaultWindow, the protocol's initial one.
	StreamWindow, ConnWindow uint32
	RcvBuf                   int           // SO_RCVBUF before connect; 0 leaves the kernel's
	Timeout                  time.Duration // bounds the connect and each stream; 0 is none
	AllowRemote              bool          // as SlowReader's
}

// H2Result is one stream's request and response as its reader consumed
// it.
type H2Result struct {
	StreamID  uint32
	Path      string
	Start     time.Time     // the HEADERS frame was written
	FirstByte time.Duration // Start until the response's HEADERS
	// Total is Start until the reader consumed the last body byte (paced
	// readers: the last grant).
	Total    time.Duration
	Status   int
	Bytes    int64 // body bytes consumed
	Complete bool  // status 200, the stream ended and every Content-Length byte came
	Err      error
	// Stalled and Resumed bound a stalled reader's stall (zero when it
	// never got there), as Download's.
	Stalled, Resumed time.Time
}

// H2Read is how a stream's reader consumes its body: Rate bytes a second
// from the response's HEADERS (0: as the bytes come), and, when Stall is
// above 0, nothing for Stall once StallAfter bytes were consumed, then the
// rest as it comes.
type H2Read struct {
	Rate       float64
	Stall      time.Duration
	StallAfter int64
	// Until, when set, is when the reader gives up on a stream still open:
	// it resets it (RST_STREAM CANCEL) and the result's Err is ErrH2Cut.
	Until time.Time
}

// H2Conn is one HTTP/2 connection whose streams are read as their H2Read
// says. Its methods are safe to call from several goroutines. It opens
// every stream it is asked for: it does not queue streams beyond the
// server's SETTINGS_MAX_CONCURRENT_STREAMS as a browser would, so the
// server refuses those (RST_STREAM) and their results say so. After the
// server's GOAWAY, new streams fail at once.
type H2Conn struct {
	opts      H2Options
	authority string
	scheme    string
	conn      net.Conn

	wmu  sync.Mutex // the framer's writes and the header encoder
	fr   *http2.Framer
	hbuf bytes.Buffer
	henc *hpack.Encoder

	mu      sync.Mutex
	streams map[uint32]*h2stream
	nextID  uint32
	err     error // why the connection ended
	done    chan struct{}
}

// DialH2 connects, sends the client preface with opts' windows and starts
// reading the connection. Close ends it.
func DialH2(ctx context.Context, o H2Options) (*H2Conn, error) {
	if o.ConnWindow < H2DefaultWindow || o.ConnWindow > H2MaxWindow || o.StreamWindow > H2MaxWindow {
		return nil, fmt.Errorf("http/2 windows: stream %d, connection %d: want the stream's at most %d and the connection's from %d to %d",
			o.StreamWindow, o.ConnWindow, H2MaxWindow, H2DefaultWindow, H2MaxWindow)
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	d := net.Dialer{Control: chainControl(dialGuard(o.AllowRemote), rcvBufControl(o.RcvBuf))}
	conn, err := d.DialContext(ctx, "tcp", o.Addr)
	if err != nil {
		return nil, err
	}
	c := &H2Conn{opts: o, authority: o.Authority, scheme: "http", conn: conn, streams: map[uint32]*h2stream{}, nextID: 1, done: make(chan struct{})}
	if c.authority == "" {
		c.authority = o.Addr
	}
	if o.TLS != nil {
		cfg := o.TLS.Clone()
		cfg.NextProtos = []string{http2.NextProtoTLS}
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(o.Addr)
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			if strings.Contains(err.Error(), "no application protocol") {
				return nil, fmt.Errorf("tls: %w: the server does not speak HTTP/2 over TLS", err)
			}
			return nil, fmt.Errorf("tls: %w", err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != http2.NextProtoTLS {
			tc.Close()
			return nil, fmt.Errorf("the server negotiated %q, not h2: it does not speak HTTP/2 over TLS", p)
		}
		c.conn, c.scheme = tc, "https"
	}
	c.fr = http2.NewFramer(c.conn, c.conn)
	c.fr.ReadMetaHeaders, c.fr.MaxHeaderListSize = hpack.NewDecoder(4096, nil), MaxResponseHeaderBytes
	c.henc = hpack.NewEncoder(&c.hbuf)
	if err := c.preface(); err != nil {
		c.conn.Close()
		return nil, fmt.Errorf("http/2 preface: %w", err)
	}
	go c.readLoop()
	go c.paceLoop()
	return c, nil
}

// preface writes the client preface, SETTINGS with the stream window, and
// the connection's window beyond the initial one.
func (c *H2Conn) preface() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.conn.Write([]byte(http2.ClientPreface)); err != nil {
		return err
	}
	if err := c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: c.opts.StreamWindow},
		http2.Setting{ID: http2.SettingEnablePush, Val: 0}); err != nil {
		return err
	}
	if extra := c.opts.ConnWindow - H2DefaultWindow; extra > 0 {
		return c.fr.WriteWindowUpdate(0, extra)
	}
	return nil
}

// Get opens a stream that GETs path and reads it as r says; its result
// comes on the channel once it ended (one value, then closed).
func (c *H2Conn) Get(path string, r H2Read) <-chan H2Result { return c.GetHeader(path, nil, r) }

// GetHeader is Get with request header fields h as well (names sent in
// lower case, as HTTP/2 requires).
func (c *H2Conn) GetHeader(path string, h http.Header, r H2Read) <-chan H2Result {
	out := make(chan H2Result, 1)
	c.mu.Lock()
	err := c.err
	if err == nil && r.Rate > 0 && c.opts.StreamWindow == 0 {
		err = errors.New("a paced reader needs a stream window above 0 (a zero window is for a reader that stalls)")
	}
	if err != nil {
		c.mu.Unlock()
		out <- H2Result{Path: path, Start: time.Now(), Err: err}
		close(out)
		return out
	}
	id := c.nextID
	c.nextID += 2
	s := &h2stream{id: id, path: path, read: r, window: c.opts.StreamWindow, out: out}
	c.streams[id] = s
	// Written under mu, so stream IDs reach the server in order.
	c.wmu.Lock()
	c.hbuf.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", c.scheme}, {":authority", c.authority}, {":path", path}, {"user-agent", "slowlab"}} {
		c.henc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	for name, vs := range h {
		for _, v := range vs {
			c.henc.WriteField(hpack.HeaderField{Name: strings.ToLower(name), Value: v})
		}
	}
	s.start = time.Now()
	err = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndStream: true, EndHeaders: true})
	if g := s.opened(); err == nil && s.immediate() && g != nil {
		err = c.fr.WriteWindowUpdate(id, g[0].incr)
	}
	c.wmu.Unlock()
	if err != nil {
		c.finishLocked(s, fmt.Errorf("write headers: %w", err))
	}
	c.mu.Unlock()
	return out
}

// Close ends the connection; streams still open end with an error.
func (c *H2Conn) Close() error {
	c.wmu.Lock()
	c.fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	c.wmu.Unlock()
	err := c.conn.Close()
	<-c.done
	return err
}

// Err is why the connection ended (nil while it is open).
func (c *H2Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// readLoop reads frames until the connection ends, then ends every open
// stream with the reason.
func (c *H2Conn) readLoop() {
	var err error
	for err == nil {
		var f http2.Frame
		if f, err = c.fr.ReadFrame(); err == nil {
			err = c.handle(f)
		}
	}
	c.mu.Lock()
	if c.err == nil {
		c.err = fmt.Errorf("http/2 connection: %w", err)
	}
	for _, s := range c.streams {
		c.finishLocked(s, c.err)
	}
	c.mu.Unlock()
	close(c.done)
}

// handle acts on one frame: a stream's response headers and body, and the
// connection's SETTINGS, PING and GOAWAY.
func (c *H2Conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			return c.write(func() error { return c.fr.WriteSettingsAck() })
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			return c.write(func() error { return c.fr.WritePing(true, f.Data) })
		}
	case *http2.GoAwayFrame:
		c.mu.Lock()
		if c.err == nil {
			c.err = fmt.Errorf("the server sent GOAWAY (%v): no new streams", f.ErrCode)
		}
		for id, s := range c.streams {
			if id > f.LastStreamID {
				c.finishLocked(s, fmt.Errorf("the server sent GOAWAY (%v) before the stream began", f.ErrCode))
			}
		}
		c.mu.Unlock()
	case *http2.RSTStreamFrame:
		c.streamDo(f.StreamID, func(s *h2stream) { c.finishLocked(s, H2ResetError{Code: f.ErrCode}) })
	case *http2.MetaHeadersFrame:
		c.streamDo(f.StreamID, func(s *h2stream) { s.headers(f, time.Now()) })
	case *http2.DataFrame:
		var grant []h2grant
		open := c.streamDo(f.StreamID, func(s *h2stream) {
			grant = s.data(int64(f.Header().Length), int64(len(f.Data())), f.StreamEnded(), time.Now())
		})
		if !open {
			// A stream already ended: its bytes still count against the
			// connection's window.
			grant = []h2grant{{0, f.Header().Length}}
		}
		return c.grant(grant)
	}
	return nil
}

// streamDo runs fn on the open stream id under mu, then finishes the
// stream if fn ended it; false when no such stream is open.
func (c *H2Conn) streamDo(id uint32, fn func(*h2stream)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.streams[id]
	if ok {
		fn(s)
		if s.finished() {
			c.finishLocked(s, nil)
		}
	}
	return ok
}

func (c *H2Conn) write(fn func() error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return fn()
}

// h2grant is a WINDOW_UPDATE to send: stream 0 is the connection.
type h2grant struct{ stream, incr uint32 }

func (c *H2Conn) grant(gs []h2grant) error {
	if len(gs) == 0 {
		return nil
	}
	return c.write(func() error {
		for _, g := range gs {
			if g.incr == 0 {
				continue
			}
			if err := c.fr.WriteWindowUpdate(g.stream, g.incr); err != nil {
				return err
			}
		}
		return nil
	})
}

// finishLocked ends s with err (nil: as its response ended) and hands its
// result over; mu is held.
func (c *H2Conn) finishLocked(s *h2stream, err error) {
	delete(c.streams, s.id)
	s.finish(err, time.Now())
}

// h2PaceTick is how often paced streams are granted what they consumed.
const h2PaceTick = 5 * time.Millisecond

// paceLoop grants each paced stream, every h2PaceTick, what its reader
// consumed since, and times out streams past Timeout.
func (c *H2Conn) paceLoop() {
	t := time.NewTicker(h2PaceTick)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case now := <-t.C:
			var grants []h2grant
			c.mu.Lock()
			for _, s := range c.streams {
				if c.opts.Timeout > 0 && now.Sub(s.start) > c.opts.Timeout {
					c.write(func() error { return c.fr.WriteRSTStream(s.id, http2.ErrCodeCancel) })
					c.finishLocked(s, fmt.Errorf("stream timed out after %v: %w", c.opts.Timeout, context.DeadlineExceeded))
					continue
				}
				if !s.read.Until.IsZero() && !now.Before(s.read.Until) {
					c.write(func() error { return c.fr.WriteRSTStream(s.id, http2.ErrCodeCancel) })
					c.finishLocked(s, ErrH2Cut)
					continue
				}
				grants = append(grants, s.consume(now)...)
				if s.finished() {
					c.finishLocked(s, nil)
				}
			}
			c.mu.Unlock()
			if err := c.grant(grants); err != nil {
				c.conn.Close() // readLoop ends the streams
			}
		}
	}
}

// errH2Status is a response whose :status is not a number.
var errH2Status = errors.New("response :status is not a status code")

func parseH2Status(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 100 || n > 999 {
		return 0, fmt.Errorf("%w: %q", errH2Status, v)
	}
	return n, nil
}
