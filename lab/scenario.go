package lab

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slowlab/slowlab/target/proxy"
)

// Scenario is an experiment as data: `slowlab run FILE` runs it, and every
// preset is one (`slowlab reproduce slow-client --print-scenario`). Fields
// left out keep the published values; unknown fields are rejected.
type Scenario struct {
	Experiment string              `yaml:"experiment"`
	Stack      string              `yaml:"stack"`
	Reps       int                 `yaml:"reps"`
	Conditions []ScenarioCondition `yaml:"conditions"`
	Fast       FastSpec            `yaml:"fast"`
	Large      LargeSpec           `yaml:"large"`
	SlowReader SlowReaderSpec      `yaml:"slow_reader"`
	// Limits are cgroup limits by component (app, proxy, loadgen), applied
	// on the gunicorn-nginx stack unless --no-limits.
	Limits   map[string]LimitSpec `yaml:"limits"`
	Gunicorn GunicornSpec         `yaml:"gunicorn"`
	Nginx    NginxSpec            `yaml:"nginx"`
}

// ScenarioCondition is one cell of the matrix.
type ScenarioCondition struct {
	Route       string `yaml:"route"`
	Server      string `yaml:"server"` // sync-W or gthread-WxT
	SlowClients int    `yaml:"slow_clients"`
}

// FastSpec is the open-loop /fast load.
type FastSpec struct {
	Path     string   `yaml:"path"`
	Rate     float64  `yaml:"rate"` // requests per second
	Duration Duration `yaml:"duration"`
	Offset   Duration `yaml:"offset"` // after the slow connections
	Timeout  Duration `yaml:"timeout"`
}

// LargeSpec is the slow clients' download.
type LargeSpec struct {
	Path string `yaml:"path"`
	Size Size   `yaml:"size"`
}

