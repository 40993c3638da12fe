package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrSendTimeout is the error of a write to the client that made no
// progress for SendTimeout: NGINX's "client timed out" while sending.
var ErrSendTimeout = errors.New("send_timeout: the client took nothing")

// ClientTimeoutLog is what NGINX logs, at info, when send_timeout closes
// a client that took nothing ("client timed out (110: Connection timed
// out) while sending to client, client: ..., request: "GET /large
// HTTP/1.1", ..."), and what logClientTimeout writes.
const ClientTimeoutLog = "client timed out (110: Connection timed out) while sending to client"

// logClientTimeout logs a response send_timeout cut as NGINX does, at info
// (ngx_connection_error with ETIMEDOUT), with the client's address and the
// request line, so that a lab reading either proxy's log finds which
// request it was:
//
//	[info] client timed out (110: Connection timed out) while sending to client, client: 127.0.0.1, server: , request: "GET /large?download=1 HTTP/1.1", host: "127.0.0.1:8080"
func logClientTimeout(r *http.Request) {
	client, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		client = r.RemoteAddr
	}
	log.Printf("[info] %s, client: %s, server: , request: \"%s %s %s\", host: \"%s\"",
		ClientTimeoutLog, client, r.Method, r.RequestURI, r.Proto, r.Host)
}

// sendTimeoutListener applies send_timeout to every accepted connection:
// NGINX's "timeout set only between two successive write operations, not
// for the transmission of the whole response. If the client does not
// receive anything within this time, the connection is closed."
//
// A write deadline of SendTimeout set once per Write would measure from
// the start of the call: a write that handed the kernel a few KiB at once
// and then waited would be cut up to SendTimeout after its last progress
// only by luck of alignment. So each write goes to the socket itself
// (non-blocking, through its RawConn) and the deadline moves forward each
// time the kernel takes bytes: the connection fails exactly SendTimeout
// after the client last made room. Temp-file segments keep sendfile(2),
// with the same rule (ReadFrom).
type sendTimeoutListener struct {
	net.Listener
	timeout time.Duration
}

func (l sendTimeoutListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newSendTimeoutConn(c, l.timeout), nil
}

// withSendTimeout wraps ln so that writes to its connections time out as
// send_timeout says; a timeout of 0 or less leaves ln as it is.
func withSendTimeout(ln net.Listener, timeout time.Duration) net.Listener {
	if timeout <= 0 {
		return ln
	}
	return sendTimeoutListener{ln, timeout}
}

// sendTimeoutConn is an accepted connection (possibly a quietConn) whose
// writes fail with ErrSendTimeout after SendTimeout without progress. Once
// one has, every later write fails too: the connection is done.
type sendTimeoutConn struct {
	net.Conn
	timeout  time.Duration
	tcp      *net.TCPConn // the socket under Conn; nil if it is not one
	raw      syscall.RawConn
	timedOut atomic.Bool
}

func newSendTimeoutConn(c net.Conn, timeout time.Duration) *sendTimeoutConn {
	sc := &sendTimeoutConn{Conn: c, timeout: timeout}
	inner := c
	if qc, ok := c.(*quietConn); ok {
		inner = qc.Conn
	}
	if tcp, ok := inner.(*net.TCPConn); ok {
		if raw, err := tcp.SyscallConn(); err == nil {
			sc.tcp, sc.raw = tcp, raw
		}
	}
	return sc
}

// silenced reports writes that the quietConn under c drops.
func (c *sendTimeoutConn) silenced() bool {
	qc, ok := c.Conn.(*quietConn)
	return ok && qc.silenced.Load()
}

// arm moves the write deadline to SendTimeout from now.
func (c *sendTimeoutConn) arm() {
	c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
}

// fail turns a deadline error into ErrSendTimeout (wrapping the original,
// which is a net.Error with Timeout true) and remembers it.
func (c *sendTimeoutConn) fail(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.timedOut.Store(true)
		return &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: sendTimeoutError{err}}
	}
	return err
}

