package stack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/slowlab/slowlab/cgroup"
)

// Running is a started stack.
type Running struct {
	app     RunningApp
	proxy   RunningProxy // nil on the direct route
	cgroups map[string]*cgroup.Cgroup
	// ext is the external deployment a run measures (app and proxy are
	// then nil: slowlab started nothing); found is what its selectors
	// found when the run started.
	ext   *External
	found Found
	// tls trusts the proxy's certificate on a TLS route; nil otherwise.
	tls *tls.Config

	stopOnce sync.Once
	stopErr  error
}

// URL is the base URL the load generator targets: the proxy's on a
// proxied route, else the app's; "" on an external stack, whose URLs
// Target gives one by one.
func (r *Running) URL() string {
	if r.ext != nil {
		return ""
	}
	if r.proxy != nil && r.tls != nil {
		return "https://" + r.proxy.Addr()
	}
	if r.proxy != nil {
		return "http://" + r.proxy.Addr()
	}
	return "http://" + r.app.Addr()
}

// ClientTLS is the TLS configuration that trusts the proxy's certificate
// on a TLS route (a copy: set ServerName, NextProtos, ... as needed); nil
// on every other route.
func (r *Running) ClientTLS() *tls.Config {
	if r.tls == nil {
		return nil
	}
	return r.tls.Clone()
}

// AppAddr is where the app itself listens ("" on an external stack).
func (r *Running) AppAddr() string {
	if r.app == nil {
		return ""
	}
	return r.app.Addr()
}

// ProxyAddr is where the proxy listens ("" on the direct route and on an
// external stack).
func (r *Running) ProxyAddr() string {
	if r.proxy == nil {
		return ""
	}
	return r.proxy.Addr()
}

// ProxyBuffers says what the proxy tells of the bytes it holds: the URL of
// its report (BufferReporter), and the memory it buffers a response in at
// most by its configuration (MemoryBufferer); neither on the direct route.
func (r *Running) ProxyBuffers() (reportURL string, memory int64) {
	if br, ok := r.proxy.(BufferReporter); ok {
		reportURL = br.BuffersURL()
	}
	if mb, ok := r.proxy.(MemoryBufferer); ok {
		memory = mb.MemoryBuffers()
	}
	return reportURL, memory
}

// ProxyProcess is the proxy's process and its temp dirs, where its temp
// files can be found from outside it (hops.TempFiles); pid is 0 on the
// direct route and on an external stack.
func (r *Running) ProxyProcess() (pid int, tempDirs []string) {
	if r.ext != nil || r.proxy == nil {
		return 0, nil
	}
	return r.proxy.Process().PID(), r.proxy.TempDirs()
}

// Target is the URL of a request of kind: the base URL with pathQuery
// (the experiment's path and query, "/large?backpressure=off") on a stack
// slowlab started; on an external stack, the user's URL of that kind with
// pathQuery's query parameters added, "" when the user gave none.
func (r *Running) Target(kind Target, pathQuery string) string {
	if r.ext != nil {
		return r.ext.target(kind, pathQuery)
	}
	return r.URL() + pathQuery
}

// AllowRemote reports whether the load generator may send to a host that
// is not loopback: only on an external stack given --allow-remote.
func (r *Running) AllowRemote() bool { return r.ext != nil && r.ext.AllowRemote }

// External reports whether the run measures a deployment slowlab did not
// start, and what its selectors found when the run started.
func (r *Running) External() (Found, bool) { return r.found, r.ext != nil }

// PIDs maps role (app, proxy) to the main process the stack started; on
// an external stack, the first process each role's selectors found.
func (r *Running) PIDs() map[string]int {
	if r.ext != nil {
		m := map[string]int{}
		for role, pids := range r.found.PIDs {
			if len(pids) > 0 {
				m[role] = pids[0]
			}
		}
		return m
	}
	m := map[string]int{"app": r.app.Process().PID()}
	if r.proxy != nil {
		m["proxy"] = r.proxy.Process().PID()
	}
	return m
}

