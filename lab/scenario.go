package lab

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/internal/schema"
	"github.com/slowlab/slowlab/lab/stack"
)

// StackSpec is the scenario part of an experiment that runs on a stack:
// which stack, the cgroup limits by component, and the components'
// settings.
type StackSpec struct {
	Stack string `yaml:"stack"`
	// Limits are cgroup limits by component (app, proxy, loadgen), applied
	// on a stack with a real component unless --no-limits.
	Limits   map[string]LimitSpec `yaml:"limits"`
	Gunicorn GunicornSpec         `yaml:"gunicorn"`
	Nginx    NginxSpec            `yaml:"nginx"`
	// AcceptWhenFree has the embedded gthread workers accept only while a
	// thread is free (Gunicorn accepts regardless).
	AcceptWhenFree bool `yaml:"accept_when_free,omitempty"`
	// External is the deployment of stack: external.
	External *ExternalSpec `yaml:"external,omitempty"`
}

// ExternalSpec is, for stack: external, an app (and proxy) the user
// already runs: where the experiment's requests go (any paths; they
// replace the experiment's fast.path, large.path, probe_path and
// /longpoll), what it is (route and server label the results), and the
// exporter selectors that find each component's processes.
type ExternalSpec struct {
	FastURL     string              `yaml:"fast_url,omitempty"`
	LargeURL    string              `yaml:"large_url,omitempty"`
	LongPollURL string              `yaml:"longpoll_url,omitempty"` // ?wait= is added
	UploadURL   string              `yaml:"upload_url,omitempty"`   // assess's slow uploads
	StreamURL   string              `yaml:"stream_url,omitempty"`   // assess's held streams
	Route       stack.Route         `yaml:"route"`                  // direct when empty
	Server      string              `yaml:"server"`                 // sync-2, node-1, ...
	Groups      map[string][]string `yaml:"groups"`                 // app, proxy
	TempDirs    []string            `yaml:"temp_dirs,omitempty"`    // the proxy's
	// Unseen says the stack's processes are not on this machine: no
	// groups, nothing of them measured (only slowlab assess takes it, its
	// verdicts resting on /fast alone).
	Unseen bool `yaml:"unseen,omitempty"`
	// HTTP2 says the URLs' front speaks HTTP/2 (http://: with prior
	// knowledge; https://: TLS with ALPN h2); only slowlab assess takes it.
	HTTP2 bool `yaml:"http2,omitempty"`
}

// Deployment is the spec as the stack takes it.
func (e ExternalSpec) Deployment(allowRemote bool) (stack.External, error) {
	srv, err := stack.ParseServer(e.Server)
	if err != nil {
		return stack.External{}, fmt.Errorf("external.server: %v", err)
	}
	ext := stack.External{URLs: map[stack.Target]string{}, Route: e.Route, Server: srv, Groups: e.Groups,
		TempDirs: e.TempDirs, AllowRemote: allowRemote, Unseen: e.Unseen, HTTP2: e.HTTP2}
	if ext.Route == "" {
		ext.Route = stack.RouteDirect
	}
	for t, u := range map[stack.Target]string{stack.TargetFast: e.FastURL, stack.TargetLarge: e.LargeURL, stack.TargetLongPoll: e.LongPollURL,
		stack.TargetUpload: e.UploadURL, stack.TargetStream: e.StreamURL} {
		if u != "" {
			ext.URLs[t] = u
		}
	}
	return ext, ext.Validate()
}

// LimitSpec is one component's cgroup limits.
type LimitSpec struct {
	CPU    float64 `yaml:"cpu"` // cores
	Memory Size    `yaml:"memory"`
}

// GunicornSpec passes extra arguments to Gunicorn.
type GunicornSpec struct {
	ExtraArgs []string `yaml:"extra_args,omitempty"`
}

// NginxSpec adds directives to NGINX's location block.
type NginxSpec struct {
	Snippet string `yaml:"snippet,omitempty"`
}

// PublishedLimits are docs/experiments.md section 1's limits by component: app
// 0.25 CPU / 128 MiB, proxy 0.20 CPU / 96 MiB, loadgen (with the
// controller) 0.20 CPU / 128 MiB.
func PublishedLimits() map[string]cgroup.Limits {
	return map[string]cgroup.Limits{
		"app":     {CPUCores: 0.25, MemoryBytes: 128 << 20},
		"proxy":   {CPUCores: 0.20, MemoryBytes: 96 << 20},
		"loadgen": {CPUCores: 0.20, MemoryBytes: 128 << 20},
	}
}