// sendTimeoutError is ErrSendTimeout that still says Timeout, so callers
// that look for a net.Error see one.
type sendTimeoutError struct{ cause error }

func (e sendTimeoutError) Error() string   { return ErrSendTimeout.Error() }
func (e sendTimeoutError) Timeout() bool   { return true }
func (e sendTimeoutError) Temporary() bool { return false }
func (e sendTimeoutError) Is(target error) bool {
	return target == ErrSendTimeout || errors.Is(e.cause, target)
}

func (c *sendTimeoutConn) Write(b []byte) (int, error) {
	if c.timedOut.Load() {
		return 0, c.fail(os.ErrDeadlineExceeded)
	}
	if c.raw == nil || c.silenced() {
		return c.writeRounds(b)
	}
	c.arm()
	var written int
	var werr error
	err := c.raw.Write(func(fd uintptr) bool {
		for written < len(b) {
			n, err := syscall.Write(int(fd), b[written:])
			if n > 0 {
				written += n
				c.arm()
			}
			switch err {
			case nil:
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until writable, or the deadline
			default:
				werr = err
				return true
			}
		}
		return true
	})
	if werr != nil {
		err = &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", werr)}
	}
	if err != nil {
		return written, c.fail(err)
	}
	return written, nil
}

// writeRounds is Write without the socket: a deadline per inner write,
// renewed while each makes progress.
func (c *sendTimeoutConn) writeRounds(b []byte) (int, error) {
	var written int
	for {
		c.arm()
		n, err := c.Conn.Write(b[written:])
		written += n
		var ne net.Error
		if err != nil && n > 0 && written < len(b) && errors.As(err, &ne) && ne.Timeout() {
			continue
		}
		if err != nil {
			return written, c.fail(err)
		}
		return written, nil
	}
}

// ReadFrom sends an *io.LimitedReader of an *os.File (the spool's temp
// file segments, through net/http's response ReadFrom) with sendfile(2)
// from the file's offset, the deadline moving with each byte the kernel
// takes; anything else is copied through Write.
func (c *sendTimeoutConn) ReadFrom(r io.Reader) (int64, error) {
	lr, ok := r.(*io.LimitedReader)
	var f *os.File
	if ok {
		f, ok = lr.R.(*os.File)
	}
	if !ok || c.raw == nil || c.silenced() || c.timedOut.Load() {
		return io.Copy(writerOnly{c}, r)
	}
	fraw, err := f.SyscallConn()
	if err != nil {
		return io.Copy(writerOnly{c}, r)
	}
	var sent int64
	var serr, werr error
	cerr := fraw.Control(func(in uintptr) {
		c.arm()
		werr = c.raw.Write(func(out uintptr) bool {
			for lr.N > 0 {
				n, err := syscall.Sendfile(int(out), int(in), nil, int(min(lr.N, 1<<30)))
				if n > 0 {
					sent += int64(n)
					lr.N -= int64(n)
					c.arm()
				}
				switch {
				case err == syscall.EINTR:
				case err == syscall.EAGAIN:
					return false
				case err != nil:
					serr = os.NewSyscallError("sendfile", err)
					return true
				case n == 0:
					return true // the file ended early: the caller sees a short count
				}
			}
			return true
		})
	})
	switch {
	case cerr != nil:
		return sent, cerr
	case serr != nil:
		return sent, &net.OpError{Op: "sendfile", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: serr}
	case werr != nil:
		return sent, c.fail(werr)
	}
	return sent, nil
}

// writerOnly hides ReadFrom so io.Copy uses Write.
type writerOnly struct{ io.Writer }

// connContext is the server's ConnContext under send_timeout: the
// quietConn's, seen through the wrapper.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if sc, ok := c.(*sendTimeoutConn); ok {
		c = sc.Conn
	}
	return withQuietConn(ctx, c)
}
