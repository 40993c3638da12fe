package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// SSEClient reads one Server-Sent Events stream of the apps' GET /events
// (appserver.SSEEvent) and measures each tick's delivery delay: the
// client's wall clock when it had read the whole event minus the server's
// timestamp in it. Both clocks are the one machine's, over loopback, so
// the difference is the time the event spent between the app's write and
// the client: in the app's server, the proxy and the sockets.
type SSEClient struct {
	URL     *url.URL // with the stream's query
	Timeout time.Duration
	Header  http.Header
	// AllowRemote lets the client connect to an address that is not
	// loopback; without it the connection is refused just before connect.
	AllowRemote bool
	// MaxEvents bounds the ticks a stream keeps: a stream that sends
	// more fails, so a server that streams for ever cannot grow the
	// client's memory (0 is DefaultSSEMaxEvents).
	MaxEvents int
}

const (
	// DefaultSSEMaxEvents is SSEClient.MaxEvents when 0: seven hours of
	// ticks at 10 per second, 14 MiB of SSEDelivery.
	DefaultSSEMaxEvents = 1 << 18
	// sseMaxLine bounds one line of the stream; a longer one fails it.
	// The apps' lines are under 100 bytes.
	sseMaxLine = 64 << 10
)

// SSEDelivery is one tick as the client received it.
type SSEDelivery struct {
	Seq      int
	Sent     time.Time // the server's timestamp (microseconds)
	Received time.Time
}

// Delay is the event's delivery delay.
func (d SSEDelivery) Delay() time.Duration { return d.Received.Sub(d.Sent) }

// SSEStream is one stream's result.
type SSEStream struct {
	Client    int
	Start     time.Time     // the request was written, after connect
	FirstByte time.Duration // Start until the response's first byte; 0 when none came
	Status    int
	Events    []SSEDelivery
	EndEvent  bool // the end event arrived
	Outcome   string
	Err       error
}

// Run reads one stream as client number client until it ends, the
// Timeout passes or ctx is done.
func (c SSEClient) Run(ctx context.Context, client int) (s SSEStream) {
	s.Client = client
	defer func() { s.Outcome = sseOutcome(s) }()
	if c.URL == nil {
		s.Err = errors.New("sse client: no URL")
		return s
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dialer := net.Dialer{Control: dialGuard(c.AllowRemote)}
	conn, err := dialer.DialContext(ctx, "tcp", hostPort(c.URL))
	if err != nil {
		s.Err = err
		return s
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	head := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: slowlab\r\nAccept: text/event-stream\r\nConnection: close\r\n", c.URL.RequestURI(), c.URL.Host)
	for k, vv := range c.Header {
		for _, v := range vv {
			head += k + ": " + v + "\r\n"
		}
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		s.Err = ctxErr(ctx, err)
		return s
	}
	s.Start = time.Now()
	fb := &firstByteReader{r: conn}
	hl := newHeadLimit(fb)
	resp, err := hl.readResponse(bufio.NewReader(hl), &http.Request{Method: http.MethodGet})
	if !fb.at.IsZero() {
		s.FirstByte = fb.at.Sub(s.Start)
	}
	if err != nil {
		s.Err = ctxErr(ctx, err)
		return s
	}
	defer resp.Body.Close()
	s.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return s
	}
	maxEvents := c.MaxEvents
	if maxEvents <= 0 {
		maxEvents = DefaultSSEMaxEvents
	}
	if err := readEvents(resp.Body, &s, maxEvents); err != nil {
		s.Err = ctxErr(ctx, err)
	}
	return s
}

// firstByteReader notes when its first read returned data.
type firstByteReader struct {
	r  io.Reader
	at time.Time
}

func (f *firstByteReader) Read(b []byte) (int, error) {
	n, err := f.r.Read(b)
	if n > 0 && f.at.IsZero() {
		f.at = time.Now()
	}
	return n, err
}

// sseData is the data of a tick or of the end event.
type sseData struct {
	Seq    *int   `json:"seq"`
	TUS    *int64 `json:"t_us"`
	Events *int   `json:"events"`
}

// readEvents parses the stream line by line, timing each event when its
// blank line was read, until the body's end. Events other than ticks and
// the end are ignored; anything after the end event, a line over
// sseMaxLine or more than maxEvents ticks is an error.
func readEvents(body io.Reader, s *SSEStream, maxEvents int) error {
	br := bufio.NewReaderSize(body, sseMaxLine)
	var event, data string
	for {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return fmt.Errorf("after %d events: a line over %d bytes", len(s.Events), sseMaxLine)
		}
		line := string(b)
		if err != nil {
			if err == io.EOF && line == "" && event == "" && data == "" {
				if !s.EndEvent {
					return fmt.Errorf("%w: the stream ended before its end event, after %d events", ErrIncomplete, len(s.Events))
				}
				return nil
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("after %d events: %w", len(s.Events), err)
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line != "" {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				event = value
			case "data":
				data = value
			}
			continue
		}
		now := time.Now()
		if data == "" {
			event = ""
			continue
		}
		if s.EndEvent {
			return fmt.Errorf("event %q after the end event", clip(data))
		}
		var d sseData
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			return fmt.Errorf("event data %q: %w", clip(data), err)
		}
		switch {
		case event == "end":
			s.EndEvent = true
		case event == "" && d.Seq != nil && d.TUS != nil:
			if len(s.Events) == maxEvents {
				return fmt.Errorf("more than %d events", maxEvents)
			}
			s.Events = append(s.Events, SSEDelivery{Seq: *d.Seq, Sent: time.UnixMicro(*d.TUS), Received: now})
		}
		event, data = "", ""
	}
}

// SSEStream.Outcome values: how a stream ended, as the client saw it.
const (
	SSEComplete  = "complete"  // status 200, the end event, then the end of the body
	SSETruncated = "truncated" // status 200, and the body ended before the end event
	SSEStatus    = "status"    // another status than 200
	SSEReset     = "reset"     // the connection was reset or closed before a response
	SSETimeout   = "timeout"   // the client's timeout, or the run's end, came first
	SSEError     = "error"     // anything else: connect refused, a malformed response
)

// sseOutcome classifies a finished stream.
func sseOutcome(s SSEStream) string {
	switch {
	case s.Status == http.StatusOK && s.Err == nil && s.EndEvent:
		return SSEComplete
	case s.Status != 0 && s.Status != http.StatusOK:
		return SSEStatus
	case errors.Is(s.Err, context.DeadlineExceeded) || errors.Is(s.Err, context.Canceled) || errors.Is(s.Err, os.ErrDeadlineExceeded):
		return SSETimeout
	case s.Status == http.StatusOK && (errors.Is(s.Err, ErrIncomplete) || isReset(s.Err)):
		return SSETruncated
	case isReset(s.Err):
		return SSEReset
	}
	return SSEError
}

// clip is s cut to 100 bytes for an error message.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}