// Groups maps role to the exporter selectors that find its processes: its
// cgroup when it has one, else its process tree.
func (r *Running) Groups() map[string][]string {
	if r.ext != nil {
		g := map[string][]string{} // none when the processes are unseen
		maps.Copy(g, r.ext.Groups)
		return g
	}
	g := map[string][]string{"app": selector(r.cgroups["app"], r.app)}
	if r.proxy != nil {
		g["proxy"] = selector(r.cgroups["proxy"], r.proxy)
	}
	return g
}

// Cgroup is role's cgroup, nil without one.
func (r *Running) Cgroup(role string) *cgroup.Cgroup { return r.cgroups[role] }

// TempDirs are where the proxy writes its temp files.
func (r *Running) TempDirs() []string {
	if r.ext != nil {
		return slices.Clone(r.ext.TempDirs)
	}
	if r.proxy == nil {
		return nil
	}
	return r.proxy.TempDirs()
}

// ProxyErrorLogs are the files the proxy's error log goes to, as
// absolute paths; none without a proxy or on an external stack.
func (r *Running) ProxyErrorLogs() []string {
	if r.ext != nil || r.proxy == nil {
		return nil
	}
	return r.proxy.ErrorLogs()
}

// AppSend returns each /large response's app_send_s by request id; none
// on an external stack, whose app keeps no send log slowlab can read.
func (r *Running) AppSend(ctx context.Context) (map[string]float64, error) {
	if r.ext != nil {
		return map[string]float64{}, nil
	}
	return r.app.AppSend(ctx)
}

// HeldCounter returns the app's held long-poll counter, if it has one.
func (r *Running) HeldCounter() (HeldCounter, bool) {
	if r.ext != nil {
		return nil, false
	}
	hc, ok := r.app.(HeldCounter)
	return hc, ok
}

// MetricsEndpoints lists the components' own /metrics by job name.
func (r *Running) MetricsEndpoints() map[string]string {
	m := map[string]string{}
	for _, c := range []Started{r.app, r.proxy} {
		if me, ok := c.(MetricsEndpoint); ok {
			job, addr := me.MetricsEndpoint()
			m[job] = addr
		}
	}
	return m
}

// Failed reports a component that died during the run; on an external
// stack, a role whose selectors no longer select anything, or a fast URL
// that now refuses connections (External.stopped).
func (r *Running) Failed() error {
	if r.ext != nil {
		if _, err := r.ext.Find(context.Background()); err != nil {
			return err
		}
		return r.ext.stopped(context.Background())
	}
	for _, rc := range []struct {
		role string
		c    Started
	}{{"app", r.app}, {"proxy", r.proxy}} {
		role, c := rc.role, rc.c
		if c == nil {
			continue
		}
		p := c.Process()
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s: %s (pid %d) exited during the run: %v", role, p.Name(), p.PID(), err)
		}
		if ww, ok := c.(WorkerWatcher); ok {
			if err := ww.WorkersFailed(); err != nil {
				return fmt.Errorf("%s: %s: %w", role, p.Name(), err)
			}
		}
	}
	return nil
}

// Stop tears everything down: the proxy, the app, then the cgroups. Safe
// to call more than once.
func (r *Running) Stop() error {
	r.stopOnce.Do(func() {
		var errs []error
		if r.proxy != nil {
			errs = append(errs, r.proxy.Stop())
		}
		if r.app != nil {
			errs = append(errs, r.app.Stop())
		}
		for _, role := range []string{"proxy", "app"} {
			if cg := r.cgroups[role]; cg != nil {
				errs = append(errs, cg.Remove())
			}
		}
		r.stopErr = errors.Join(errs...)
	})
	return r.stopErr
}

// OOMKills returns, by role, how many processes the kernel has killed in
// the role's cgroup since it was created because the cgroup reached its
// memory limit. A role without a cgroup, or whose kernel does not count
// OOM kills, is absent.
func (r *Running) OOMKills() map[string]int {
	out := map[string]int{}
	for role, cg := range r.cgroups {
		if n, err := cg.OOMKills(); err == nil {
			out[role] = n
		}
	}
	return out
}
