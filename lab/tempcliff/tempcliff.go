package tempcliff

import (
	"flag"
	"fmt"
	"time"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// Name is the experiment's name.
const Name = "temp-cliff"

// Config is the experiment (and temp-disk-full's): its YAML tags are the
// scenario schema.
type Config struct {
	lab.Common `yaml:",inline"`
	Conditions []Condition        `yaml:"conditions"`
	Fast       lab.FastSpec       `yaml:"fast"`
	SlowReader lab.SlowReaderSpec `yaml:"slow_reader"`
	// quick is the conditions --quick runs (Reduce), set by Published.
	quick []Condition
}

// Condition is one cell of the matrix; the route is always the proxy
// with buffering on.
type Condition struct {
	Server      string `yaml:"server"`
	SlowClients int    `yaml:"slow_clients"`
	// Size is each slow reader's /large.
	Size lab.Size `yaml:"size"`
	// MaxTempFileSize is proxy_max_temp_file_size: 0 is no temp file
	// (memory buffers only), else 64k to 1t.
	MaxTempFileSize lab.Size `yaml:"max_temp_file_size"`
	// TempTmpfs puts the proxy's temp dir on a tmpfs of this size (1m to
	// 1g) in a mount namespace of its own; 0 leaves it on disk.
	TempTmpfs lab.Size `yaml:"temp_tmpfs,omitempty"`
}

// Published values.
const (
	PublishedServer   = "sync-2"
	PublishedMaxTemp  = stack.DefaultMaxTempFileSize // 32m
	PublishedReadRate = 4 << 20                      // 4 MiB/s: a 64 MiB download in 16 s
)

// NewConfig returns experiment name's configuration with the published
// load and no conditions.
func NewConfig(name string) *Config {
	return &Config{Common: lab.PublishedCommon(name, 3),
		Fast:       lab.PublishedFast(),
		SlowReader: lab.PublishedSlowReader(PublishedReadRate)}
}

// Published returns the matrix: 2 slow readers on sync-2 of 16, 48 and
// 64 MiB against proxy_max_temp_file_size 32m, and of 16 and 48 MiB with
// 0 (memory buffers only); 3 repetitions at 4 MiB/s, /fast at 8 req/s for
// 9 s. --quick: 6 and 32 MiB against 8m, 16 MiB against 0, at 8 MiB/s
// (what lies beyond the limit must exceed the kernel's socket buffers
// for the app to be held: several MiB on loopback as they usually grow,
// but the proxy's receive buffer from the app is autotuned up to
// tcp_rmem's maximum, 32 MiB on Linux 6.18, where a 32 MiB response may
// then leave its worker at once; the shape test sizes its own from
// pathmodel's Most).
func Published() *Config {
	c := NewConfig(Name)
	for _, size := range []lab.Size{16 << 20, 48 << 20, 64 << 20} {
		c.Conditions = append(c.Conditions, Condition{Server: PublishedServer, SlowClients: 2, Size: size, MaxTempFileSize: PublishedMaxTemp})
	}
	for _, size := range []lab.Size{16 << 20, 48 << 20} {
		c.Conditions = append(c.Conditions, Condition{Server: PublishedServer, SlowClients: 2, Size: size})
	}
	c.SetQuick([]Condition{
		{Server: PublishedServer, SlowClients: 2, Size: 6 << 20, MaxTempFileSize: 8 << 20},
		{Server: PublishedServer, SlowClients: 2, Size: 32 << 20, MaxTempFileSize: 8 << 20},
		{Server: PublishedServer, SlowClients: 2, Size: 16 << 20},
	})
	return c
}

// SetQuick sets the conditions --quick runs.
func (c *Config) SetQuick(conds []Condition) { c.quick = conds }

// Reduce implements lab.Reducer: the quick conditions, slow readers at
// 8 MiB/s and /fast for 3 s.
func (c *Config) Reduce() {
	if c.quick != nil {
		c.Conditions = append([]Condition(nil), c.quick...)
	}
	c.SlowReader.ReadRate = 8 << 20
	c.Fast.Duration = lab.Duration(3 * time.Second)
}

// Flags implements lab.Config: everything else is in the scenario.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var((*lab.SizeFlag)(&c.SlowReader.ReadRate), "read-rate", "each slow reader's rate in bytes/s (k, m suffixes), e.g. 4m")
}

