package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// quietWindow is how long a test watches a client receive nothing from a
// proxy that holds data it has read; a proxy passing it on takes well
// under a millisecond on loopback.
const quietWindow = 300 * time.Millisecond

// streamApp is an upstream that streams what the test hands it, flushing
// each piece, until the test closes writes (or ends); it records each
// request's protocol.
type streamApp struct {
	*httptest.Server
	writes chan []byte
	protos chan string
	quit   chan struct{}
}

func newStreamApp(t *testing.T, accel string) *streamApp {
	a := &streamApp{writes: make(chan []byte), protos: make(chan string, 4), quit: make(chan struct{})}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.protos <- r.Proto
		w.Header().Set("Content-Type", "text/event-stream")
		if accel != "" {
			w.Header().Set(AccelBufferingHeader, accel)
		}
		rc := http.NewResponseController(w)
		rc.Flush()
		for {
			select {
			case b, ok := <-a.writes:
				if !ok {
					return
				}
				w.Write(b)
				rc.Flush()
			case <-a.quit:
				return
			}
		}
	}))
	t.Cleanup(a.Close)
	t.Cleanup(func() { close(a.quit) }) // first: a failed test leaves a handler waiting
	return a
}

// rawClient reads one response from a raw connection into a buffer the
// test can look at while it arrives.
type rawClient struct {
	mu   sync.Mutex
	got  []byte
	done chan struct{}
}

func rawGet(t *testing.T, addr, request string) *rawClient {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	c := &rawClient{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			c.mu.Lock()
			c.got = append(c.got, buf[:n]...)
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return c
}

func (c *rawClient) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.got)
}

// response waits for the connection to close and parses what came: the
// response and its body (err: the body's error).
func (c *rawClient) response(t *testing.T) (*http.Response, []byte, error) {
	t.Helper()
	<-c.done
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(c.bytes())), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// upstreamRead is how many body bytes the proxy has read from its one
// upstream in flight (-1: none in flight).
func upstreamRead(p *Proxy) int64 {
	b := p.Buffered()
	if len(b) != 1 {
		return -1
	}
	return b[0].UpstreamReadBytes
}

// TestAppAnswersHTTP10CloseDelimited checks the premise: Go's net/http,
// like Gunicorn, answers an HTTP/1.0 request for a stream of unknown
// length without chunking, the body ending when the connection closes.
func TestAppAnswersHTTP10CloseDelimited(t *testing.T) {
	app := newStreamApp(t, "")
	c := rawGet(t, strings.TrimPrefix(app.URL, "http://"), "GET /events HTTP/1.0\r\nHost: app\r\n\r\n")
	app.writes <- []byte("data: 1\n\n")
	close(app.writes)
	resp, body, err := c.response(t)
	if err != nil || string(body) != "data: 1\n\n" {
		t.Fatalf("body %q (%v), want the event", body, err)
	}
	if !closeDelimited(resp) || resp.Close != true {
		t.Errorf("response %s, Transfer-Encoding %v, Content-Length %d, close %v: want a close-delimited body",
			resp.Proto, resp.TransferEncoding, resp.ContentLength, resp.Close)
	}
}

// TestProxyHTTP10HoldsCloseDelimitedStream: with UpstreamHTTP10 the
// proxy asks the upstream in HTTP/1.0, which answers close-delimited, and
// a response relayed buffered (Buffering on, or off with
// X-Accel-Buffering: yes) is held, header included, while its data fits
// a buffer: the client gets nothing of an event the proxy has read. A
// write that fills the first buffer (BufferSize) releases it, the end of
// the body releases the rest. Unbuffered (X-Accel-Buffering: no, or
// Buffering off) or over HTTP/1.1 (chunked), the event arrives at once.
func TestProxyHTTP10HoldsCloseDelimitedStream(t *testing.T) {
	for _, tc := range []struct {
		name              string
		http10, buffering bool
		accel             string
		held              bool
	}{
		{"http10-buffering-on", true, true, "", true},
		{"http10-buffering-off-accel-yes", true, false, "yes", true},
		{"http10-buffering-on-accel-no", true, true, "no", false},
		{"http10-buffering-off", true, false, "", false},
		{"http11-buffering-on", false, true, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := newStreamApp(t, tc.accel)
			o := testOptions(t, app.URL, tc.buffering)
			o.UpstreamHTTP10 = tc.http10
			p, addr := startProxy(t, o)
			c := rawGet(t, addr, "GET /events HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n")
			wantProto := map[bool]string{true: "HTTP/1.0", false: "HTTP/1.1"}[tc.http10]
			if got := <-app.protos; got != wantProto {
				t.Errorf("upstream request %s, want %s", got, wantProto)
			}
			event := []byte("id: 0\ndata: {\"seq\": 0}\n\n")
			app.writes <- event
			var sent bytes.Buffer
			sent.Write(event)
			eventually(t, "the proxy reads the event", func() bool { return upstreamRead(p) == int64(len(event)) })
			if tc.held {
				time.Sleep(quietWindow)
				if got := c.bytes(); len(got) != 0 {
					t.Fatalf("the client got %q while the proxy held a close-delimited event; want nothing, not even the header", got)
				}
				// 20 KiB more fills the 16 KiB first buffer: it goes out
				// with the header while the stream goes on.
				more := bytes.Repeat([]byte("a"), 20<<10)
				app.writes <- more
				sent.Write(more)
				eventually(t, "a full buffer reaches the client", func() bool { return len(c.bytes()) > o.BufferSize })
				if got := c.bytes(); !bytes.HasPrefix(got, []byte("HTTP/1.1 200")) || !bytes.Contains(got, event) {
					t.Fatalf("the client got %q...; want the header and the event", got[:min(len(got), 200)])
				}
			} else {
				eventually(t, "the event reaches the client", func() bool { return bytes.Contains(c.bytes(), event) })
			}
			close(app.writes)
			resp, body, err := c.response(t)
			if err != nil || !bytes.Equal(body, sent.Bytes()) {
				t.Errorf("body of %d bytes (%v), want the %d the app wrote", len(body), err, sent.Len())
			}
			if _, ok := resp.Header[AccelBufferingHeader]; ok {
				t.Errorf("client got %s; NGINX hides it", AccelBufferingHeader)
			}
		})
	}
}

// TestWriteRequest10 checks the HTTP/1.0 request as the upstream reads
// it: the method, target, Host, Connection: close, a body with its
// Content-Length, and no chunking.
func TestWriteRequest10(t *testing.T) {
	in, err := http.NewRequest("POST", "http://client/up?x=1", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	in.Header.Set("X-Slowlab-Request-Id", "r1")
	var b bytes.Buffer
	if err := writeRequest10(&b, outgoingRequest(in, "127.0.0.1:8000")); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "POST /up?x=1 HTTP/1.0\r\n") {
		t.Errorf("request line of %q, want POST /up?x=1 HTTP/1.0", b.String())
	}
	r, err := http.ReadRequest(bufio.NewReader(&b))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	if r.Proto != "HTTP/1.0" || r.Host != "127.0.0.1:8000" || !r.Close || r.ContentLength != 5 || string(body) != "hello" ||
		r.Header.Get("X-Slowlab-Request-Id") != "r1" || len(r.TransferEncoding) != 0 || r.Header.Get("User-Agent") != "" {
		t.Errorf("upstream read %s host %q close %v length %d body %q id %q TE %v UA %q", r.Proto, r.Host, r.Close, r.ContentLength,
			body, r.Header.Get("X-Slowlab-Request-Id"), r.TransferEncoding, r.Header.Get("User-Agent"))
	}
}
