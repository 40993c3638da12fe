package stack

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Model is a server model an app component runs, and how its size is
// written: "async" (no size), "sync-W" (workers), "gthread-WxT" (workers x
// threads, or x connections for an event loop).
type Model struct {
	Name    string
	Sized   bool // takes a worker count: MODEL-W
	Threads bool // takes a second count too: MODEL-WxT
	// Second names the second count in messages: "T" (threads, when
	// empty) or "C" (connections, gevent-WxC).
	Second string
	// Async is an event loop per worker: how many requests it works on at
	// once is not bounded by its size (Slots is 0).
	Async bool
	// BackpressureOff is a model whose app can write /large without
	// waiting for the socket (/large?backpressure=off).
	BackpressureOff bool
}

// ModelInfo returns the server's registered model (false when none has
// its name).
func (s Server) ModelInfo() (Model, bool) { return findModel(s.Model) }

// Server is an app server configuration of a condition: a model and its
// size. Threads is 1 for a model without threads.
type Server struct {
	Model   string `yaml:"model"`
	Workers int    `yaml:"workers"`
	Threads int    `yaml:"threads"`
}

// Name is the CSV server label: sync-2, gthread-1x4, async.
func (s Server) Name() string {
	m, ok := findModel(s.Model)
	switch {
	case ok && !m.Sized:
		return s.Model
	case ok && m.Threads:
		return fmt.Sprintf("%s-%dx%d", s.Model, s.Workers, s.Threads)
	}
	return fmt.Sprintf("%s-%d", s.Model, s.Workers)
}

// Slots is how many requests the server works on at once (workers x
// threads), 0 for an unbounded model.
func (s Server) Slots() int {
	if m, ok := findModel(s.Model); ok && (!m.Sized || m.Async) {
		return 0
	}
	return s.Workers * max(s.Threads, 1)
}

// ParseServer reads a server label of a registered model: sync-2,
// gthread-1x4, async.
func ParseServer(s string) (Server, error) {
	name, size, sized := strings.Cut(s, "-")
	m, ok := findModel(name)
	bad := fmt.Errorf("server %q: allowed %s", s, ModelSyntax())
	switch {
	case !ok || sized != m.Sized:
		return Server{}, bad
	case !m.Sized:
		return Server{Model: name, Workers: 1, Threads: 1}, nil
	case !m.Threads:
		w, err := strconv.Atoi(size)
		if err != nil || w < 1 {
			return Server{}, bad
		}
		return Server{Model: name, Workers: w, Threads: 1}, nil
	}
	ws, ts, ok := strings.Cut(size, "x")
	w, err1 := strconv.Atoi(ws)
	t, err2 := strconv.Atoi(ts)
	if !ok || err1 != nil || err2 != nil || w < 1 || t < 1 {
		return Server{}, bad
	}
	return Server{Model: name, Workers: w, Threads: t}, nil
}

// findModel looks a model up among the registered apps.
func findModel(name string) (Model, bool) {
	for _, a := range apps {
		for _, m := range a.Models() {
			if m.Name == name {
				return m, true
			}
		}
	}
	return Model{}, false
}

