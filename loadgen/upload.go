package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Slow uploader defaults (slow-upload): 512 KiB/s in writes of 16 KiB
// through a 16 KiB send buffer (Linux doubles it).
const (
	DefaultUploadRate      = 512 << 10 // bytes per second
	DefaultUploadSndBuf    = 16 << 10
	DefaultUploadWriteSize = 16 << 10
)

// SlowUploader POSTs Size bytes to a URL the way a slow client on a thin
// uplink does: a small send buffer set before connect, writes of at most
// WriteSize, and each write paced from the previous one at Rate by a token
// bucket that holds at most one write (uplink). It paces the writer; it
// does not shape the network. A server that stops reading makes the writes
// block (the send buffer is full), and the upload then goes slower than
// Rate; the time spent blocked is not banked, so an upload that waited in
// an accept queue still sends at Rate once the server reads it, as a real
// slow uplink does.
// The response is read meanwhile: one that comes before the body is done
// (an early error) ends the upload.
type SlowUploader struct {
	URL       *url.URL
	Size      int64
	Rate      float64 // bytes per second
	SndBuf    int     // SO_SNDBUF in bytes before connect (Linux reports double); 0 the kernel's
	WriteSize int     // at most this many bytes per write
	Timeout   time.Duration
	Header    http.Header
	RunID     string
	Metrics   *Metrics
	// AllowRemote lets the uploader connect to an address that is not
	// loopback; without it the connection is refused just before connect.
	AllowRemote bool
	// OnConnect, when set, is called with the client number once its
	// request header was written: the upload is in place.
	OnConnect func(client int)
}

// Upload is one slow upload's result.
type Upload struct {
	Client int
	Start  time.Time // just before the request header was written, after connect
	// Send is Start until the last body byte was handed to the socket, or
	// until sending stopped (an error, an early response).
	Send time.Duration
	// Total is Start until the response was read, or the upload failed.
	Total  time.Duration
	Sent   int64 // body bytes handed to the socket
	Status int   // 0 when no response arrived
	// AppRead is the app's time in body reads (Server-Timing body;dur),
	// AppBytes the body bytes it read (UploadBytesHeader), when reported.
	AppRead    time.Duration
	AppReadOK  bool
	AppBytes   int64
	AppBytesOK bool
	Outcome    string // UploadOK, UploadServerError, UploadStatus, UploadReset, UploadTimeout or UploadError
	Err        error
}

// Validate reports settings that cannot run.
func (s SlowUploader) Validate() error {
	switch {
	case s.Size < 0:
		return fmt.Errorf("upload size %d: must be 0 or more bytes", s.Size)
	case !(s.Rate > 0):
		return fmt.Errorf("upload rate %v: must be more than 0 bytes/s", s.Rate)
	case s.SndBuf < 0:
		return fmt.Errorf("send buffer %d: must be 0 (kernel default) or more bytes", s.SndBuf)
	case s.WriteSize < 1:
		return fmt.Errorf("write size %d: must be at least 1 byte", s.WriteSize)
	}
	return nil
}

// Names of what the apps report about an upload (appserver's
// UploadBytesHeader and UploadTimingMetric; loadgen does not import the
// app server).
const (
	uploadBytesHeader  = "X-Slowlab-Body-Bytes"
	uploadTimingMetric = "body"
)

