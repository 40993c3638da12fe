package stack

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Named stacks. "gunicorn-nginx" is the real stack's first name.
const (
	NameAuto     = "auto"
	NameEmbedded = "embedded"
	NameReal     = "real"
	nameOldReal  = "gunicorn-nginx"
)

// Names lists the --stack values: the named stacks and APP+PROXY (with
// more proxies: APP+PROXY+PROXY...).
func Names() []string {
	return []string{NameAuto, NameEmbedded, NameReal, nameOldReal, NameExternal, "APP+PROXY"}
}

// composeName builds the stack an APP+PROXY[+PROXY...] name gives.
func composeName(name string) (Stack, error) {
	app, proxies, ok := strings.Cut(name, "+")
	if !ok {
		return Stack{}, fmt.Errorf("stack %q: allowed %s", name, strings.Join(Names(), ", "))
	}
	st, _, err := compose(name, []string{app}, strings.Split(proxies, "+")...)
	if err != nil {
		return Stack{}, fmt.Errorf("stack %q: %w", name, err)
	}
	return st, nil
}

// ValidName checks a --stack value: a named stack, or APP+PROXY of
// registered components (whether they are installed is Lookup's).
func ValidName(name string) error {
	if slices.Contains(Names(), name) {
		return nil
	}
	_, err := composeName(name)
	return err
}

// Lookup returns the stack a --stack value names, without cgroups, for
// the servers it will run: auto (real when the real components those
// servers need are installed, else embedded, with a note saying which and
// why), embedded, real (alias gunicorn-nginx: NGINX and every real app
// server, each server model run by the app that has it; WithOwners adds
// the proxies that own the routes a session asks for) or APP+PROXY of
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
	st, err = composeName(name)
	if err != nil {
		return Stack{}, "", fmt.Errorf("--%w", err)
	}
	return st, "", st.installedFor(servers)
}

// WithOwners is the real stack (--stack real) with, beside NGINX, the
// proxy that owns each of routes (HAProxy's, Caddy's, Apache's routes),
// so that `--stack real --route haproxy-default` runs behind HAProxy as
// `--stack gunicorn+nginx+haproxy` would; it fails, naming what to
// install, when such a proxy is not installed. Any other stack is
// returned as it is: a stack named by its components runs only those
// (CheckRoute refuses a route none of them runs).
func (s Stack) WithOwners(routes ...Route) (Stack, error) {
	if s.Name != NameReal {
		return s, nil
	}
	for _, r := range routes {
		i := slices.IndexFunc(proxies, func(p Proxy) bool { return owns(p, r) })
		if i < 0 || slices.ContainsFunc(s.proxies(), func(p Proxy) bool { return p.Name() == proxies[i].Name() }) {
			continue
		}
		if err := Installed(proxies[i]); err != nil {
			return s, fmt.Errorf("route %s: %w", r, err)
		}
		s.More = append(slices.Clip(s.More), proxies[i])
	}
	return s, nil
}

// installedFor returns nil when the proxy and the app of every server are
// installed; without servers, the proxy and at least one app.
func (s Stack) installedFor(servers []Server) error {
	for _, p := range s.proxies() {
		if err := Installed(p); err != nil {
			return err
		}
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
	for _, p := range s.proxies() {
		add(p)
	}
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

// compose builds a stack of the named components: the first proxy is
// Proxy, the others More.
func compose(name string, appNames []string, proxyNames ...string) (Stack, string, error) {
	st := Stack{Name: name}
	for _, n := range appNames {
		i := slices.IndexFunc(apps, func(a App) bool { return a.Name() == n })
		if i < 0 {
			return Stack{}, "", fmt.Errorf("no app server %q (apps: %s)", n, componentNames(apps))
		}
		st.Apps = append(st.Apps, apps[i])
	}
	for k, n := range proxyNames {
		i := slices.IndexFunc(proxies, func(p Proxy) bool { return p.Name() == n })
		switch {
		case i < 0:
			return Stack{}, "", fmt.Errorf("no proxy %q (proxies: %s)", n, componentNames(proxies))
		case slices.Contains(proxyNames[:k], n):
			return Stack{}, "", fmt.Errorf("proxy %q named twice", n)
		case k == 0:
			st.Proxy = proxies[i]
		default:
			st.More = append(st.More, proxies[i])
		}
	}
	return st, "", nil
}

func componentNames[C Component](cs []C) string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name())
	}
	return strings.Join(names, ", ")
}

func (s Stack) components() []Component {
	var cs []Component
	for _, a := range s.Apps {
		cs = append(cs, a)
	}
	for _, p := range s.proxies() {
		cs = append(cs, p)
	}
	return cs
}

// proxies lists Proxy, then More.
func (s Stack) proxies() []Proxy {
	if s.Proxy == nil {
		return nil
	}
	return append([]Proxy{s.Proxy}, s.More...)
}
