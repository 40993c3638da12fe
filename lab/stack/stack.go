package stack

import (
	"context"
	"errors"
	"fmt"
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

// Named stacks. "gunicorn-nginx" is the real stack's first name.
const (
	NameAuto     = "auto"
	NameEmbedded = "embedded"
	NameReal     = "real"
	nameOldReal  = "gunicorn-nginx"
)

// Names lists the --stack values: the named stacks and APP+PROXY.
func Names() []string {
	return []string{NameAuto, NameEmbedded, NameReal, nameOldReal, NameExternal, "APP+PROXY"}
}

// ValidName checks a --stack value: a named stack, or APP+PROXY of
// registered components (whether they are installed is Lookup's).
func ValidName(name string) error {
	if slices.Contains(Names(), name) {
		return nil
	}
	app, proxy, ok := strings.Cut(name, "+")
	if !ok {
		return fmt.Errorf("stack %q: allowed %s", name, strings.Join(Names(), ", "))
	}
	if _, _, err := compose(name, []string{app}, proxy); err != nil {
		return fmt.Errorf("stack %q: %w", name, err)
	}
	return nil
}

// Lookup returns the stack a --stack value names, without cgroups, for
// the servers it will run: auto (real when the real components those
// servers need are installed, else embedded, with a note saying which and
// why), embedded, real (alias gunicorn-nginx: NGINX and every real app
// server, each server model run by the app that has it) or APP+PROXY of
// registered components. It fails when a component a server needs is not
// installed, naming what to install; without servers it needs the proxy
// and at least one app installed.
func Lookup(name string, servers ...Server) (st Stack, note string, err error) {
	switch name {
	case NameExternal:
		return Stack{}, "", errors.New("--stack external: the deployment is described in the scenario (stack: external with an external: block)")
	case NameEmbedded:
		return compose(NameEmbedded, []string{"embedded"}, "embedded")
	case NameReal, nameOldReal:
		st, _, err := compose(NameReal, realApps(), realProxy())
		if err == nil {
			err = st.installedFor(servers)
		}
		return st, "", err
	case NameAuto, "":
		real, _, err := compose(NameReal, realApps(), realProxy())
		if err == nil {
			err = real.installedFor(servers)
		}
		if err != nil {
			st, _, _ := compose(NameEmbedded, []string{"embedded"}, "embedded")
			return st, fmt.Sprintf("--stack auto: using embedded (%v)", err), nil
		}
		return real, "--stack auto: using real (" + real.describeFor(servers) + ", installed)", nil
	}
	app, proxy, ok := strings.Cut(name, "+")
	if !ok {
		return Stack{}, "", fmt.Errorf("--stack %q: allowed %s", name, strings.Join(Names(), ", "))
	}
	st, _, err = compose(name, []string{app}, proxy)
	if err != nil {
		return Stack{}, "", fmt.Errorf("--stack %q: %w", name, err)
	}
	return st, "", st.installedFor(servers)
}

// installedFor returns nil when the proxy and the app of every server are
// installed; without servers, the proxy and at least one app.
func (s Stack) installedFor(servers []Server) error {
	if err := Installed(s.Proxy); err != nil {
		return err
	}
	if len(servers) == 0 {
		var errs []error
		for _, a := range s.Apps {
			err := Installed(a)
			if err == nil {
				return nil
			}
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	for _, srv := range servers {
		a, err := s.app(srv.Model)
		if err != nil {
			return err
		}
		if err := Installed(a); err != nil {
			return fmt.Errorf("server %s: %w", srv.Name(), err)
		}
		if mc, ok := a.(ModelChecker); ok {
			if err := mc.ModelInstalled(srv.Model); err != nil {
				return fmt.Errorf("server %s: %w", srv.Name(), err)
			}
		}
	}
	return nil
}

// describeFor names the components servers use: "gunicorn and nginx";
// without servers, the installed ones.
func (s Stack) describeFor(servers []Server) string {
	var names []string
	add := func(c Component) {
		if !slices.Contains(names, c.Name()) {
			names = append(names, c.Name())
		}
	}
	for _, a := range s.Apps {
		used := slices.ContainsFunc(servers, func(srv Server) bool {
			app, err := s.app(srv.Model)
			return err == nil && app.Name() == a.Name()
		})
		if used || len(servers) == 0 && Installed(a) == nil {
			add(a)
		}
	}
	add(s.Proxy)
	return strings.Join(names, " and ")
}

// realApps are the names of the registered apps that are installed
// programs; realProxy the first such proxy that runs the experiments'
// shared routes (NGINX: not one that owns routes of its own).
func realApps() []string {
	var names []string
	for _, a := range apps {
		if a.Real() {
			names = append(names, a.Name())
		}
	}
	return names
}

func realProxy() string {
	for _, p := range proxies {
		if _, owner := p.(RouteOwner); p.Real() && !owner {
			return p.Name()
		}
	}
	return ""
}

// compose builds a stack of the named components.
func compose(name string, appNames []string, proxyName string) (Stack, string, error) {
	st := Stack{Name: name}
	for _, n := range appNames {
		i := slices.IndexFunc(apps, func(a App) bool { return a.Name() == n })
		if i < 0 {
			return Stack{}, "", fmt.Errorf("no app server %q (apps: %s)", n, componentNames(apps))
		}
		st.Apps = append(st.Apps, apps[i])
	}
	i := slices.IndexFunc(proxies, func(p Proxy) bool { return p.Name() == proxyName })
	if i < 0 {
		return Stack{}, "", fmt.Errorf("no proxy %q (proxies: %s)", proxyName, componentNames(proxies))
	}
	st.Proxy = proxies[i]
	return st, "", nil
}

func componentNames[C Component](cs []C) string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name())
	}
	return strings.Join(names, ", ")
}

// describe names the components: "gunicorn and nginx".
func (s Stack) describe() string {
	var names []string
	for _, c := range s.components() {
		names = append(names, c.Name())
	}
	return strings.Join(names, " and ")
}

func (s Stack) components() []Component {
	var cs []Component
	for _, a := range s.Apps {
		cs = append(cs, a)
	}
	if s.Proxy == nil {
		return cs
	}
	return append(cs, s.Proxy)
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
	for role, l := range s.Limits {
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
	if err := checkHTTP3(d, s.Proxy); err != nil {
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
		rp, err := s.Proxy.Start(ctx, d, s.Settings, ra.Addr(), d.Route.Buffering(), proxyCg)
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
