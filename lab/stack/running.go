package stack

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/slowlab/slowlab/cgroup"
)

// Running is a started stack.
type Running struct {
	app     RunningApp
	proxy   RunningProxy // nil on the direct route
	cgroups map[string]*cgroup.Cgroup

	stopOnce sync.Once
	stopErr  error
}

// URL is the base URL the load generator targets: the proxy's on a
// proxied route, else the app's.
func (r *Running) URL() string {
	if r.proxy != nil {
		return "http://" + r.proxy.Addr()
	}
	return "http://" + r.app.Addr()
}

// AppAddr is where the app itself listens.
func (r *Running) AppAddr() string { return r.app.Addr() }

// PIDs maps role (app, proxy) to the main process the stack started.
func (r *Running) PIDs() map[string]int {
	m := map[string]int{"app": r.app.Process().PID()}
	if r.proxy != nil {
		m["proxy"] = r.proxy.Process().PID()
	}
	return m
}

// Groups maps role to the exporter selectors that find its processes: its
// cgroup when it has one, else its process tree.
func (r *Running) Groups() map[string][]string {
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
	if r.proxy == nil {
		return nil
	}
	return r.proxy.TempDirs()
}

// AppSend returns each /large response's app_send_s by request id.
func (r *Running) AppSend(ctx context.Context) (map[string]float64, error) {
	return r.app.AppSend(ctx)
}

// HeldCounter returns the app's held long-poll counter, if it has one.
func (r *Running) HeldCounter() (HeldCounter, bool) {
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

// Failed reports a component that died during the run.
func (r *Running) Failed() error {
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