// SlowReaderSpec is how slow clients read.
type SlowReaderSpec struct {
	ReadRate Size     `yaml:"read_rate"` // bytes per second
	RcvBuf   Size     `yaml:"rcvbuf"`
	ReadSize Size     `yaml:"read_size"`
	Timeout  Duration `yaml:"timeout"`
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
	v, err := proxy.ParseSize(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: %q is not a size (want bytes as N, Nk, Nm or Ng)", n.Line, n.Value)
	}
	*s = Size(v)
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (s Size) MarshalYAML() (any, error) { return proxy.FormatSize(int64(s)), nil }

// ScenarioOf returns the scenario of a slow-client experiment, limits and
// stack included, so printing it and running it gives the same matrix.
func ScenarioOf(e SlowClient, stack string, limits map[string]Limits) Scenario {
	s := Scenario{Experiment: "slow-client", Stack: stack, Reps: e.Reps,
		Fast:       FastSpec{Path: e.FastPath, Rate: e.FastRate, Duration: Duration(e.FastDuration), Offset: Duration(e.FastOffset), Timeout: Duration(e.FastTimeout)},
		Large:      LargeSpec{Path: e.LargePath, Size: Size(e.LargeSize)},
		SlowReader: SlowReaderSpec{ReadRate: Size(e.ReadRate), RcvBuf: Size(e.RcvBuf), ReadSize: Size(e.ReadSize), Timeout: Duration(e.SlowTimeout)},
		Limits:     map[string]LimitSpec{},
	}
	for _, c := range e.Conditions {
		s.Conditions = append(s.Conditions, ScenarioCondition{Route: string(c.Route), Server: c.Server.Name(), SlowClients: c.SlowClients})
	}
	for name, l := range limits {
		s.Limits[name] = LimitSpec{CPU: l.CPUCores, Memory: Size(l.MemoryBytes)}
	}
	return s
}

// DefaultScenario is the published slow-client experiment.
func DefaultScenario() Scenario {
	return ScenarioOf(DefaultSlowClient(), "auto", DefaultLimits())
}

// Marshal returns the scenario as YAML.
func (s Scenario) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// LoadScenario reads and validates a scenario file. Errors name the file,
// the field, the value and what is allowed.
func LoadScenario(path string) (Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, err
	}
	s, err := ParseScenario(b)
	if err != nil {
		return Scenario{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseScenario decodes YAML over the published defaults and validates it.
func ParseScenario(b []byte) (Scenario, error) {
	s := DefaultScenario()
	s.Conditions = nil
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return Scenario{}, errors.New("empty scenario (want at least experiment: slow-client)")
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return Scenario{}, errors.New(oneLine(strings.Join(te.Errors, "; ")))
		}
		return Scenario{}, errors.New(oneLine(strings.TrimPrefix(err.Error(), "yaml: ")))
	}
	if len(s.Conditions) == 0 {
		s.Conditions = DefaultScenario().Conditions
	}
	return s, s.Validate()
}

// Validate checks every field, naming it by its YAML path.
func (s Scenario) Validate() error {
	if s.Experiment != "slow-client" {
		return fmt.Errorf("experiment %q: allowed slow-client (long-poll and latency-gap run with slowlab reproduce)", s.Experiment)
	}
	if !oneOfStr(s.Stack, "auto", "embedded", "gunicorn-nginx") {
		return fmt.Errorf("stack %q: allowed auto, embedded, gunicorn-nginx", s.Stack)
	}
	for i, c := range s.Conditions {
		if !Route(c.Route).Valid() {
			return fmt.Errorf("conditions[%d].route %q: allowed direct, proxy-buffering-off, proxy-buffering-on", i, c.Route)
		}
		if sp, err := ParseServer(c.Server); err != nil || sp.Model == "async" {
			return fmt.Errorf("conditions[%d].server %q: allowed sync-W or gthread-WxT, e.g. sync-2, gthread-1x4", i, c.Server)
		}
		if c.SlowClients < 0 || c.SlowClients > 1000 {
			return fmt.Errorf("conditions[%d].slow_clients %d: allowed 0 to 1000", i, c.SlowClients)
		}
	}
	switch {
	case s.Reps < 1 || s.Reps > 1000:
		return fmt.Errorf("reps %d: allowed 1 to 1000", s.Reps)
	case !strings.HasPrefix(s.Fast.Path, "/"):
		return fmt.Errorf("fast.path %q: must start with /", s.Fast.Path)
	case !(s.Fast.Rate > 0) || s.Fast.Rate > 10000:
		return fmt.Errorf("fast.rate %v: allowed more than 0 up to 10000 requests/s", s.Fast.Rate)
	case s.Fast.Duration <= 0:
		return fmt.Errorf("fast.duration %s: must be more than 0", time.Duration(s.Fast.Duration))
	case s.Fast.Offset < 0:
		return fmt.Errorf("fast.offset %s: must be 0 or more", time.Duration(s.Fast.Offset))
	case s.Fast.Timeout <= 0:
		return fmt.Errorf("fast.timeout %s: must be more than 0", time.Duration(s.Fast.Timeout))
	case !strings.HasPrefix(s.Large.Path, "/"):
		return fmt.Errorf("large.path %q: must start with /", s.Large.Path)
	case s.Large.Size > 1<<30:
		return fmt.Errorf("large.size %s: allowed 0 to 1g", proxy.FormatSize(int64(s.Large.Size)))
	case s.SlowReader.ReadRate <= 0:
		return fmt.Errorf("slow_reader.read_rate %d: must be more than 0 bytes/s", s.SlowReader.ReadRate)
	case s.SlowReader.ReadSize <= 0:
		return fmt.Errorf("slow_reader.read_size %d: must be at least 1 byte", s.SlowReader.ReadSize)
	case s.SlowReader.Timeout <= 0:
		return fmt.Errorf("slow_reader.timeout %s: must be more than 0", time.Duration(s.SlowReader.Timeout))
	}
	for name, l := range s.Limits {
		if !oneOfStr(name, "app", "proxy", "loadgen") {
			return fmt.Errorf("limits.%s: allowed components app, proxy, loadgen", name)
		}
		if err := (Limits{CPUCores: l.CPU, MemoryBytes: int64(l.Memory)}).Validate(); err != nil {
			return fmt.Errorf("limits.%s: %v", name, err)
		}
	}
	if err := validateGunicornArgs(s.Gunicorn.ExtraArgs); err != nil {
		return fmt.Errorf("gunicorn.extra_args: %v", err)
	}
	return nil
}

// SlowClient converts the scenario to the experiment it describes.
func (s Scenario) SlowClient() SlowClient {
	e := SlowClient{Reps: s.Reps, FastPath: s.Fast.Path, FastRate: s.Fast.Rate, FastDuration: time.Duration(s.Fast.Duration),
		FastOffset: time.Duration(s.Fast.Offset), FastTimeout: time.Duration(s.Fast.Timeout), LargePath: s.Large.Path,
		LargeSize: int64(s.Large.Size), ReadRate: float64(s.SlowReader.ReadRate), RcvBuf: int(s.SlowReader.RcvBuf),
		ReadSize: int(s.SlowReader.ReadSize), SlowTimeout: time.Duration(s.SlowReader.Timeout)}
	for _, c := range s.Conditions {
		sp, _ := ParseServer(c.Server)
		e.Conditions = append(e.Conditions, Condition{Route: Route(c.Route), Server: sp, SlowClients: c.SlowClients})
	}
	return e
}

// CgroupLimits returns the scenario's limits for the stack.
func (s Scenario) CgroupLimits() map[string]Limits {
	m := map[string]Limits{}
	for name, l := range s.Limits {
		m[name] = Limits{CPUCores: l.CPU, MemoryBytes: int64(l.Memory)}
	}
	return m
}

// oneLine keeps an error on one line: values quoted from the file may hold
// newlines.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }

func oneOfStr(s string, allowed ...string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}
