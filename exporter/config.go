package exporter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config lists the groups the exporter reports on. Defaults and validation
// live in one place, compile; LoadConfig rejects unknown fields.
type Config struct {
	Groups []Group `yaml:"groups"`
	// TempDirs are the proxy temp-file directories for groups that name none
	// themselves. Empty means DefaultTempDirs().
	TempDirs []string `yaml:"temp_dirs,omitempty"`
}

// Group is one named set of processes. A process is in the group when any
// selector selects it. Selectors are "KIND:VALUE":
//
//	cgroup:PATH    processes in the cgroup PATH (below the cgroup mount root,
//	               the same path on v1 and v2) and its descendants; also the
//	               source of the slowlab_cgroup_* metrics (at most one per group)
//	comm:REGEX     processes whose comm (/proc/PID/comm) matches REGEX entirely
//	cmdline:REGEX  processes whose command line, arguments joined by single
//	               spaces, matches REGEX entirely
//	pid:N          exactly process N
//	tree:N         process N and all its descendants (a Gunicorn master and
//	               its workers)
//	port:N         no process: TCP sockets whose local port is N count for the
//	               group in the socket collector (for when /proc/PID/fd is
//	               unreadable)
//	cgroup-re:REGEX  one group per cgroup whose path (below the root, as in
//	               cgroup:) matches REGEX entirely: a dynamic group. REGEX
//	               needs named captures, (?P<unit>[^/]+), which become labels
//	               of the group's metrics; GroupName sets the group label.
//	               The only selector of its group.
type Group struct {
	Name      string   `yaml:"name"`
	Selectors []string `yaml:"selectors"`
	// GroupName is the group label of each match of a cgroup-re: selector,
	// with ${capture} replaced by the match's capture ("${unit}",
	// "pod-${pod_uid}"); empty means the matched cgroup path.
	GroupName string `yaml:"group_name,omitempty"`
	// TempDirs overrides Config.TempDirs for this group.
	TempDirs []string `yaml:"temp_dirs,omitempty"`
	// ErrorLogs are the proxy's error log files (absolute paths), read by
	// the errorlog collector for failed writes under the group's temp
	// dirs (errorlog_line.go). Not on a dynamic group.
	ErrorLogs []string `yaml:"error_logs,omitempty"`
	// SkipComm, on a dynamic group, leaves out a matched cgroup whose
	// processes all have one of these names (/proc/PID/comm): a pod's
	// sandbox, whose only process is "pause", is no container to watch.
	SkipComm []string `yaml:"skip_comm,omitempty"`
}

// DefaultTempDirs returns where reverse proxies spool buffered responses
// and request bodies: NGINX's proxy_temp and client_body_temp on Debian
// (/var/lib/nginx/proxy, /var/lib/nginx/body) and upstream builds
// (/var/cache/nginx/proxy_temp, client_temp), and the embedded proxy's
// directory, filepath.Join(os.TempDir(), "slowlab-proxy").
func DefaultTempDirs() []string {
	return []string{
		"/var/lib/nginx/proxy",
		"/var/lib/nginx/body",
		"/var/cache/nginx/proxy_temp",
		"/var/cache/nginx/client_temp",
		filepath.Join(os.TempDir(), "slowlab-proxy"),
	}
}

// Selector kinds, in the order error messages list them.
var selectorKinds = []string{"cgroup", "cgroup-re", "comm", "cmdline", "pid", "tree", "port"}

var groupNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// selector is one parsed "KIND:VALUE".
type selector struct {
	kind string
	path string         // cgroup
	re   *regexp.Regexp // comm, cmdline, cgroup-re
	n    int            // pid, tree, port
}

// group is a validated Group with defaults applied.
type group struct {
	name      string
	selectors []selector
	cgroup    string // "" when the group has no cgroup selector
	ports     []int
	tempDirs  []string
	errorLogs []string // absolute, cleaned
	dyn       *dynamic // a cgroup-re: group; nil for a fixed one
}

// LoadConfig reads a YAML config file, rejecting unknown fields, and
// validates it.
func LoadConfig(file string) (Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := parseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", file, err)
	}
	return cfg, nil
}

