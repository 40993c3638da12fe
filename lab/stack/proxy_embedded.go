package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/child"
)

func init() { RegisterProxy(embeddedProxy{}) }

// embeddedProxy is `slowlab proxy`: NGINX's proxy_buffering and
// proxy_request_buffering on and off with NGINX's knobs and defaults,
// nothing to install.
type embeddedProxy struct{}

func (embeddedProxy) Name() string            { return "embedded" }
func (embeddedProxy) Needs() []string         { return nil }
func (embeddedProxy) Packages() []string      { return nil }
func (embeddedProxy) Real() bool              { return false }
func (embeddedProxy) Validate(Settings) error { return nil }

// ServesHTTP3 implements HTTP3Server: `slowlab proxy --http3`.
func (embeddedProxy) ServesHTTP3() bool { return true }

func (embeddedProxy) Start(ctx context.Context, d Deployment, _ Settings, upstream string, buffering bool, cg *cgroup.Cgroup) (RunningProxy, error) {
	exe, err := child.Executable()
	if err != nil {
		return nil, fmt.Errorf("find slowlab binary: %w", err)
	}
	if err := checkTmpfs(d); err != nil {
		return nil, err
	}
	tempDir := filepath.Join(d.WorkDir, "proxy-temp")
	if err := os.MkdirAll(tempDir, 0o700); err != nil {
		return nil, fmt.Errorf("proxy temp dir: %w", err)
	}
	mode := "off"
	if buffering {
		mode = "on"
	}
	argv := []string{exe, child.CmdProxy}
	argv = append(argv, child.ProxyBuffering.Arg(mode)...)
	argv = append(argv, child.ProxyUpstream.Arg(upstream)...)
	argv = append(argv, child.ProxyListen.Arg("127.0.0.1:0")...)
	argv = append(argv, child.ProxyAdmin.Arg("127.0.0.1:0")...)
	argv = append(argv, child.ProxyTempDir.Arg(tempDir)...)
	// The request side; request bodies spill under tempDir
	// (proxy.DefaultClientBodyTempDir), which TempDirs covers.
	reqMode := "off"
	if d.Route.RequestBuffering() {
		reqMode = "on"
	}
	argv = append(argv, child.ProxyRequestBuffering.Arg(reqMode)...)
	if d.ClientBodyBuffer != 0 {
		argv = append(argv, child.ProxyClientBodyBufferSize.Arg(strconv.FormatInt(d.ClientBodyBuffer, 10))...)
	}
	if d.ClientHeaderTimeout != 0 {
		argv = append(argv, child.ProxyClientHeaderTimeout.Arg(d.ClientHeaderTimeout.String())...)
	}
	argv = append(argv, child.ProxyMaxTempFileSize.Arg(strconv.FormatInt(d.MaxTempFile(), 10))...)
	if d.SendTimeout != 0 {
		argv = append(argv, child.ProxySendTimeout.Arg(d.SendTimeout.String())...)
	}
	if d.ProxyReadTimeout != 0 {
		argv = append(argv, child.ProxyUpstreamTimeout.Arg(d.ProxyReadTimeout.String())...)
	}
	if d.UpstreamHTTP10 {
		argv = append(argv, child.ProxyHTTPVersion.Arg("1.0")...)
	}
	if d.Route.HTTP2() {
		argv = append(argv, child.ProxyHTTP2.Set())
	}
	if d.TLS != nil {
		argv = append(argv, child.ProxyTLSCert.Arg(d.TLS.CertFile)...)
		argv = append(argv, child.ProxyTLSKey.Arg(d.TLS.KeyFile)...)
		if d.HTTP3 {
			argv = append(argv, child.ProxyHTTP3.Set())
		}
	}
	if d.TempTmpfs > 0 {
		argv = TmpfsArgv(d.TempTmpfs, tempDir, argv)
	}
	p, err := child.Start(ctx, "proxy", filepath.Join(d.LogDir, d.RunID+"-proxy.log"), argv, cgroup.ChildEnv(os.Environ(), cg))
	if err != nil {
		return nil, err
	}
	return &embeddedProxyRun{p: p, addr: p.Ready()[child.KeyListen], admin: p.Ready()[child.KeyAdmin], tempDir: tempDir, buffering: buffering}, nil
}

// embeddedProxyRun is a started embedded proxy.
type embeddedProxyRun struct {
	p                    *child.Process
	addr, admin, tempDir string
	buffering            bool
}

// MemoryBuffers implements MemoryBufferer: the embedded proxy runs with
// NGINX's buffer sizes (proxy.DefaultBufferSize and DefaultBuffers*), so
// it holds what NGINX would: with buffering on the header buffer and the
// buffers, off the one relay buffer.
func (r *embeddedProxyRun) MemoryBuffers() int64 {
	if r.buffering {
		return nginxBufferSize + nginxBuffers
	}
	return nginxBufferSize
}

func (r *embeddedProxyRun) Process() *child.Process { return r.p }
func (r *embeddedProxyRun) Addr() string            { return r.addr }
func (r *embeddedProxyRun) TempDirs() []string      { return []string{r.tempDir} }
func (r *embeddedProxyRun) Stop() error             { return r.p.Stop(3 * time.Second) }

// BuffersURL implements BufferReporter: the admin listener's /buffers.
func (r *embeddedProxyRun) BuffersURL() string { return "http://" + r.admin + "/buffers" }

// MetricsEndpoint implements MetricsEndpoint: the proxy's admin listener.
func (r *embeddedProxyRun) MetricsEndpoint() (string, string) { return "slowlab-proxy", r.admin }
