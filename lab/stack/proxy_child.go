package stack

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/slowlab/slowlab/child"
)

// renderConfig executes a proxy's config template on v.
func renderConfig(t *template.Template, v any) ([]byte, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name(), err)
	}
	return b.Bytes(), nil
}

// startChildProxy starts a proxy that runs as one child process of the
// lab (HAProxy, Apache, Caddy) on a port free a moment before
// (startOnFreePort): render writes its config for the address it listens
// on, conf is where it goes, argv starts it with env (nil: the lab's own; Caddy sets its
// HOME and config dirs), as the child name logging to logPath; it is
// ready when it answers /fast (over TLS trusting tlsCfg when set: a proxy
// that serves only TLS there).
func startChildProxy(ctx context.Context, name, conf, logPath string, argv, env []string, tlsCfg *tls.Config,
	render func(listen string) ([]byte, error)) (childProxyRun, error) {
	deadline := time.Now().Add(child.ReadyTimeout)
	return startOnFreePort(func(listen string) (childProxyRun, error) {
		b, err := render(listen)
		if err != nil {
			return childProxyRun{}, err
		}
		p, err := startConfigured(ctx, name, conf, b, logPath, argv, env)
		if err != nil {
			return childProxyRun{}, err
		}
		if tlsCfg != nil {
			err = child.WaitTLS(ctx, p, "https://"+listen+"/fast", deadline, tlsCfg)
		} else {
			err = child.WaitHTTP(ctx, p, "http://"+listen+"/fast", deadline)
		}
		if err != nil {
			p.Stop(time.Second)
			child.WaitGroupGone(p.PID(), time.Second)
			return childProxyRun{}, err
		}
		return childProxyRun{p: p, addr: listen, stop: new(sync.Once)}, nil
	})
}

// refuseNginxSnippet refuses NGINX's snippet on the proxy name, which
// cannot read it.
func refuseNginxSnippet(name string, s Settings) error {
	if strings.TrimSpace(s.NginxSnippet) != "" {
		return errors.New(name + ": an nginx snippet is NGINX's (the " + name + " proxy takes none)")
	}
	return nil
}

// childProxyRun is a started proxy of startChildProxy; tempDir is the
// empty directory TempDirs gives (such a proxy writes no temp files, and
// the exporter's temp figures then say so, 0, rather than read the
// default paths, which another proxy may use).
type childProxyRun struct {
	p             *child.Process
	addr, tempDir string
	stop          *sync.Once
	stopErr       error
}

func (r *childProxyRun) Process() *child.Process { return r.p }
func (r *childProxyRun) Addr() string            { return r.addr }
func (r *childProxyRun) TempDirs() []string      { return []string{r.tempDir} }

// ErrorLogs implements RunningProxy: the proxy logs to its stderr, the
// child's log (LOGDIR/RUNID-NAME.log).
func (r *childProxyRun) ErrorLogs() []string { return childLogs(r.p) }

// Stop stops the proxy and waits for its process group (its workers too)
// to be gone.
func (r *childProxyRun) Stop() error {
	r.stop.Do(func() {
		r.stopErr = r.p.Stop(3 * time.Second)
		child.WaitGroupGone(r.p.PID(), 2*time.Second)
	})
	return r.stopErr
}
