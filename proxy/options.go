package proxy

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/internal/loopback"
)

// Defaults, as in the NGINX configuration of docs/experiments.md section 1.
const (
	DefaultBufferSize        = 16 << 10 // proxy_buffer_size 16k
	DefaultBuffersCount      = 4        // proxy_buffers 4 16k
	DefaultBuffersSize       = 16 << 10
	DefaultBusyBuffersSize   = 32 << 10 // proxy_busy_buffers_size 32k
	DefaultMaxTempFileSize   = 32 << 20 // proxy_max_temp_file_size 32m
	DefaultTempFileWriteSize = 64 << 10 // proxy_temp_file_write_size 64k
	DefaultUpstreamTimeout   = 60 * time.Second
	DefaultShutdownTimeout   = 5 * time.Second
	// The request side, NGINX's defaults: proxy_request_buffering on,
	// client_body_buffer_size 16k (64-bit platforms), client_header_timeout 60s.
	DefaultClientBodyBufferSize = 16 << 10
	DefaultClientHeaderTimeout  = 60 * time.Second
	// send_timeout's default: a client that takes nothing for this long
	// between two writes is closed.
	DefaultSendTimeout = 60 * time.Second
	// http2_max_concurrent_streams's default.
	DefaultMaxConcurrentStreams = 128
)

// Limits that keep one response's memory bounded; NGINX has none, but a
// typo here should not allocate gigabytes per request.
const (
	MinBufferSize   = 1 << 10
	MaxBufferSize   = 16 << 20
	MaxBuffersCount = 1024
	MaxBuffersTotal = 256 << 20
)

// TempFilePrefix starts the name of every temp file, so the exporter and
// tests can tell the proxy's files from others in TempDir.
const TempFilePrefix = "proxy-temp-"

// Buffers is NGINX's proxy_buffers: Count buffers of Size bytes each, per
// response, used when buffering is on.
type Buffers struct {
	Count int
	Size  int
}

// String writes b in proxy_buffers syntax, e.g. "4 16k".
func (b Buffers) String() string { return strconv.Itoa(b.Count) + " " + bytesize.Format(int64(b.Size)) }

// BuffersSyntax says which values ParseBuffers accepts, for error messages.
const BuffersSyntax = `"COUNT SIZE" as in nginx proxy_buffers, e.g. "4 16k"`

// ParseBuffers reads proxy_buffers syntax: a count and a size ("4 16k").
func ParseBuffers(s string) (Buffers, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return Buffers{}, fmt.Errorf("buffers %q: allowed %s", s, BuffersSyntax)
	}
	count, err := strconv.Atoi(f[0])
	if err != nil {
		return Buffers{}, fmt.Errorf("buffers %q: allowed %s", s, BuffersSyntax)
	}
	size, err := bytesize.Parse(f[1])
	if err != nil || size > MaxBufferSize {
		return Buffers{}, fmt.Errorf("buffers %q: allowed %s with SIZE at most %s", s, BuffersSyntax, bytesize.Format(MaxBufferSize))
	}
	return Buffers{Count: count, Size: int(size)}, nil
}