// parseConfig decodes and validates YAML config bytes.
func parseConfig(data []byte) (Config, error) {
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		// yaml puts each unknown field on its own line; keep one line.
		msg := strings.ReplaceAll(strings.ReplaceAll(err.Error(), "\n ", ""), "\n", `\n`)
		return Config{}, fmt.Errorf("parse: %s", msg)
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate reports the first problem with the config, naming the group, the
// value and what is allowed.
func (c Config) Validate() error {
	_, err := c.compile()
	return err
}

// compile validates the config and applies defaults.
func (c Config) compile() ([]group, error) {
	if len(c.Groups) == 0 {
		return nil, errors.New("no groups: give at least one (groups: in the config or --group NAME=SELECTOR)")
	}
	defaultDirs := c.TempDirs
	if len(defaultDirs) == 0 {
		defaultDirs = DefaultTempDirs()
	}
	if err := checkTempDirs(defaultDirs); err != nil {
		return nil, fmt.Errorf("temp_dirs: %w", err)
	}
	seen := make(map[string]bool, len(c.Groups))
	groups := make([]group, 0, len(c.Groups))
	for i, g := range c.Groups {
		if !groupNameRE.MatchString(g.Name) {
			return nil, fmt.Errorf("group %d: name %q: must match %s", i+1, g.Name, groupNameRE)
		}
		if seen[g.Name] {
			return nil, fmt.Errorf("group %q: defined twice", g.Name)
		}
		seen[g.Name] = true
		cg, err := compileGroup(g)
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", g.Name, err)
		}
		cg.tempDirs = defaultDirs
		if len(g.TempDirs) > 0 {
			if err := checkTempDirs(g.TempDirs); err != nil {
				return nil, fmt.Errorf("group %q: temp_dirs: %w", g.Name, err)
			}
			cg.tempDirs = g.TempDirs
		}
		cg.tempDirs = cleanDirs(cg.tempDirs)
		if len(g.SkipComm) > 0 {
			if cg.dyn == nil {
				return nil, fmt.Errorf("group %q: skip_comm: only on a dynamic (cgroup-re:) group", g.Name)
			}
			for _, c := range g.SkipComm {
				if c == "" || len(c) > 15 || strings.ContainsAny(c, "/\n") {
					return nil, fmt.Errorf("group %q: skip_comm %q: want a process name as /proc/PID/comm shows it (1 to 15 bytes, no / or newline)", g.Name, c)
				}
			}
			cg.dyn.skipComm = slices.Clone(g.SkipComm)
		}
		if len(g.ErrorLogs) > 0 {
			if cg.dyn != nil {
				return nil, fmt.Errorf("group %q: error_logs: not on a dynamic (cgroup-re:) group: give the proxy a group of its own", g.Name)
			}
			if err := checkPaths(g.ErrorLogs); err != nil {
				return nil, fmt.Errorf("group %q: error_logs: %w", g.Name, err)
			}
			for _, p := range g.ErrorLogs {
				cg.errorLogs = append(cg.errorLogs, filepath.Clean(p))
			}
		}
		groups = append(groups, cg)
	}
	if err := checkDynamic(groups); err != nil {
		return nil, err
	}
	return groups, nil
}

func compileGroup(g Group) (group, error) {
	cg := group{name: g.Name}
	if len(g.Selectors) == 0 {
		return group{}, fmt.Errorf("no selectors (allowed kinds: %s)", strings.Join(selectorKinds, ", "))
	}
	for _, raw := range g.Selectors {
		s, err := parseSelector(raw)
		if err != nil {
			return group{}, err
		}
		switch s.kind {
		case "cgroup":
			if cg.cgroup != "" {
				return group{}, fmt.Errorf("selector %q: at most one cgroup selector per group (already cgroup:%s)", raw, cg.cgroup)
			}
			cg.cgroup = s.path
		case "port":
			cg.ports = append(cg.ports, s.n)
		}
		cg.selectors = append(cg.selectors, s)
	}
	return cg, compileDynamic(&cg, g)
}

// parseSelector parses "KIND:VALUE".
func parseSelector(raw string) (selector, error) {
	kind, value, ok := strings.Cut(raw, ":")
	if !ok {
		return selector{}, fmt.Errorf("selector %q: want KIND:VALUE with KIND one of %s", raw, strings.Join(selectorKinds, ", "))
	}
	if value == "" {
		return selector{}, fmt.Errorf("selector %q: empty value", raw)
	}
	s := selector{kind: kind}
	switch kind {
	case "cgroup":
		p, err := cleanCgroupPath(value)
		if err != nil {
			return selector{}, fmt.Errorf("selector %q: %w", raw, err)
		}
		s.path = p
	case "comm", "cmdline", "cgroup-re":
		if _, err := regexp.Compile(value); err != nil {
			return selector{}, fmt.Errorf("selector %q: bad regex: %w", raw, err)
		}
		s.re = regexp.MustCompile("^(?:" + value + ")$")
	case "pid", "tree", "port":
		n, err := strconv.Atoi(value)
		max := 1<<22 - 1 // PID_MAX_LIMIT on 64-bit Linux
		if kind == "port" {
			max = 65535
		}
		if err != nil || n < 1 || n > max {
			return selector{}, fmt.Errorf("selector %q: want an integer from 1 to %d", raw, max)
		}
		s.n = n
	default:
		return selector{}, fmt.Errorf("selector %q: unknown kind %q (allowed: %s)", raw, kind, strings.Join(selectorKinds, ", "))
	}
	return s, nil
}

// cleanCgroupPath turns "/slowlab/app/" into "slowlab/app" and rejects paths
// that leave the cgroup root or name the root itself.
func cleanCgroupPath(p string) (string, error) {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", errors.New(`cgroup path must not contain ".."`)
		}
	}
	c := strings.TrimPrefix(path.Clean("/"+p), "/")
	if c == "" {
		return "", errors.New("cgroup path must name a cgroup below the root")
	}
	return c, nil
}

func checkTempDirs(dirs []string) error { return checkPaths(dirs) }

// checkPaths requires absolute paths.
func checkPaths(paths []string) error {
	for _, d := range paths {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("%q: must be an absolute path", d)
		}
	}
	return nil
}

// cleanDirs cleans the temp dirs and resolves symlinks where the directory
// exists already, because /proc/PID/fd links name the resolved path.
func cleanDirs(dirs []string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = filepath.Clean(d)
		if r, err := filepath.EvalSymlinks(d); err == nil {
			out[i] = r
		}
	}
	return out
}

// ParseGroupFlag parses the --group flag syntax NAME=SELECTOR[,SELECTOR...].
// Selectors are split on commas, so a regex that contains a comma belongs in
// the config file instead.
func ParseGroupFlag(s string) (Group, error) {
	name, sels, ok := strings.Cut(s, "=")
	if !ok || name == "" || sels == "" {
		return Group{}, fmt.Errorf("group %q: want NAME=SELECTOR[,SELECTOR...]", s)
	}
	g := Group{Name: name, Selectors: strings.Split(sels, ",")}
	if _, err := compileGroup(g); err != nil {
		return Group{}, fmt.Errorf("group %q: %w", name, err)
	}
	return g, nil
}
