package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/proxy"
)

func init() {
	register(command{name: "proxy", summary: "run the embedded reverse proxy (NGINX proxy_buffering on|off stand-in)", run: runProxy})
}

func runProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("proxy", "--buffering on|off --upstream HOST:PORT [--listen ADDR] [--admin ADDR] [flags]", stdout)
	f := defineProxyFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o, err := f.options()
	if err != nil {
		return err
	}
	if err := parsedOnly(ctx); err != nil {
		return err
	}
	p, err := proxy.New(o)
	if err != nil {
		return fmt.Errorf("--temp-dir %q: %w", o.TempDir, err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", f.listen, err)
	}
	admin, err := net.Listen("tcp", f.admin)
	if err != nil {
		ln.Close()
		return fmt.Errorf("--admin %q: %w", f.admin, err)
	}
	fmt.Fprintf(stderr, "slowlab proxy: buffering=%s upstream=%s buffer-size=%s buffers=%q busy-buffers-size=%s max-temp-file-size=%s temp-file-write-size=%s temp-dir=%s request-buffering=%s client-body-buffer-size=%s client-header-timeout=%s http-version=%s\n",
		f.buffering, o.Upstream, bytesize.Format(int64(o.BufferSize)), o.Buffers, bytesize.Format(int64(o.BusyBuffersSize)),
		bytesize.Format(o.MaxTempFileSize), bytesize.Format(int64(o.TempFileWriteSize)), o.TempDir,
		f.requestBuffering, bytesize.Format(int64(o.ClientBodyBufferSize)), o.ClientHeaderTimeout, f.httpVersion)
	// The lab reads this line to learn the ports; print nothing else on stdout.
	fmt.Fprintln(stdout, child.ReadyLine(child.Field{Key: child.KeyListen, Value: ln.Addr().String()},
		child.Field{Key: child.KeyAdmin, Value: admin.Addr().String()}))
	return p.Serve(ctx, ln, admin)
}

// proxyFlags holds the proxy flags as typed; options checks and converts
// them, so every bad value gets one message naming flag, value and what is
// allowed.
type proxyFlags struct {
	buffering, upstream, listen, admin, tempDir          string
	bufferSize, buffers, busyBuffers, maxTemp, tempWrite string
	upstreamTimeout, shutdownTimeout                     string
	requestBuffering, bodyBuffer, bodyTempDir            string
	headerTimeout, sendTimeout, httpVersion              string
	tlsCert, tlsKey                                      string
	allowRemote, http2, http3, websocket                 bool
	maxStreams                                           int
}