// Options configures a Proxy. Start from DefaultOptions; sizes are bytes.
type Options struct {
	// Upstream is the app's host:port. Without AllowRemote it must be
	// loopback: an IP in 127.0.0.0/8 or ::1, or a name (localhost
	// included) whose every address is.
	Upstream    string
	AllowRemote bool

	// Buffering is proxy_buffering: true spools the response (memory, then
	// a temp file), false relays it through one BufferSize buffer.
	Buffering bool
	// BufferSize is proxy_buffer_size: reads of the response header are
	// this size; with Buffering off it is the only relay buffer, with
	// Buffering on the first of the memory buffers.
	BufferSize int
	// Buffers is proxy_buffers: the in-memory buffers per response.
	Buffers Buffers
	// BusyBuffersSize is proxy_busy_buffers_size: at most this much of
	// Buffers may be busy sending to the client while the upstream is
	// still being read; the rest keeps reading and spooling.
	BusyBuffersSize int
	// MaxTempFileSize is proxy_max_temp_file_size, per response; 0 keeps
	// everything in memory (no temp file).
	MaxTempFileSize int64
	// TempFileWriteSize is proxy_temp_file_write_size: how much is moved
	// from memory to the temp file at a time.
	TempFileWriteSize int
	// TempDir holds the temp files (proxy_temp_path); New creates it.
	TempDir string

	// RequestBuffering is proxy_request_buffering: true reads a request's
	// whole body before the upstream is contacted, so the app gets it at
	// once however slowly the client sends; false streams it to the
	// upstream as it arrives, and the app waits for the client.
	RequestBuffering bool
	// ClientBodyBufferSize is client_body_buffer_size: a buffered request
	// body up to this size stays in memory; a larger one goes, all of it,
	// to a temp file in ClientBodyTempDir.
	ClientBodyBufferSize int
	// ClientBodyTempDir is client_body_temp_path; empty is
	// DefaultClientBodyTempDir under TempDir, made when a body first
	// spills. Its files
	// start with ClientBodyTempPrefix and are unlinked at once.
	ClientBodyTempDir string
	// ClientHeaderTimeout is client_header_timeout: how long a client
	// connection may take to send a request's header (an idle kept-alive
	// connection waits for IdleTimeout instead).
	ClientHeaderTimeout time.Duration
	// SendTimeout is send_timeout: the longest a write of the response to
	// the client may wait for the client to take anything (between two
	// successive writes, not for the whole response); past it the
	// connection is closed and the response is cut short.
	SendTimeout time.Duration

	// UpstreamHTTP10 is proxy_http_version 1.0 (NGINX's default; the lab
	// runs 1.1, false here): requests go to the upstream as HTTP/1.0, so
	// the apps answer a body of unknown length close-delimited instead of
	// chunked, and a request body of unknown length is read whole first
	// whatever RequestBuffering says (it cannot be sent chunked). A
	// close-delimited body relayed buffered is held, header included,
	// until a buffer fills or the body ends (see relayBuffered).
	UpstreamHTTP10 bool

	// UpstreamTimeout bounds connecting to the upstream and each read from
	// and write to it (proxy_connect_timeout, proxy_read_timeout,
	// proxy_send_timeout).
	UpstreamTimeout time.Duration
	// ShutdownTimeout is how long Serve lets responses in flight finish
	// after its context is done before it aborts them.
	ShutdownTimeout time.Duration

	// HTTP2 serves clients HTTP/2 as well as HTTP/1.1 (NGINX's `listen
	// ... http2`): with prior knowledge on a cleartext listener (h2c),
	// and by ALPN under TLS. The upstream side stays HTTP/1.1, one
	// connection per request, so each stream holds an app worker as a
	// connection does.
	HTTP2 bool
	// TLS, when set, serves clients TLS (ALPN h2 with HTTP2, and
	// http/1.1).
	TLS *tls.Config
	// HTTP3 serves clients HTTP/3 as well (NGINX's `listen ... quic`):
	// QUIC on the UDP port of the TLS listener's address, under TLS
	// (required), at most MaxConcurrentStreams streams a connection.
	// As with HTTP/2, each stream is a request with its own HTTP/1.1
	// upstream connection, and send_timeout applies to each stream.
	HTTP3 bool
	// WebSocket passes WebSocket upgrades on, as NGINX does where its
	// config sets `proxy_set_header Upgrade $http_upgrade` and
	// `Connection "upgrade"` (the lab's does): the upstream's 101 turns
	// the client connection into a tunnel to it, idle for at most
	// UpstreamTimeout from the upstream's side (proxy_read_timeout).
	// Without it Upgrade is dropped as a hop-by-hop header, as NGINX does
	// by default, and the app sees a plain GET.
	WebSocket bool
	// MaxConcurrentStreams is http2_max_concurrent_streams: the streams a
	// client may have open on one HTTP/2 connection (the server's
	// SETTINGS_MAX_CONCURRENT_STREAMS; a stream beyond it is refused).
	MaxConcurrentStreams int
}

// DefaultOptions returns NGINX's settings from docs/experiments.md section 1 with
// buffering on (NGINX's default). Upstream must still be set.
func DefaultOptions() Options {
	return Options{
		Buffering:         true,
		BufferSize:        DefaultBufferSize,
		Buffers:           Buffers{Count: DefaultBuffersCount, Size: DefaultBuffersSize},
		BusyBuffersSize:   DefaultBusyBuffersSize,
		MaxTempFileSize:   DefaultMaxTempFileSize,
		TempFileWriteSize: DefaultTempFileWriteSize,
		TempDir:           filepath.Join(os.TempDir(), "slowlab-proxy"),
		UpstreamTimeout:   DefaultUpstreamTimeout,
		ShutdownTimeout:   DefaultShutdownTimeout,

		RequestBuffering:     true,
		ClientBodyBufferSize: DefaultClientBodyBufferSize,
		ClientHeaderTimeout:  DefaultClientHeaderTimeout,
		SendTimeout:          DefaultSendTimeout,
		MaxConcurrentStreams: DefaultMaxConcurrentStreams,
		WebSocket:            true,
	}
}

// ValidationError is an invalid Options field: its name, the value as
// given and what is allowed instead.
type ValidationError struct {
	Field   string
	Value   string
	Allowed string
}

func (e *ValidationError) Error() string {
	return e.Field + " " + e.Value + ": allowed " + e.Allowed
}

func invalid(field, value, allowed string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Value: value, Allowed: fmt.Sprintf(allowed, args...)}
}