// PublishedStackSpec is a stack spec with the published limits, on the
// stack auto chooses.
func PublishedStackSpec() StackSpec {
	s := StackSpec{Stack: stack.NameAuto, Limits: map[string]LimitSpec{}}
	for name, l := range PublishedLimits() {
		s.Limits[name] = LimitSpec{CPU: l.CPUCores, Memory: Size(l.MemoryBytes)}
	}
	return s
}

// CgroupLimits returns the spec's limits for the stack.
func (s StackSpec) CgroupLimits() map[string]cgroup.Limits {
	m := map[string]cgroup.Limits{}
	for name, l := range s.Limits {
		m[name] = cgroup.Limits{CPUCores: l.CPU, MemoryBytes: int64(l.Memory)}
	}
	return m
}

// Settings are the components' settings of the spec.
func (s StackSpec) Settings() stack.Settings {
	return stack.Settings{GunicornArgs: s.Gunicorn.ExtraArgs, NginxSnippet: s.Nginx.Snippet, AcceptWhenFree: s.AcceptWhenFree}
}

// Validate checks the stack name, limits and component settings, naming
// each field by its YAML path.
func (s StackSpec) Validate() error {
	if err := stack.ValidName(s.Stack); err != nil {
		return err
	}
	if err := s.validateExternal(); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(s.Limits)) {
		l := s.Limits[name]
		if !slices.Contains([]string{"app", "proxy", "loadgen"}, name) {
			return fmt.Errorf("limits.%s: allowed components app, proxy, loadgen", name)
		}
		if err := (cgroup.Limits{CPUCores: l.CPU, MemoryBytes: int64(l.Memory)}).Validate(); err != nil {
			return fmt.Errorf("limits.%s: %v", name, err)
		}
	}
	if err := stack.ValidateGunicornArgs(s.Gunicorn.ExtraArgs); err != nil {
		return fmt.Errorf("gunicorn.extra_args: %v", err)
	}
	if err := stack.ValidateNginxSnippet(s.Nginx.Snippet); err != nil {
		return fmt.Errorf("nginx.snippet: %v", err)
	}
	return nil
}

// validateExternal checks the external: block, which only stack:
// external has, and that such a stack is given no limits (it applies
// none). Whether its URLs may leave loopback is the session's check
// (--allow-remote).
func (s StackSpec) validateExternal() error {
	if s.Stack != stack.NameExternal {
		if s.External != nil {
			return fmt.Errorf("external: only with stack: external (stack is %s)", s.Stack)
		}
		return nil
	}
	if s.External == nil {
		return errors.New("stack external: no external: block; give the deployment's URLs (fast_url, large_url, longpoll_url), route, server and groups")
	}
	if _, err := s.External.Deployment(true); err != nil {
		return err
	}
	if len(s.Limits) > 0 && !maps.EqualFunc(s.CgroupLimits(), PublishedLimits(), func(a, b cgroup.Limits) bool { return a == b }) {
		return errors.New("limits: the external stack applies none (it records the limits it finds); remove limits:")
	}
	return nil
}