// Servers implements lab.Stacked.
func (c *Config) Servers() []stack.Server {
	return lab.ParsedServers(c.Conditions, func(cond Condition) string { return cond.Server })
}

// Routes implements lab.Routed: always the buffering proxy.
func (c *Config) Routes() []stack.Route { return []stack.Route{stack.RouteBufferingOn} }

// Validate implements lab.Config, naming each field by its YAML path.
func (c *Config) Validate() error {
	if err := lab.ValidateConditions(c.Conditions, Condition.validate); err != nil {
		return err
	}
	if err := c.Fast.Validate(); err != nil {
		return err
	}
	return c.SlowReader.Validate()
}

// Limits: beyond them a value is a typo.
const (
	maxSize        = 1 << 30
	minMaxTemp     = 64 << 10
	maxSlowClients = 100
)

func (cond Condition) validate() error {
	if _, err := stack.ParseServer(cond.Server); err != nil {
		return err
	}
	switch {
	case cond.SlowClients < 1 || cond.SlowClients > maxSlowClients:
		return fmt.Errorf("slow_clients %d: allowed 1 to %d", cond.SlowClients, maxSlowClients)
	case cond.Size < 1 || cond.Size > maxSize:
		return fmt.Errorf("size %s: allowed 1 byte to 1g", bytesize.Format(int64(cond.Size)))
	case cond.MaxTempFileSize != 0 && (cond.MaxTempFileSize < minMaxTemp || cond.MaxTempFileSize > stack.MaxMaxTempFileSize):
		return fmt.Errorf("max_temp_file_size %s: allowed 0 (memory buffers only) or 64k to 1t", bytesize.Format(int64(cond.MaxTempFileSize)))
	case cond.TempTmpfs != 0 && (cond.TempTmpfs < stack.MinTempTmpfs || cond.TempTmpfs > stack.MaxTempTmpfs):
		return fmt.Errorf("temp_tmpfs %s: allowed 0 (no tmpfs) or 1m to 1g", bytesize.Format(int64(cond.TempTmpfs)))
	}
	return nil
}

// RunSpec is one run of the matrix.
type RunSpec struct {
	Condition
	Server stack.Server
	Rep    int
}

// ID is the run's run_id: server, slow clients, size, max temp file size,
// the tmpfs when set, and rep.
func (r RunSpec) ID() string {
	id := fmt.Sprintf("%s.slow%d.%s.max%s", r.Server.Name(), r.SlowClients, bytesize.Format(int64(r.Size)), bytesize.Format(int64(r.MaxTempFileSize)))
	if r.TempTmpfs != 0 {
		id += ".tmpfs" + bytesize.Format(int64(r.TempTmpfs))
	}
	return fmt.Sprintf("%s.rep%d", id, r.Rep)
}

// Runs expands the matrix: every condition once per rep, reps outermost.
func (c *Config) Runs() []RunSpec {
	var runs []RunSpec
	for rep := 1; rep <= c.Reps; rep++ {
		for _, cond := range c.Conditions {
			s, _ := stack.ParseServer(cond.Server)
			runs = append(runs, RunSpec{Condition: cond, Server: s, Rep: rep})
		}
	}
	return runs
}

// Duration is a run's intrinsic length: the longer of the fast schedule
// and a download at the paced rate.
func (c *Config) Duration(size int64) time.Duration {
	return max(time.Duration(c.Fast.Offset+c.Fast.Duration), time.Duration(float64(size)/float64(c.SlowReader.ReadRate)*float64(time.Second)))
}