// ModelSyntax lists the server labels the registered apps run, for
// messages: "sync-W, gthread-WxT, async, ...".
func ModelSyntax() string {
	var forms []string
	for _, a := range apps {
		for _, m := range a.Models() {
			f := m.Name
			switch {
			case m.Threads && m.Second != "":
				f += "-Wx" + m.Second
			case m.Threads:
				f += "-WxT"
			case m.Sized:
				f += "-W"
			}
			if !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	return strings.Join(forms, ", ")
}

// BackpressureOffModels names the registered models whose apps serve
// /large?backpressure=off.
func BackpressureOffModels() []string {
	var names []string
	for _, a := range apps {
		for _, m := range a.Models() {
			if m.BackpressureOff && !slices.Contains(names, m.Name) {
				names = append(names, m.Name)
			}
		}
	}
	return names
}

// Route is how the load generator reaches the app.
type Route string

// Routes of the experiments.
const (
	RouteDirect       Route = "direct"
	RouteBufferingOff Route = "proxy-buffering-off"
	RouteBufferingOn  Route = "proxy-buffering-on"
	// The request-body routes: the proxy reads the whole request body
	// before it opens the upstream connection (NGINX's default,
	// proxy_request_buffering on) or passes it on as it comes (off). Their
	// responses are buffered, NGINX's default.
	RouteRequestBufferingOn  Route = "proxy-request-buffering-on"
	RouteRequestBufferingOff Route = "proxy-request-buffering-off"
	// The HTTP/2 routes: the proxy speaks HTTP/2 to clients, cleartext
	// with prior knowledge (NGINX's listen ... http2 without TLS, which
	// then takes nothing else), and HTTP/1.1 to the app, one connection a
	// stream; buffering as the name says.
	RouteH2BufferingOff Route = "h2-proxy-buffering-off"
	RouteH2BufferingOn  Route = "h2-proxy-buffering-on"
	// The HTTP/2 routes over TLS, as browsers reach a site: the proxy
	// serves h2 by ALPN (NGINX's listen ... ssl http2) with a certificate
	// made for the run, which the run's clients alone trust
	// (Running.ClientTLS).
	RouteH2TLSBufferingOff Route = "h2-tls-proxy-buffering-off"
	RouteH2TLSBufferingOn  Route = "h2-tls-proxy-buffering-on"
)

// Routes lists the download routes of NGINX and the embedded proxy
// (slow-client, buffer-sweep, external); DownloadRoutes adds the routes
// other proxies own.
var Routes = []Route{RouteDirect, RouteBufferingOff, RouteBufferingOn}

// UploadRoutes lists the routes of request-body experiments (slow-upload).
var UploadRoutes = []Route{RouteDirect, RouteRequestBufferingOn, RouteRequestBufferingOff}

// H2Routes lists the routes whose clients speak HTTP/2.
var H2Routes = []Route{RouteH2BufferingOff, RouteH2BufferingOn, RouteH2TLSBufferingOff, RouteH2TLSBufferingOn}

// HTTP2 reports whether the route's clients speak HTTP/2 (to the proxy):
// H2Routes, and a proxy's own TLS route (OwnedRoute.HTTP2TLS).
func (r Route) HTTP2() bool {
	if o, ok := r.owned(); ok {
		return o.HTTP2TLS
	}
	return slices.Contains(H2Routes, r)
}

// HTTP2Routes lists the routes whose clients speak HTTP/2: H2Routes, then
// the proxies' own TLS routes.
func HTTP2Routes() []Route {
	out := slices.Clone(H2Routes)
	for _, p := range proxies {
		if ro, ok := p.(RouteOwner); ok {
			for _, o := range ro.OwnRoutes() {
				if o.HTTP2TLS {
					out = append(out, o.Route)
				}
			}
		}
	}
	return out
}

// TLS reports whether the route's clients speak TLS to the proxy.
func (r Route) TLS() bool {
	if o, ok := r.owned(); ok {
		return o.HTTP2TLS
	}
	return r == RouteH2TLSBufferingOff || r == RouteH2TLSBufferingOn
}

// Valid reports whether r is a download route: one of Routes, or a route
// a proxy owns (every proxy relays responses one way or another) for
// HTTP/1.1 clients in the clear.
func (r Route) Valid() bool {
	o, owned := r.owned()
	return slices.Contains(Routes, r) || owned && !o.HTTP2TLS
}

// Known reports whether r is any route a deployment can have.
func (r Route) Known() bool { return r.Valid() || slices.Contains(UploadRoutes, r) || r.HTTP2() }

// Proxied reports whether the route goes through a proxy.
func (r Route) Proxied() bool { return r != RouteDirect }

// Buffering reports whether the route's proxy buffers responses: the
// download route that says so, and the request-body routes (NGINX's
// default).
func (r Route) Buffering() bool {
	if o, ok := r.owned(); ok {
		return o.Buffering
	}
	return r == RouteBufferingOn || r == RouteRequestBufferingOn || r == RouteRequestBufferingOff || r == RouteH2BufferingOn ||
		r == RouteH2TLSBufferingOn
}

// RequestBuffering reports whether the route's proxy reads a request's
// whole body before it passes the request on: every proxied route but
// proxy-request-buffering-off (NGINX's default is on), and a route a
// proxy owns as it says.
func (r Route) RequestBuffering() bool {
	if o, ok := r.owned(); ok {
		return o.RequestBuffering
	}
	return r.Proxied() && r != RouteRequestBufferingOff
}

// RouteOwner is a proxy that runs routes of its own, named for what they
// do (HAProxy's haproxy-default): it runs those and direct, and refuses
// every other route by name, as every other proxy refuses its routes.
type RouteOwner interface {
	OwnRoutes() []OwnedRoute
}

// OwnedRoute is a route a proxy owns and what it does with a response and
// a request body.
type OwnedRoute struct {
	Route Route
	// Buffering: the proxy reads a response ahead of a slow client,
	// beyond its relay buffer.
	Buffering bool
	// RequestBuffering: the proxy waits for a request's body before it
	// connects to the app.
	RequestBuffering bool
	// HTTP2TLS: the route's clients speak TLS to the proxy, HTTP/2 by
	// ALPN (and HTTP/3 with Deployment.HTTP3), as on the h2-tls routes:
	// a route of the HTTP/2 experiments, not a download route.
	HTTP2TLS bool
}

// Owner is the name of the registered proxy that owns r (haproxy for
// haproxy-default), "" for a route none owns (direct, NGINX's).
func (r Route) Owner() string {
	for _, p := range proxies {
		if owns(p, r) {
			return p.Name()
		}
	}
	return ""
}

// owned is what the proxy that owns r says of it; false for a route no
// proxy owns.
func (r Route) owned() (OwnedRoute, bool) {
	for _, p := range proxies {
		if ro, ok := p.(RouteOwner); ok {
			for _, o := range ro.OwnRoutes() {
				if o.Route == r {
					return o, true
				}
			}
		}
	}
	return OwnedRoute{}, false
}

// DownloadRoutes lists every download route (Valid): Routes, then the
// routes the proxies own.
func DownloadRoutes() []Route { return slices.Concat(Routes, OwnedRoutes()) }

// RouteList writes routes comma-separated: "direct, proxy-buffering-off".
func RouteList(routes []Route) string {
	names := make([]string, len(routes))
	for i, r := range routes {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}

// OwnedRoutes lists the routes the registered proxies own for HTTP/1.1
// clients in the clear (their TLS routes are HTTP2Routes'), in
// registration order.
func OwnedRoutes() []Route {
	var out []Route
	for _, p := range proxies {
		if ro, ok := p.(RouteOwner); ok {
			for _, o := range ro.OwnRoutes() {
				if o.HTTP2TLS {
					continue // HTTP2Routes has it
				}
				out = append(out, o.Route)
			}
		}
	}
	return out
}

// ProxyFor is the stack's proxy that runs route r: the one that owns it,
// else the first that owns no routes (NGINX, the embedded proxy), else
// Proxy (which CheckRoute then refuses).
func (s Stack) ProxyFor(r Route) Proxy {
	ps := s.proxies()
	if i := slices.IndexFunc(ps, func(p Proxy) bool { return owns(p, r) }); i >= 0 {
		return ps[i]
	}
	if i := slices.IndexFunc(ps, func(p Proxy) bool { _, owner := p.(RouteOwner); return !owner }); i >= 0 {
		return ps[i]
	}
	return s.Proxy
}

// owns reports whether proxy p owns route r.
func owns(p Proxy, r Route) bool {
	ro, ok := p.(RouteOwner)
	return ok && slices.ContainsFunc(ro.OwnRoutes(), func(o OwnedRoute) bool { return o.Route == r })
}

// CheckRoute refuses, before anything starts, a route none of the stack's
// proxies can run (ProxyFor picks the one to ask): a proxy that owns
// routes runs only those (and direct), and no other proxy runs them.
func (s Stack) CheckRoute(r Route) error {
	if s.External != nil || s.Proxy == nil || !r.Proxied() {
		return nil
	}
	proxy := s.ProxyFor(r)
	if ro, ok := proxy.(RouteOwner); ok {
		runs := []Route{RouteDirect}
		for _, o := range ro.OwnRoutes() {
			if o.Route == r {
				return nil
			}
			runs = append(runs, o.Route)
		}
		return fmt.Errorf("route %s: %s cannot run it (its routes: %s)", r, proxy.Name(), RouteList(runs))
	}
	for _, p := range proxies {
		if owns(p, r) {
			return fmt.Errorf("route %s: only the %s proxy runs it (the %s stack's proxy is %s)", r, p.Name(), s.Name, proxy.Name())
		}
	}
	return nil
}