// Validate reports the first invalid field as a *ValidationError. The
// cross-field rules are NGINX's own (it refuses to start on them).
func (o Options) Validate() error {
	if err := validateUpstream(o.Upstream, o.AllowRemote); err != nil {
		return err
	}
	if o.BufferSize < MinBufferSize || o.BufferSize > MaxBufferSize {
		return invalid("BufferSize", bytesize.Format(int64(o.BufferSize)), "%s to %s", bytesize.Format(MinBufferSize), bytesize.Format(MaxBufferSize))
	}
	b := o.Buffers
	switch {
	case b.Count < 2 || b.Count > MaxBuffersCount:
		return invalid("Buffers", strconv.Quote(b.String()), "a count of 2 to %d (nginx needs at least 2)", MaxBuffersCount)
	case b.Size < MinBufferSize || b.Size > MaxBufferSize:
		return invalid("Buffers", strconv.Quote(b.String()), "a size of %s to %s", bytesize.Format(MinBufferSize), bytesize.Format(MaxBufferSize))
	case int64(b.Count)*int64(b.Size) > MaxBuffersTotal:
		return invalid("Buffers", strconv.Quote(b.String()), "at most %s in all", bytesize.Format(MaxBuffersTotal))
	}
	// The larger of proxy_buffer_size and one proxy_buffers buffer is the
	// floor NGINX puts under the busy, temp-file and write sizes.
	floor := int64(max(o.BufferSize, b.Size))
	busyCeil := int64(b.Count-1) * int64(b.Size)
	if bs := int64(o.BusyBuffersSize); bs < floor || bs >= busyCeil {
		return invalid("BusyBuffersSize", bytesize.Format(bs), "at least %s (the larger of BufferSize and one of Buffers) and less than %s (all Buffers but one)", bytesize.Format(floor), bytesize.Format(busyCeil))
	}
	if m := o.MaxTempFileSize; m != 0 && m < floor {
		return invalid("MaxTempFileSize", bytesize.Format(m), "0 (no temp file) or at least %s (the larger of BufferSize and one of Buffers)", bytesize.Format(floor))
	}
	if w := int64(o.TempFileWriteSize); w < floor || w > MaxBuffersTotal {
		return invalid("TempFileWriteSize", bytesize.Format(w), "%s (the larger of BufferSize and one of Buffers) to %s", bytesize.Format(floor), bytesize.Format(MaxBuffersTotal))
	}
	if o.TempDir == "" {
		return invalid("TempDir", `""`, "a directory path")
	}
	if c := o.ClientBodyBufferSize; c < MinBufferSize || c > MaxBuffersTotal {
		return invalid("ClientBodyBufferSize", bytesize.Format(int64(c)), "%s to %s", bytesize.Format(MinBufferSize), bytesize.Format(MaxBuffersTotal))
	}
	if o.ClientHeaderTimeout <= 0 {
		return invalid("ClientHeaderTimeout", o.ClientHeaderTimeout.String(), "a duration above 0, e.g. 60s")
	}
	if o.SendTimeout <= 0 {
		return invalid("SendTimeout", o.SendTimeout.String(), "a duration above 0, e.g. 60s")
	}
	if o.UpstreamTimeout <= 0 {
		return invalid("UpstreamTimeout", o.UpstreamTimeout.String(), "a duration above 0, e.g. 60s")
	}
	if o.ShutdownTimeout < 0 {
		return invalid("ShutdownTimeout", o.ShutdownTimeout.String(), "0 or more, e.g. 5s")
	}
	if o.HTTP3 && o.TLS == nil {
		return invalid("HTTP3", "true", "TLS as well: QUIC is always TLS (give the certificate)")
	}
	if (o.HTTP2 || o.HTTP3) && (o.MaxConcurrentStreams < 1 || o.MaxConcurrentStreams > MaxConcurrentStreams) {
		return invalid("MaxConcurrentStreams", strconv.Itoa(o.MaxConcurrentStreams), "1 to %d (NGINX's default is %d)", MaxConcurrentStreams, DefaultMaxConcurrentStreams)
	}
	return nil
}

// MaxConcurrentStreams bounds Options.MaxConcurrentStreams: each stream
// is a request in flight with its own upstream connection.
const MaxConcurrentStreams = 1 << 16

func validateUpstream(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if p, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
		return invalid("Upstream", strconv.Quote(addr), "host:port with a port 1 to 65535, e.g. 127.0.0.1:8000")
	}
	if allowRemote {
		return nil
	}
	if err := loopback.Check(host); err != nil {
		return invalid("Upstream", strconv.Quote(addr), "a loopback host unless remote upstreams are allowed (%v)", err)
	}
	return nil
}

// IsLoopbackHost reports whether host is a loopback IP (127.0.0.0/8, ::1)
// or a name whose every address is one. Names are resolved, localhost
// too: what it means is up to /etc/hosts and DNS.
func IsLoopbackHost(host string) bool { return loopback.Is(host) }