func defineProxyFlags(fs *flag.FlagSet) *proxyFlags {
	d := proxy.DefaultOptions()
	f := &proxyFlags{}
	size := func(n int64) string { return bytesize.Format(n) }
	fs.StringVar(&f.buffering, string(child.ProxyBuffering), "", "proxy_buffering, required: on (read the upstream at once into memory and a temp file, release it early) or off (relay through one --buffer-size buffer at the client's pace)")
	fs.StringVar(&f.upstream, string(child.ProxyUpstream), "", "the app's HOST:PORT, required; must be loopback (127.0.0.0/8, ::1, localhost) unless --allow-remote")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow a non-loopback --upstream")
	fs.StringVar(&f.listen, string(child.ProxyListen), "127.0.0.1:0", "client-facing HOST:PORT (port 0 picks a free port; see the ready line)")
	fs.StringVar(&f.admin, string(child.ProxyAdmin), "127.0.0.1:0", "HOST:PORT for /metrics, /healthz and /buffers (port 0 picks a free port)")
	fs.StringVar(&f.tempDir, string(child.ProxyTempDir), d.TempDir, "proxy_temp_path: directory for temp files, created if missing; files are unlinked at once")
	fs.StringVar(&f.bufferSize, "buffer-size", size(int64(d.BufferSize)), "proxy_buffer_size in bytes (k, m, g = KiB, MiB, GiB): buffer for the response header and the start of the body; the only buffer with --buffering off")
	fs.StringVar(&f.buffers, "buffers", d.Buffers.String(), `proxy_buffers "COUNT SIZE": in-memory buffers per response with --buffering on`)
	fs.StringVar(&f.busyBuffers, "busy-buffers-size", size(int64(d.BusyBuffersSize)), "proxy_busy_buffers_size in bytes: at most this much memory is busy sending to the client while the upstream is read")
	fs.StringVar(&f.maxTemp, string(child.ProxyMaxTempFileSize), size(d.MaxTempFileSize), "proxy_max_temp_file_size in bytes, per response; 0 disables temp files (reading then waits for the client)")
	fs.StringVar(&f.tempWrite, "temp-file-write-size", size(int64(d.TempFileWriteSize)), "proxy_temp_file_write_size in bytes: how much is moved from memory to the temp file at a time")
	fs.StringVar(&f.upstreamTimeout, string(child.ProxyUpstreamTimeout), d.UpstreamTimeout.String(), "timeout for connecting to the upstream and for each read and write on it (a Go duration)")
	fs.StringVar(&f.requestBuffering, string(child.ProxyRequestBuffering), "on", "proxy_request_buffering: on (read a request's whole body, memory then a temp file, before contacting the upstream) or off (stream it to the upstream as it arrives)")
	fs.StringVar(&f.bodyBuffer, string(child.ProxyClientBodyBufferSize), size(int64(d.ClientBodyBufferSize)), "client_body_buffer_size in bytes: a buffered request body up to this size stays in memory, a larger one goes to a temp file")
	fs.StringVar(&f.bodyTempDir, string(child.ProxyClientBodyTempDir), "", "client_body_temp_path: directory for request body temp files, created if missing (default: "+proxy.DefaultClientBodyTempDir+" under --temp-dir)")
	fs.StringVar(&f.headerTimeout, string(child.ProxyClientHeaderTimeout), d.ClientHeaderTimeout.String(), "client_header_timeout: how long a client may take to send a request header (a Go duration)")
	fs.StringVar(&f.sendTimeout, string(child.ProxySendTimeout), d.SendTimeout.String(), "send_timeout: how long a write to the client may wait for it to take anything before the connection is closed (a Go duration)")
	fs.StringVar(&f.httpVersion, string(child.ProxyHTTPVersion), "1.1", "proxy_http_version: the HTTP version of requests to the upstream, 1.1 (the lab's) or 1.0 (NGINX's default: the app answers a stream close-delimited, which a buffered response holds until a buffer fills or the body ends)")
	fs.BoolVar(&f.http2, string(child.ProxyHTTP2), false, "serve clients HTTP/2 beside HTTP/1.1, as NGINX's listen ... http2: with prior knowledge (h2c), or by ALPN h2 with --tls-cert; each stream gets its own upstream connection")
	fs.BoolVar(&f.http3, string(child.ProxyHTTP3), false, "serve clients HTTP/3 as well, as NGINX's listen ... quic: QUIC on the UDP port of the --listen address, with --tls-cert (required); each stream gets its own upstream connection")
	fs.StringVar(&f.tlsCert, string(child.ProxyTLSCert), "", "ssl_certificate: a PEM certificate (chain) file; with --tls-key the listener serves TLS")
	fs.StringVar(&f.tlsKey, string(child.ProxyTLSKey), "", "ssl_certificate_key: the PEM key file of --tls-cert")
	fs.BoolVar(&f.websocket, string(child.ProxyWebSocket), d.WebSocket, "pass WebSocket upgrades on, as NGINX does with proxy_set_header Upgrade $http_upgrade and Connection \"upgrade\" (the lab's config): an upgraded connection is a tunnel closed after --upstream-timeout without a byte from the upstream (proxy_read_timeout); false drops Upgrade, as NGINX's defaults do")
	fs.IntVar(&f.maxStreams, string(child.ProxyMaxConcurrentStreams), d.MaxConcurrentStreams, "http2_max_concurrent_streams: the streams a client may have open on one HTTP/2 connection")
	fs.StringVar(&f.shutdownTimeout, "shutdown-timeout", d.ShutdownTimeout.String(), "on SIGINT/SIGTERM, how long responses in flight may finish before they are cut (a Go duration)")
	return f
}

// proxyFlagOf names the flag that sets each proxy.Options field.
var proxyFlagOf = map[string]string{
	"Upstream": "upstream", "BufferSize": "buffer-size", "Buffers": "buffers",
	"BusyBuffersSize": "busy-buffers-size", "MaxTempFileSize": "max-temp-file-size",
	"TempFileWriteSize": "temp-file-write-size", "TempDir": "temp-dir",
	"UpstreamTimeout": "upstream-timeout", "ShutdownTimeout": "shutdown-timeout",
	"ClientBodyBufferSize": "client-body-buffer-size", "ClientHeaderTimeout": "client-header-timeout",
	"SendTimeout": "send-timeout", "MaxConcurrentStreams": "http2-max-concurrent-streams",
}

