package slowclient

import (
	"fmt"
	"path/filepath"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/kernelnet"
	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// MayHold is, for each condition whose slow downloads are meant to hold
// the app (slow clients on a route whose proxy does not read the response
// ahead of them: direct, buffering off, a relaying proxy), a line saying
// the path may hold the whole response where the path model says so
// under net (the socket buffer settings of the session's namespace), from
// configuration only. None for a buffering route (freeing the app is its
// finding), for /large with backpressure off (the app does not wait for
// the socket), on an external stack (its settings are not this
// machine's), where the model has no prediction or net lacks what it
// needs.
func (c *Config) MayHold(net *recorder.NetSettings) []string {
	if c.External != nil || c.Large.Backpressure == "off" || c.Large.Size <= 0 {
		return nil
	}
	var out []string
	for _, cond := range c.Conditions {
		if cond.SlowClients < 1 || cond.Route.Buffering() {
			continue
		}
		size := int64(c.Large.Size)
		j, _ := pathmodel.JudgeDownload(net, pathmodel.Download{Route: cond.Route,
			Proxy:        stack.Deployment{Route: cond.Route, LargeSize: size}.ResponseBuffers(),
			ClientRcvBuf: int64(c.SlowReader.RcvBuf), Size: size})
		if j != nil && j.MayHold() {
			out = append(out, j.Warning(fmt.Sprintf("%s %s %s, %d slow, %s", Name, cond.Route, cond.Server, cond.SlowClients,
				bytesize.Format(size))))
		}
	}
	return out
}

// SkipMayHold leaves MayHold's warnings out of the session's log: for a
// caller that predicts the path itself (buffer-sweep, whose cells are
// sized to fit and not to fit).
func (c *Config) SkipMayHold() { c.skipMayHold = true }

// warnMayHold logs MayHold's lines for the session's namespace before the
// first run.
func (c *Config) warnMayHold(env *lab.Env) {
	if c.skipMayHold || env.Stack.External != nil {
		return
	}
	for _, w := range c.MayHold(kernelnet.Session()) {
		env.Logf("warning: %s", w)
	}
}

// noteMayHold adds to p, for the results directory dir, MayHold's lines
// under the settings its environment.json records for the scenario its
// scenario.yaml holds; nothing when either is missing or is not
// slow-client's.
func noteMayHold(p *report.Part, dir string) {
	cfg, err := lab.LoadScenario(filepath.Join(dir, lab.ScenarioFile), nil)
	if err != nil || cfg.Head().Experiment != Name {
		return
	}
	for _, n := range pathmodel.DirNotes(dir, cfg) {
		p.Note("%s", n)
	}
}