// Duration is a time.Duration written as "250ms" in YAML.
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: %q is not a duration (want e.g. 250ms, 9s, 2m)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Size is a byte count written as "16m" in YAML (NGINX's size syntax).
type Size int64

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := bytesize.Parse(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: %q is not a size (want bytes as N, Nk, Nm or Ng)", n.Line, n.Value)
	}
	*s = Size(v)
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (s Size) MarshalYAML() (any, error) { return bytesize.Format(int64(s)), nil }

// ScenarioVersion is the version of the scenario format this slowlab
// writes and reads (schema_version; internal/schema says how a file of
// another version is read). A scenario without one is 1.0.
const ScenarioVersion = "1.0"

// MarshalScenario returns cfg as a scenario file for `slowlab run`, its
// schema_version first.
func MarshalScenario(cfg Config) ([]byte, error) {
	h := cfg.Head()
	was := h.SchemaVersion
	h.SchemaVersion = ScenarioVersion
	defer func() { h.SchemaVersion = was }()
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(cfg); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// LoadScenario reads and validates a scenario file ("-" is standard
// input). Errors name the file, the field, the value and what is allowed.
func LoadScenario(path string, stdin io.Reader) (Config, error) {
	cfg, _, err := ReadScenario(path, stdin)
	return cfg, err
}

// ReadScenario is LoadScenario that also returns the file's bytes, which
// Options.Apply takes (Given.Scenario) so that the file's fields win over
// --quick's.
func ReadScenario(path string, stdin io.Reader) (Config, []byte, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, nil, err
	}
	cfg, err := parseScenario(path, b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, b, nil
}

// ParseScenario decodes a scenario over its experiment's published values
// (fields left out keep them; unknown fields are errors, but for a
// scenario of a newer minor version, whose unknown fields are ignored
// with a note) and validates it completely, component settings included,
// before anything starts. A scenario of a newer major version is refused.
func ParseScenario(b []byte) (Config, error) { return parseScenario("scenario", b) }

// parseScenario is ParseScenario of the file name, which a note names.
func parseScenario(name string, b []byte) (Config, error) {
	var head Header
	if err := yaml.Unmarshal(b, &head); err != nil {
		return nil, yamlError(err)
	}
	strict, err := schema.Compare("", head.SchemaVersion, ScenarioVersion)
	if err != nil {
		return nil, errors.New(oneLine(err.Error()))
	}
	if !strict {
		schema.Noted(name, head.SchemaVersion, ScenarioVersion)
	}
	if head.Experiment == "" {
		return nil, emptyScenario()
	}
	e, err := Lookup(head.Experiment)
	if err != nil {
		return nil, fmt.Errorf("experiment %q: allowed %s", head.Experiment, strings.Join(Names(), ", "))
	}
	cfg := e.New()
	if err := decodeScenario(b, cfg, strict); err != nil {
		return nil, err
	}
	return cfg, ValidateAll(cfg)
}

// ValidateAll checks cfg completely: its reps, its stack, limits and
// component settings, and the experiment's own fields. With stack: external the
// experiment's own check comes first, so that one that starts its own
// stack says so before the external stack asks for its external: block.
func ValidateAll(cfg Config) error {
	if err := validateReps(cfg); err != nil {
		return err
	}
	if err := RefuseExternal(cfg); err != nil {
		return err
	}
	s, ok := cfg.(Stacked)
	if !ok {
		return cfg.Validate()
	}
	if s.Stack().Stack == stack.NameExternal {
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	if err := s.Stack().Validate(); err != nil {
		return err
	}
	return cfg.Validate()
}

// validateReps checks a Repeated config's reps, for every experiment: 1
// to MaxReps, or to its own RepsLimit. Experiments do not check reps
// themselves.
func validateReps(cfg Config) error {
	r, ok := cfg.(Repeated)
	if !ok {
		return nil
	}
	limit := MaxReps
	if l, ok := cfg.(RepsLimit); ok {
		limit = l.MaxReps()
	}
	if n := *r.Repetitions(); n < 1 || n > limit {
		return fmt.Errorf("reps %d: allowed 1 to %d", n, limit)
	}
	return nil
}

// decodeScenario decodes b over cfg: the fields b has replace cfg's, the
// others are kept; strict refuses a field cfg does not have. The
// scenario's schema_version is not kept.
func decodeScenario(b []byte, cfg Config, strict bool) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(strict)
	err := dec.Decode(cfg)
	cfg.Head().SchemaVersion = ""
	if err != nil {
		return yamlError(err)
	}
	return nil
}

// scenarioStrict says whether the scenario b is decoded strictly (its
// version this slowlab's or older), without a note.
func scenarioStrict(b []byte) (bool, error) {
	var head Header
	if err := yaml.Unmarshal(b, &head); err != nil {
		return false, yamlError(err)
	}
	return schema.Compare(ScenarioFile, head.SchemaVersion, ScenarioVersion)
}

// yamlError keeps a decoding error on one line, without the library's
// prefix.
func yamlError(err error) error {
	if errors.Is(err, io.EOF) {
		return emptyScenario()
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return errors.New(oneLine(strings.Join(te.Errors, "; ")))
	}
	return errors.New(oneLine(strings.TrimPrefix(err.Error(), "yaml: ")))
}

func emptyScenario() error {
	return fmt.Errorf("empty scenario (want at least experiment: NAME, one of %s)", strings.Join(Names(), ", "))
}

// oneLine keeps an error on one line: values quoted from the file may hold
// newlines.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }
