package stack

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/slowlab/slowlab/cgroup"
)

// Stack is an app server family × a proxy, with the cgroup policy of the
// run: one app component per server model, first registered first.
type Stack struct {
	Name  string
	Apps  []App
	Proxy Proxy
	// More are further proxies (APP+PROXY+PROXY...): each route runs
	// behind the one of the stack's proxies that runs it (ProxyFor), so
	// one session can compare proxies.
	More []Proxy
	// Cgroups puts every component in a cgroup of its own; Limits are
	// applied in it by role (app, proxy, loadgen), a role missing from
	// the map is only accounted. Without Cgroups nothing runs in a cgroup.
	Cgroups    bool
	Limits     map[string]cgroup.Limits
	CgroupRoot string // cgroup.DefaultRoot when empty
	Settings   Settings
	// External, when set, is the deployment the user runs (Name is
	// NameExternal): no component is started, no cgroup made.
	External *External
}

// Real reports whether any component is an installed program: then the
// published limits apply to every role.
func (s Stack) Real() bool {
	return slices.ContainsFunc(s.components(), func(c Component) bool { return c.Real() })
}

// Models lists the server models the stack runs.
func (s Stack) Models() []string {
	var names []string
	for _, a := range s.Apps {
		for _, m := range a.Models() {
			if !slices.Contains(names, m.Name) {
				names = append(names, m.Name)
			}
		}
	}
	return names
}

// app returns the app component that runs model.
func (s Stack) app(model string) (App, error) {
	for _, a := range s.Apps {
		if slices.ContainsFunc(a.Models(), func(m Model) bool { return m.Name == model }) {
			return a, nil
		}
	}
	return nil, fmt.Errorf("server model %q: the %s stack runs %s", model, s.Name, strings.Join(s.Models(), ", "))
}

// Check validates the stack's settings, limits and cgroup root, and that
// it runs every server given, before anything starts.
func (s Stack) Check(servers ...Server) error {
	if s.External != nil {
		return s.External.check(servers)
	}
	for _, c := range s.components() {
		if err := c.Validate(s.Settings); err != nil {
			return err
		}
	}
	for _, role := range slices.Sorted(maps.Keys(s.Limits)) {
		l := s.Limits[role]
		if !slices.Contains([]string{"app", "proxy", "loadgen"}, role) {
			return fmt.Errorf("limits for %q: components are app, proxy and loadgen", role)
		}
		if err := l.Validate(); err != nil {
			return fmt.Errorf("limits for %s: %w", role, err)
		}
	}
	if s.CgroupRoot != "" && !filepath.IsAbs(s.CgroupRoot) {
		return fmt.Errorf("cgroup root %q: must be an absolute path", s.CgroupRoot)
	}
	for _, srv := range servers {
		a, err := s.app(srv.Model)
		if err != nil {
			return err
		}
		if mv, ok := a.(ModelValidator); ok {
			if err := mv.ValidateModel(srv.Model, s.Settings); err != nil {
				return fmt.Errorf("server %s: %w", srv.Name(), err)
			}
		}
	}
	return nil
}

// LoadgenLimits are the limits of the load generator's own cgroup, and
// whether it gets one: as the stack's components do.
func (s Stack) LoadgenLimits() (cgroup.Limits, bool) {
	return s.Limits["loadgen"], s.Cgroups
}

