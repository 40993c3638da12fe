package stack

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/exporter"
	"github.com/slowlab/slowlab/loadgen"
)

// NameExternal is the stack of an app (and proxy) the user already runs:
// slowlab starts nothing and applies no limits; it sends the experiment's
// requests to the user's URLs, watches the user's processes through the
// exporter's selectors, and records the cgroup limits it finds.
const NameExternal = "external"

// Target is a kind of request an experiment sends, which an external
// stack maps to a URL of the user's.
type Target string

// The experiments' requests.
const (
	TargetFast     Target = "fast"     // slow-client's /fast, long-poll's probe
	TargetLarge    Target = "large"    // slow-client's download
	TargetLongPoll Target = "longpoll" // long-poll's held request (?wait= is added)
	TargetUpload   Target = "upload"   // assess's slow uploads (a POST with a body)
	TargetStream   Target = "stream"   // assess's held streams (long-poll or SSE), as given
)

// Targets lists the request kinds, in the order messages name them.
var Targets = []Target{TargetFast, TargetLarge, TargetLongPoll, TargetUpload, TargetStream}

// External is a deployment slowlab did not start: where to send each kind
// of request, what it is (a route and a server model, which label the
// results), and how the exporter finds its processes.
type External struct {
	URLs   map[Target]string
	Route  Route
	Server Server
	// Groups are exporter selectors by role, "app" and, on a proxied
	// route, "proxy"; each must select something when a run starts.
	Groups map[string][]string
	// TempDirs are the proxy's temp-file directories (the exporter's
	// defaults when empty).
	TempDirs []string
	// AllowRemote lets the URLs name a host that is not loopback.
	AllowRemote bool
	// Unseen: the processes are not on this machine, so there are no
	// Groups and nothing of them is measured.
	Unseen bool
	// HTTP2: the URLs' front speaks HTTP/2: cleartext with prior
	// knowledge on http://, TLS with ALPN h2 on https:// (which it then
	// takes).
	HTTP2 bool

	reachTimeout time.Duration // Reach's per URL, ReachTimeout when 0
}

// Validate checks the URLs, the route, the server label and the
// selectors, without looking at the processes (Find does).
func (e External) Validate() error {
	if len(e.URLs) == 0 {
		return errors.New("external: no URLs: give the ones the experiment sends to (fast_url, large_url, longpoll_url)")
	}
	for _, t := range Targets {
		raw, ok := e.URLs[t]
		if !ok {
			continue
		}
		check := loadgen.CheckTarget
		if e.HTTP2 {
			check = loadgen.CheckH2Target
		}
		u, err := check(raw, e.AllowRemote)
		if err != nil {
			return fmt.Errorf("external.%s_url: %w", t, err)
		}
		if u.Path == "" {
			return fmt.Errorf("external.%s_url %q: no path (want http://HOST:PORT/PATH)", t, raw)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(e.URLs)) {
		if !slices.Contains(Targets, t) {
			return fmt.Errorf("external: unknown request kind %q (allowed %v)", t, Targets)
		}
	}
	if !e.Route.Valid() {
		return fmt.Errorf("external.route %q: allowed %v", e.Route, Routes)
	}
	if _, ok := e.Server.ModelInfo(); !ok {
		return fmt.Errorf("external.server %q: allowed %s", e.Server.Model, ModelSyntax())
	}
	return e.validateGroups()
}

func (e External) validateGroups() error {
	if e.Unseen {
		if len(e.Groups) > 0 || len(e.TempDirs) > 0 {
			return errors.New("external.unseen: the processes are not on this machine; give no groups or temp_dirs")
		}
		return nil
	}
	if len(e.Groups["app"]) == 0 {
		return errors.New("external.groups.app: no selectors: the exporter needs to find the app's processes (cgroup:PATH, tree:PID, comm:REGEX, port:N, ...)")
	}
	if e.Route.Proxied() && len(e.Groups["proxy"]) == 0 {
		return fmt.Errorf("external.groups.proxy: no selectors, and route %s goes through a proxy", e.Route)
	}
	if !e.Route.Proxied() && len(e.Groups["proxy"]) > 0 {
		return errors.New("external.groups.proxy: route direct has no proxy")
	}
	var cfg exporter.Config
	for _, role := range []string{"app", "proxy"} {
		if sels := e.Groups[role]; len(sels) > 0 {
			cfg.Groups = append(cfg.Groups, exporter.Group{Name: role, Selectors: sels})
		}
	}
	for _, role := range slices.Sorted(maps.Keys(e.Groups)) {
		sels := e.Groups[role]
		if role != "app" && role != "proxy" {
			return fmt.Errorf("external.groups.%s: roles are app and proxy", role)
		}
		for _, s := range sels {
			if strings.HasPrefix(s, "cgroup-re:") {
				return fmt.Errorf("external.groups.%s: selector %q: cgroup-re: makes groups of its own; give cgroup:, tree:, pid:, comm:, cmdline: or port:", role, s)
			}
		}
	}
	cfg.TempDirs = e.TempDirs
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("external.groups: %w", err)
	}
	return nil
}

// ErrSelectsNothing is in Find's error when a role's selector selects
// nothing now: the scenario names processes (or a port) that are not
// there, bad input, which cmd/slowlab refuses with exit 2, as it does a
// bad command line. It is the exporter's ErrSelectsNothing, which Find
// wraps with the role.
var ErrSelectsNothing = exporter.ErrSelectsNothing

