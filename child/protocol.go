package child

import (
	"os"
	"strings"
)

// Subcommands of the slowlab binary that the lab starts as children.
const (
	CmdTarget   = "target"
	CmdProxy    = "proxy"
	CmdExporter = "exporter"
)

// Flag is a flag name of a child subcommand, without dashes.
type Flag string

// Arg is the flag with its value as command-line arguments.
func (f Flag) Arg(value string) []string { return []string{"--" + string(f), value} }

// Set is the flag of a boolean that is on.
func (f Flag) Set() string { return "--" + string(f) }

// Flags of `slowlab target`.
const (
	TargetModel          Flag = "model"
	TargetWorkers        Flag = "workers"
	TargetThreads        Flag = "threads"
	TargetLargeSize      Flag = "large-size"
	TargetListen         Flag = "listen"
	TargetAdmin          Flag = "admin"
	TargetAcceptWhenFree Flag = "accept-when-free"
	TargetWorkerTimeout  Flag = "worker-timeout"
)

// Flags of `slowlab proxy`.
const (
	ProxyBuffering Flag = "buffering"
	ProxyUpstream  Flag = "upstream"
	ProxyListen    Flag = "listen"
	ProxyAdmin     Flag = "admin"
	ProxyTempDir   Flag = "temp-dir"
	// The request side: proxy_request_buffering, client_body_buffer_size,
	// client_body_temp_path, client_header_timeout.
	ProxyRequestBuffering     Flag = "request-buffering"
	ProxyClientBodyBufferSize Flag = "client-body-buffer-size"
	ProxyClientBodyTempDir    Flag = "client-body-temp-dir"
	ProxyClientHeaderTimeout  Flag = "client-header-timeout"
	// The response side: proxy_max_temp_file_size and send_timeout.
	ProxyMaxTempFileSize Flag = "max-temp-file-size"
	ProxySendTimeout     Flag = "send-timeout"
	// ProxyHTTPVersion is proxy_http_version: 1.0 or 1.1.
	ProxyHTTPVersion Flag = "http-version"
	// ProxyHTTP2 serves clients HTTP/2 with prior knowledge beside
	// HTTP/1.1 (NGINX's listen ... http2).
	ProxyHTTP2 Flag = "http2"
	// ProxyHTTP3 serves clients HTTP/3 (QUIC) on the UDP port of the TLS
	// listener (NGINX's listen ... quic).
	ProxyHTTP3 Flag = "http3"
	// ProxyUpstreamTimeout bounds connecting to the upstream and each read
	// and write on it: proxy_connect_timeout, proxy_read_timeout and
	// proxy_send_timeout in one.
	ProxyUpstreamTimeout Flag = "upstream-timeout"
	// ProxyWebSocket passes WebSocket upgrades on (true by default).
	ProxyWebSocket Flag = "websocket"
	// ProxyMaxConcurrentStreams is http2_max_concurrent_streams.
	ProxyMaxConcurrentStreams Flag = "http2-max-concurrent-streams"
	// ProxyTLSCert and ProxyTLSKey are ssl_certificate and
	// ssl_certificate_key: PEM files; given both, the proxy serves TLS.
	ProxyTLSCert Flag = "tls-cert"
	ProxyTLSKey  Flag = "tls-key"
)

// Flags of `slowlab exporter`.
const (
	ExporterListen   Flag = "web.listen-address"
	ExporterLogLevel Flag = "log.level"
	ExporterGroup    Flag = "group"
	ExporterTempDir  Flag = "collector.tempfiles.dir"
	// ExporterErrorLog is GROUP=FILE: a proxy error log of the group.
	ExporterErrorLog Flag = "collector.errorlog.file"
)

// Key is a key of the ready line.
type Key string

// Keys of ready lines: where a child listens, and what it runs.
const (
	KeyListen Key = "listen" // HOST:PORT of the service
	KeyAdmin  Key = "admin"  // HOST:PORT of /metrics and other admin endpoints
	KeyModel  Key = "model"  // the worker model the target runs
	KeySlots  Key = "slots"  // requests the target works on at once
	KeyPID    Key = "pid"    // the process that joined its cgroups (cgroup.ExecArgv)
)

// readyPrefix starts the ready line.
const readyPrefix = "ready "

// Field is one key=value of a ready line.
type Field struct {
	Key   Key
	Value string
}

// ReadyLine is the line a child prints once it serves, without its newline:
// "ready k=v k=v", fields in the order given.
func ReadyLine(fields ...Field) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = string(f.Key) + "=" + f.Value
	}
	return readyPrefix + strings.Join(parts, " ")
}

// Ready is a parsed ready line.
type Ready map[Key]string

// ParseReady reads a ready line; ok is false for any other line.
func ParseReady(line string) (r Ready, ok bool) {
	rest, ok := strings.CutPrefix(line, readyPrefix)
	if !ok {
		return nil, false
	}
	r = Ready{}
	for _, f := range strings.Fields(rest) {
		if k, v, ok := strings.Cut(f, "="); ok {
			r[Key(k)] = v
		}
	}
	return r, true
}

// ExecutableEnv, when set, names the slowlab binary that children run:
// tests set it to a binary they built, since under `go test` the running
// executable is the test binary.
const ExecutableEnv = "SLOWLAB_EXECUTABLE"

// Executable returns the slowlab binary that children run: ExecutableEnv,
// else the running one.
func Executable() (string, error) {
	if p := os.Getenv(ExecutableEnv); p != "" {
		return p, nil
	}
	return os.Executable()
}