// Run performs one paced upload as client number client.
func (s SlowUploader) Run(ctx context.Context, client int) (u Upload) {
	u = Upload{Client: client}
	lbl := s.Metrics.with(s.RunID, RoleUpload)
	lbl.start()
	r := Result{Start: time.Now(), NewConn: true}
	defer func() {
		r.Status, r.Bytes, r.Err = u.Status, 0, u.Err
		r.Latency = time.Since(r.Start)
		lbl.observe(&r)
	}()
	defer func() { u.Outcome = uploadOutcome(u) }()
	if s.URL == nil {
		u.Err = errors.New("slow uploader: no URL")
		return u
	}
	if err := s.Validate(); err != nil {
		u.Err = err
		return u
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dialer := net.Dialer{Control: chainControl(dialGuard(s.AllowRemote), sndBufControl(s.SndBuf))}
	t := time.Now()
	conn, err := dialer.DialContext(ctx, "tcp", hostPort(s.URL))
	if err != nil {
		u.Err = err
		return u
	}
	r.Connect = time.Since(t)
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	req, head := s.request()
	// Start is taken before the request's first byte is written, so it is
	// before anything the app times of this request (a goroutine
	// descheduled between the write and time.Now let the app's body read
	// start 3.6 ms before a Start taken after it).
	u.Start = time.Now()
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		u.Err = ctxErr(ctx, err)
		return u
	}
	if s.OnConnect != nil {
		s.OnConnect(client)
	}
	resp := make(chan responseOrErr, 1)
	go func() {
		head := newHeadLimit(conn)
		res, err := head.readResponse(bufio.NewReader(head), req)
		if err == nil {
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		resp <- responseOrErr{res, err}
	}()
	sendErr := s.send(ctx, conn, &u, resp)
	u.Send = time.Since(u.Start)
	var got responseOrErr
	select {
	case got = <-resp:
	case <-ctx.Done():
		conn.SetDeadline(time.Unix(1, 0))
		got = <-resp
	}
	u.Total = time.Since(u.Start)
	s.settle(ctx, &u, got, sendErr)
	return u
}

// request returns the upload's request, for reading its response, and
// its header lines without the blank line that ends them: the header
// alone is written, since Write would send a body, unpaced.
func (s SlowUploader) request() (*http.Request, string) {
	req := &http.Request{Method: http.MethodPost, URL: s.URL, Host: s.URL.Host, Header: s.Header.Clone(), Close: true,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: s.Size}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: slowlab\r\nContent-Length: %d\r\nConnection: close\r\n", s.URL.RequestURI(), s.URL.Host, s.Size)
	for k, vv := range req.Header {
		for _, v := range vv {
			head += k + ": " + v + "\r\n"
		}
	}
	return req, head
}

// settle records in u the response got (status, the app's Server-Timing
// and byte count) and the upload's error: the response's, the send's
// when the app answered 200 anyway, or ErrIncomplete for a 200 before
// every byte was sent.
func (s SlowUploader) settle(ctx context.Context, u *Upload, got responseOrErr, sendErr error) {
	if got.resp != nil {
		u.Status = got.resp.StatusCode
		u.AppRead, u.AppReadOK = ParseServerTiming(got.resp.Header.Get("Server-Timing"), uploadTimingMetric)
		if n, err := strconv.ParseInt(got.resp.Header.Get(uploadBytesHeader), 10, 64); err == nil && n >= 0 {
			u.AppBytes, u.AppBytesOK = n, true
		}
	}
	switch {
	case got.err != nil:
		u.Err = ctxErr(ctx, got.err)
	case sendErr != nil && u.Status == http.StatusOK:
		u.Err = ctxErr(ctx, sendErr)
	case u.Status == http.StatusOK && u.Sent != s.Size:
		u.Err = fmt.Errorf("%w: sent %d of %d bytes before the response", ErrIncomplete, u.Sent, s.Size)
	}
}

type responseOrErr struct {
	resp *http.Response
	err  error
}

// send writes the body WriteSize at a time, each write waiting for its
// bytes in the uplink's bucket. It stops early when a response arrived
// (resp is left for the caller to read again).
func (s SlowUploader) send(ctx context.Context, conn net.Conn, u *Upload, resp chan responseOrErr) error {
	buf := make([]byte, s.WriteSize)
	for i := range buf {
		buf[i] = byte('a' + i%26)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	up := newUplink(s.Rate, s.WriteSize, u.Start)
	for u.Sent < s.Size {
		b := buf[:min(int64(len(buf)), s.Size-u.Sent)]
		if wait := up.wait(len(b), time.Now()); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case got := <-resp:
				resp <- got
				return errors.New("the server answered before the body was sent")
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		up.take(len(b))
		n, err := conn.Write(b)
		u.Sent += int64(n)
		if err != nil {
			return err
		}
		up.idle(time.Now())
	}
	return nil
}

// uplink is a token bucket of bytes that fills at rate and holds at most
// burst bytes (one write): a slow link sends at its rate and never banks
// bandwidth it did not use. Its state is empty, the instant the bucket
// was (or, credited, would have been) empty.
type uplink struct {
	rate  float64 // bytes per second
	burst time.Duration
	empty time.Time
}

// newUplink returns a bucket that is full at start.
func newUplink(rate float64, burst int, start time.Time) *uplink {
	b := bytesTime(burst, rate)
	return &uplink{rate: rate, burst: b, empty: start.Add(-b)}
}

func bytesTime(n int, rate float64) time.Duration {
	return time.Duration(float64(n) / rate * float64(time.Second))
}

// wait is how long after now the bucket holds n bytes.
func (l *uplink) wait(n int, now time.Time) time.Duration {
	return l.empty.Add(bytesTime(n, l.rate)).Sub(now)
}

// take removes n bytes (after wait said they were there).
func (l *uplink) take(n int) {
	l.empty = l.empty.Add(bytesTime(n, l.rate))
}

// idle caps the bucket at burst at now: called when a write returns, so a
// write that blocked (the server not reading) banks at most one write,
// while a timer that fired a little late is credited.
func (l *uplink) idle(now time.Time) {
	if floor := now.Add(-l.burst); l.empty.Before(floor) {
		l.empty = floor
	}
}

// Upload.Outcome values: how an upload ended, as the client saw it.
const (
	UploadOK          = "ok"      // status 200 and the whole body sent
	UploadServerError = "5xx"     // a 5xx status (a proxy's 502 for an app worker killed mid-body)
	UploadStatus      = "status"  // another status than 200 or 5xx
	UploadReset       = "reset"   // the connection was reset or closed before any response
	UploadTimeout     = "timeout" // the client's timeout, or the run's end, came first
	UploadError       = "error"   // anything else: connect refused, a malformed response
)

// uploadOutcome classifies a finished upload.
func uploadOutcome(u Upload) string {
	switch {
	case u.Status >= 500:
		return UploadServerError
	case u.Status == http.StatusOK && u.Err == nil:
		return UploadOK
	case u.Status != 0 && u.Status != http.StatusOK:
		return UploadStatus
	case errors.Is(u.Err, context.DeadlineExceeded) || errors.Is(u.Err, context.Canceled) || errors.Is(u.Err, os.ErrDeadlineExceeded):
		return UploadTimeout
	case isReset(u.Err):
		return UploadReset
	}
	return UploadError
}

// isReset reports a connection the server reset or closed without an
// answer: RST (ECONNRESET), a write after the peer closed (EPIPE), or the
// end of the stream where the response should have been.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// ctxErr prefers the context's error over the deadline error it caused.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

// sndBufControl sets SO_SNDBUF before connect, so the writes block as soon
// as a small amount is unacknowledged or unread by the server.
func sndBufControl(size int) func(network, address string, c syscall.RawConn) error {
	return bufControl(unix.SO_SNDBUF, "SO_SNDBUF", size)
}