func validateDeployment(d Deployment) error {
	switch {
	case !d.Route.Known():
		return fmt.Errorf("route %q: allowed %v, %v, %v and %v", d.Route, Routes, UploadRoutes[1:], HTTP2Routes(), OwnedRoutes())
	case d.AppTimeout != 0 && (d.AppTimeout < time.Second || d.AppTimeout > MaxAppTimeout || d.AppTimeout%time.Second != 0):
		return fmt.Errorf("app timeout %v: want 0 (the app's default) or whole seconds from 1s to %v", d.AppTimeout, MaxAppTimeout)
	case d.ClientBodyBuffer != 0 && (d.ClientBodyBuffer < 1<<10 || d.ClientBodyBuffer > MaxClientBodyBuffer):
		return fmt.Errorf("client body buffer %d: want 0 (the proxy's default) or %d..%d bytes", d.ClientBodyBuffer, 1<<10, MaxClientBodyBuffer)
	case d.ClientHeaderTimeout != 0 && (d.ClientHeaderTimeout < time.Second || d.ClientHeaderTimeout > MaxClientHeaderTimeout || d.ClientHeaderTimeout%time.Second != 0):
		return fmt.Errorf("client header timeout %v: want 0 (the proxy's default) or whole seconds from 1s to %v", d.ClientHeaderTimeout, MaxClientHeaderTimeout)
	case d.SendTimeout != 0 && (d.SendTimeout < time.Second || d.SendTimeout > MaxSendTimeout || d.SendTimeout%time.Second != 0):
		return fmt.Errorf("send timeout %v: want 0 (the proxy's default) or whole seconds from 1s to %v", d.SendTimeout, MaxSendTimeout)
	case d.ProxyReadTimeout != 0 && (d.ProxyReadTimeout < time.Second || d.ProxyReadTimeout > MaxProxyReadTimeout || d.ProxyReadTimeout%time.Second != 0):
		return fmt.Errorf("proxy read timeout %v: want 0 (the proxy's default) or whole seconds from 1s to %v", d.ProxyReadTimeout, MaxProxyReadTimeout)
	case d.MaxTempFileSize != nil && (*d.MaxTempFileSize < 0 || *d.MaxTempFileSize > MaxMaxTempFileSize || *d.MaxTempFileSize != 0 && *d.MaxTempFileSize < 64<<10):
		return fmt.Errorf("max temp file size %d: want 0 (no temp file) or %d..%d bytes", *d.MaxTempFileSize, 64<<10, int64(MaxMaxTempFileSize))
	case d.TempTmpfs != 0 && (d.TempTmpfs < MinTempTmpfs || d.TempTmpfs > MaxTempTmpfs):
		return fmt.Errorf("temp tmpfs %d bytes: want 0 (no tmpfs) or %d..%d bytes (1 MiB to 1 GiB)", d.TempTmpfs, MinTempTmpfs, MaxTempTmpfs)
	case d.Server.Workers < 1:
		return fmt.Errorf("server workers %d: must be at least 1", d.Server.Workers)
	case d.LargeSize < 0 || d.LargeSize > 1<<30:
		return fmt.Errorf("large size %d: want 0..%d bytes", d.LargeSize, 1<<30)
	case d.RunID == "" || d.RunID == "." || d.RunID == ".." || strings.ContainsAny(d.RunID, "/\x00"):
		return fmt.Errorf("run id %q: must be a non-empty name without /", d.RunID)
	case d.WorkDir == "" || d.LogDir == "":
		return errors.New("deployment needs a work dir and a log dir")
	}
	return nil
}

// Start starts the stack for one run: the app, then on a proxied route the
// proxy in front of it, each in its own cgroup when Cgroups is set. On
// error everything it started is stopped and every cgroup removed.
func (s Stack) Start(ctx context.Context, d Deployment) (*Running, error) {
	if err := validateDeployment(d); err != nil {
		return nil, err
	}
	if s.External != nil {
		return s.External.start(ctx, d)
	}
	app, err := s.app(d.Server.Model)
	if err != nil {
		return nil, err
	}
	if err := s.CheckRoute(d.Route); err != nil {
		return nil, err
	}
	if err := checkHTTP3(d, s.ProxyFor(d.Route)); err != nil {
		return nil, err
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	r := &Running{cgroups: map[string]*cgroup.Cgroup{}}
	ok := false
	defer func() {
		if !ok {
			r.Stop()
		}
	}()
	appCg, err := s.cgroup(r, d, "app")
	if err != nil {
		return nil, err
	}
	// Set only on success: a component's nil pointer in an interface is
	// not a nil interface.
	ra, err := app.Start(ctx, d, s.Settings, appCg)
	if err != nil {
		return nil, err
	}
	r.app = ra
	if err := s.limitCPU(appCg, "app"); err != nil {
		return nil, err
	}
	if d.Route.TLS() {
		if d.TLS, err = newDeploymentTLS(d); err != nil {
			return nil, err
		}
		r.tls = d.TLS.Client
	}
	if d.Route.Proxied() {
		proxyCg, err := s.cgroup(r, d, "proxy")
		if err != nil {
			return nil, err
		}
		rp, err := s.ProxyFor(d.Route).Start(ctx, d, s.Settings, ra.Addr(), d.Route.Buffering(), proxyCg)
		if err != nil {
			return nil, err
		}
		r.proxy = rp
		if err := s.limitCPU(proxyCg, "proxy"); err != nil {
			return nil, err
		}
	}
	ok = true
	return r, nil
}
