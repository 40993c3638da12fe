// Package longpoll is the long-poll experiment (docs/experiments.md section 2):
// long-polls held open against the app's worker slots while closed-loop
// probes measure what is left. It also watches the app's workers: how
// many long-polls each holds (stack.HeldCounter), because a Gunicorn
// worker accepts whether or not it has a free thread, so the number that
// decides whether a probe waits is the busiest worker's, not the total.
//
// Its load (holders and probes) runs in `slowlab probe-loop`
// (RunProbeLoop), a child in the load generator's cgroup, whose result
// lines the session writes as rows and summarizes as they arrive.
//
// Its runs go through lab.Matrix, the one run loop (--resume, the
// host-CPU guard, progress): one run per condition and repetition, whose
// row in longpoll-runs.csv says how it ended; groups.csv has the figures
// of each run that ended ok, from which the summary over the repetitions
// is computed.
//
// It owns its scenario schema and flags, its run, its results files
// (Probe rows in probes.csv, Group rows in groups.csv, RunRow rows in
// longpoll-runs.csv, beside recorder's resource-samples.csv) with their
// aggregation (ProbeSummary, CountWaves, Summarize, Compare and
// FisherExact), its runs table declared once for the CLI and the report,
// and its report section with its figure (Section).
package longpoll

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slowlab/slowlab/internal/cliflag"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// Name is the experiment's name.
const Name = "long-poll"

// Config is the experiment: its YAML tags are its scenario schema.
type Config struct {
	lab.Common `yaml:",inline"`
	Conditions []Condition  `yaml:"conditions"`
	Seconds    lab.Duration `yaml:"seconds"`    // probing window (S)
	Wait       lab.Duration `yaml:"wait"`       // each long-poll's wait
	Lead       lab.Duration `yaml:"lead"`       // probes start this long after the holders
	ProbePath  string       `yaml:"probe_path"` // the probe endpoint
	// KeepAlive has holders and probes reuse their connections, as browsers
	// and API clients do; a kept-alive connection stays with the worker that
	// accepted it. Off: a new connection per request.
	KeepAlive bool `yaml:"keepalive"`
}

// Condition is one cell of the experiment.
type Condition struct {
	Server string `yaml:"server"` // a registered model: sync-W, gthread-WxT, uvicorn-W, ...
	Hold   int    `yaml:"hold"`   // long-polls held open (N)
	Probes int    `yaml:"probes"` // closed-loop probe workers (C)
}

// Published returns the published conditions: sync-2 holding 0 and 2
// with 20 probes; gthread 2x16 holding 0 and 20 with 20 and 8 probes;
// once each.
func Published() *Config {
	return &Config{Common: lab.PublishedCommon(Name, 1),
		Conditions: []Condition{{"sync-2", 0, 20}, {"sync-2", 2, 20},
			{"gthread-2x16", 0, 20}, {"gthread-2x16", 20, 20}, {"gthread-2x16", 0, 8}, {"gthread-2x16", 20, 8}},
		Seconds: lab.Duration(60 * time.Second), Wait: lab.Duration(30 * time.Second), Lead: lab.Duration(2 * time.Second),
		ProbePath: "/fast"}
}

// Targets implements lab.Targeting: the probes and the held long-polls.
func (c *Config) Targets() []stack.Target {
	return []stack.Target{stack.TargetFast, stack.TargetLongPoll}
}

// Servers implements lab.Stacked.
func (c *Config) Servers() []stack.Server {
	return lab.ParsedServers(c.Conditions, func(cond Condition) string { return cond.Server })
}

// Flags implements lab.Config.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var((*lab.DurationFlag)(&c.Seconds), "seconds", "probing window, e.g. 60s (a number is seconds)")
	fs.Var((*lab.DurationFlag)(&c.Wait), "wait", "how long each held request waits before its 204, e.g. 30s")
	fs.BoolVar(&c.KeepAlive, "keepalive", c.KeepAlive, "holders and probes reuse their connections (default: a new connection per request)")
	fs.Var(&cliflag.List[Condition]{To: &c.Conditions, Parse: parseCondition, Repeat: true}, "condition", "SERVER:HOLD:PROBES, e.g. gthread-2x16:31:8; repeat for more (default: the published six)")
	fs.BoolVar(&c.AcceptWhenFree, "accept-when-free", c.AcceptWhenFree, "embedded stack: gthread workers accept only while a thread is free (Gunicorn accepts regardless)")
}

// Validate implements lab.Config, naming each field by its YAML path.
func (c *Config) Validate() error {
	err := lab.ValidateConditions(c.Conditions, func(cond Condition) error {
		_, err := stack.ParseServer(cond.Server)
		switch {
		case err != nil:
			return err
		case cond.Hold < 0 || cond.Hold > 10000:
			return fmt.Errorf("hold %d: allowed 0 to 10000", cond.Hold)
		case cond.Probes < 1 || cond.Probes > 10000:
			return fmt.Errorf("probes %d: allowed 1 to 10000", cond.Probes)
		}
		return nil
	})
	switch {
	case err != nil:
		return err
	case c.Seconds <= 0 || time.Duration(c.Seconds) > 24*time.Hour:
		return fmt.Errorf("seconds %s: allowed more than 0 up to 24h", time.Duration(c.Seconds))
	case c.Wait <= 0 || time.Duration(c.Wait) > 10*time.Minute:
		return fmt.Errorf("wait %s: allowed more than 0 up to 10m", time.Duration(c.Wait))
	case c.Lead < 0:
		return fmt.Errorf("lead %s: must be 0 or more", time.Duration(c.Lead))
	case !strings.HasPrefix(c.ProbePath, "/"):
		return fmt.Errorf("probe_path %q: must start with /", c.ProbePath)
	case c.AcceptWhenFree && c.StackSpec.Stack != stack.NameEmbedded:
		return fmt.Errorf("accept_when_free: only the embedded stack has it (use --stack embedded); Gunicorn always accepts")
	}
	return nil
}

// parseCondition reads --condition SERVER:HOLD:PROBES.
func parseCondition(v string) (Condition, error) {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return Condition{}, errors.New("want SERVER:HOLD:PROBES, e.g. gthread-2x16:20:8")
	}
	srv, err := stack.ParseServer(parts[0])
	if err != nil {
		return Condition{}, err
	}
	hold, err := strconv.Atoi(parts[1])
	if err != nil || hold < 0 || hold > 10000 {
		return Condition{}, fmt.Errorf("hold %q: want 0 to 10000", parts[1])
	}
	probes, err := strconv.Atoi(parts[2])
	if err != nil || probes < 1 || probes > 10000 {
		return Condition{}, fmt.Errorf("probes %q: want 1 to 10000", parts[2])
	}
	return Condition{Server: srv.Name(), Hold: hold, Probes: probes}, nil
}

// RunID is the run id of a condition's rep: server, hold, probes, rep.
func (cond Condition) RunID(rep int) string {
	return fmt.Sprintf("%s.hold%d.probes%d.rep%d", cond.Server, cond.Hold, cond.Probes, rep)
}