func (f *proxyFlags) options() (proxy.Options, error) {
	o := proxy.DefaultOptions()
	switch f.buffering {
	case "on":
		o.Buffering = true
	case "off":
		o.Buffering = false
	default:
		return o, usagef("--buffering %q: allowed on, off", f.buffering)
	}
	if host, _, err := net.SplitHostPort(f.upstream); err == nil && !f.allowRemote && !proxy.IsLoopbackHost(host) {
		return o, usagef("--upstream %q: allowed a loopback HOST:PORT (127.0.0.0/8, ::1, localhost) unless --allow-remote", f.upstream)
	}
	switch f.requestBuffering {
	case "on":
		o.RequestBuffering = true
	case "off":
		o.RequestBuffering = false
	default:
		return o, usagef("--%s %q: allowed on, off", child.ProxyRequestBuffering, f.requestBuffering)
	}
	switch f.httpVersion {
	case "1.1":
		o.UpstreamHTTP10 = false
	case "1.0":
		o.UpstreamHTTP10 = true
	default:
		return o, usagef("--%s %q: allowed 1.0, 1.1", child.ProxyHTTPVersion, f.httpVersion)
	}
	o.Upstream, o.AllowRemote, o.TempDir, o.ClientBodyTempDir = f.upstream, f.allowRemote, f.tempDir, f.bodyTempDir
	o.HTTP2, o.MaxConcurrentStreams, o.WebSocket = f.http2, f.maxStreams, f.websocket
	for _, a := range []struct {
		name, value string
	}{{string(child.ProxyListen), f.listen}, {string(child.ProxyAdmin), f.admin}} {
		if _, port, err := net.SplitHostPort(a.value); err != nil || !validPort(port) {
			return o, usagef("--%s %q: allowed HOST:PORT, e.g. 127.0.0.1:8080 (port 0 picks a free port)", a.name, a.value)
		}
	}
	var err error
	if o.Buffers, err = proxy.ParseBuffers(f.buffers); err != nil {
		return o, usagef("--buffers %q: allowed %s", f.buffers, proxy.BuffersSyntax)
	}
	ints := []struct {
		name, value string
		dst         *int
	}{
		{"buffer-size", f.bufferSize, &o.BufferSize},
		{"busy-buffers-size", f.busyBuffers, &o.BusyBuffersSize},
		{"temp-file-write-size", f.tempWrite, &o.TempFileWriteSize},
		{string(child.ProxyClientBodyBufferSize), f.bodyBuffer, &o.ClientBodyBufferSize},
	}
	for _, s := range ints {
		n, err := bytesize.Parse(s.value)
		if err != nil || n > proxy.MaxBuffersTotal {
			return o, usagef("--%s %q: allowed %s, at most %s", s.name, s.value, bytesize.Syntax, bytesize.Format(proxy.MaxBuffersTotal))
		}
		*s.dst = int(n)
	}
	if o.MaxTempFileSize, err = bytesize.Parse(f.maxTemp); err != nil {
		return o, usagef("--max-temp-file-size %q: allowed %s", f.maxTemp, bytesize.Syntax)
	}
	for _, d := range []struct {
		name, value string
		dst         *time.Duration
	}{{"upstream-timeout", f.upstreamTimeout, &o.UpstreamTimeout}, {"shutdown-timeout", f.shutdownTimeout, &o.ShutdownTimeout},
		{string(child.ProxyClientHeaderTimeout), f.headerTimeout, &o.ClientHeaderTimeout},
		{string(child.ProxySendTimeout), f.sendTimeout, &o.SendTimeout}} {
		if *d.dst, err = time.ParseDuration(d.value); err != nil {
			return o, usagef("--%s %q: allowed a Go duration, e.g. 60s or 500ms", d.name, d.value)
		}
	}
	if err := o.Validate(); err != nil {
		var ve *proxy.ValidationError
		if errors.As(err, &ve) {
			name := proxyFlagOf[ve.Field]
			return o, usagef("--%s %q: allowed %s", name, f.value(name), ve.Allowed)
		}
		return o, usagef("%v", err)
	}
	return o, f.loadTLS(&o)
}

// value is the text given for the flag name, for error messages.
func (f *proxyFlags) value(name string) string {
	return map[string]string{
		"upstream": f.upstream, "buffer-size": f.bufferSize, "buffers": f.buffers,
		"busy-buffers-size": f.busyBuffers, "max-temp-file-size": f.maxTemp,
		"temp-file-write-size": f.tempWrite, "temp-dir": f.tempDir,
		"upstream-timeout": f.upstreamTimeout, "shutdown-timeout": f.shutdownTimeout,
		"client-body-buffer-size": f.bodyBuffer, "client-header-timeout": f.headerTimeout,
		"send-timeout": f.sendTimeout,
	}[name]
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 65535
}

// loadTLS sets o.TLS from --tls-cert and --tls-key: both or neither;
// and o.HTTP3 from --http3, which needs them.
func (f *proxyFlags) loadTLS(o *proxy.Options) error {
	o.HTTP3 = f.http3
	switch {
	case f.tlsCert == "" && f.tlsKey == "" && f.http3:
		return usagef("--%s: allowed only with --%s and --%s (QUIC is always TLS)", child.ProxyHTTP3, child.ProxyTLSCert, child.ProxyTLSKey)
	case f.tlsCert == "" && f.tlsKey == "":
		return nil
	case f.tlsCert == "" || f.tlsKey == "":
		return usagef("--%s %q, --%s %q: give both files or neither", child.ProxyTLSCert, f.tlsCert, child.ProxyTLSKey, f.tlsKey)
	}
	pair, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
	if err != nil {
		return usagef("--%s %q, --%s %q: %v", child.ProxyTLSCert, f.tlsCert, child.ProxyTLSKey, f.tlsKey, err)
	}
	o.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	return nil
}