// Found is what Find saw of an external deployment: each role's
// processes, its cgroup and that cgroup's limits.
type Found struct {
	PIDs    map[string][]int
	Cgroups map[string]string // role → cgroup path, absent when unknown
	Limits  map[string]cgroup.Limits
	Notes   []string // what could not be read, by role
}

// Find resolves every selector now and fails, naming the role and the
// selector, when one selects nothing (ErrSelectsNothing); it then reads the limits of each
// role's cgroup (its cgroup: selector's, else its first process's).
func (e External) Find(ctx context.Context) (Found, error) {
	f := Found{PIDs: map[string][]int{}, Cgroups: map[string]string{}, Limits: map[string]cgroup.Limits{}}
	if e.Unseen {
		f.Notes = append(f.Notes, "the processes are not on this machine (unseen): none measured")
		return f, nil
	}
	procFS, cgFS := exporter.DefaultProcFS, exporter.DefaultCgroupFS
	layout, layoutErr := cgroup.Detect(cgFS)
	for _, role := range []string{"app", "proxy"} {
		var pids []int
		cgPath := ""
		for _, sel := range e.Groups[role] {
			got, err := exporter.SelectNow(ctx, sel, procFS, cgFS)
			if err != nil {
				return Found{}, fmt.Errorf("external.groups.%s: %w", role, err)
			}
			pids = append(pids, got...)
			if p, ok := strings.CutPrefix(sel, "cgroup:"); ok {
				cgPath = p
			}
		}
		if len(e.Groups[role]) == 0 {
			continue
		}
		sort.Ints(pids)
		f.PIDs[role] = slices.Compact(pids)
		switch {
		case layoutErr != nil:
			f.Notes = append(f.Notes, fmt.Sprintf("%s limits unknown: %v", role, layoutErr))
			continue
		case cgPath == "" && len(pids) == 0:
			f.Notes = append(f.Notes, portsOnly(role, e.Groups[role]))
			continue
		case cgPath == "":
			p, err := layout.ProcPath(procFS, pids[0])
			if err != nil {
				f.Notes = append(f.Notes, fmt.Sprintf("%s limits unknown: %v", role, err))
				continue
			}
			cgPath = p
		}
		l, err := layout.Limits(cgPath)
		f.Cgroups[role] = "/" + strings.TrimPrefix(cgPath, "/")
		f.Limits[role] = l
		if err != nil {
			f.Notes = append(f.Notes, fmt.Sprintf("%s cgroup %s: %v", role, f.Cgroups[role], err))
		}
	}
	return f, nil
}

// portsOnly is the note of a role whose selectors are all port: (the
// others select processes or fail): they name the TCP sockets on their
// ports, one listening on each now (SelectNow checked), which the
// exporter counts as the role's, but no process whose cgroup's limits
// could be read.
func portsOnly(role string, sels []string) string {
	what := "selects the TCP sockets on its port (one listens there now)"
	if len(sels) > 1 {
		what = "select the TCP sockets on their ports (one listens on each now)"
	}
	return fmt.Sprintf("%s: %s %s, not processes: the %s's cgroup limits are unknown (a cgroup:, tree: or pid: selector would give them)",
		role, strings.Join(sels, ", "), what, role)
}

// String is how environment.json and the session's note show the limits
// found: "app: cgroup /system.slice/app.service 0.25 CPU / 128 MiB; proxy:
// ... (found, not applied)".
func (f Found) String() string {
	var parts []string
	for _, role := range []string{"app", "proxy"} {
		if p, ok := f.Cgroups[role]; ok {
			parts = append(parts, fmt.Sprintf("%s: cgroup %s %s", role, p, f.Limits[role]))
		}
	}
	parts = append(parts, f.Notes...)
	return strings.Join(parts, "; ") + " (found, not applied)"
}

// target is the URL of kind on the external deployment with the query
// parameters of pathQuery (an experiment's path and query on a managed
// app, such as /large?backpressure=off) added; "" when the user gave none.
func (e External) target(kind Target, pathQuery string) string {
	raw, ok := e.URLs[kind]
	if !ok {
		return ""
	}
	_, q, _ := strings.Cut(pathQuery, "?")
	if q == "" {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw // Validate refused it already
	}
	if u.RawQuery == "" {
		u.RawQuery = q
	} else {
		u.RawQuery += "&" + q
	}
	return u.String()
}

// check validates the deployment and that it runs every server given.
func (e External) check(servers []Server) error {
	if err := e.Validate(); err != nil {
		return err
	}
	for _, srv := range servers {
		if srv.Name() != e.Server.Name() {
			return fmt.Errorf("server %s: the external stack runs %s (external.server)", srv.Name(), e.Server.Name())
		}
	}
	return nil
}

// start "starts" the external deployment for one run: nothing is
// started; the run must be of the deployment's server (its route is the
// session's check: long-poll deploys every run direct), and every
// selector must still select something.
func (e External) start(ctx context.Context, d Deployment) (*Running, error) {
	if d.Server.Name() != e.Server.Name() {
		return nil, fmt.Errorf("the external stack runs %s, not %s", e.Server.Name(), d.Server.Name())
	}
	f, err := e.Find(ctx)
	if err != nil {
		return nil, err
	}
	return &Running{ext: &e, found: f, cgroups: map[string]*cgroup.Cgroup{}}, nil
}
