package stalledreader

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

// MayHold is, for each condition whose readers are meant to hold a worker
// (stalled or slow readers of a worker server on a route whose proxy does
// not read ahead: direct, buffering off), a line saying the path may hold
// the whole /large where the path model says so under net (the socket
// buffer settings of the session's namespace), from configuration only:
// then the app is rid of it before the stall, and no worker times out.
// The whole response is judged, though a stalled reader takes
// client.stall_after first (64 KiB as published). None for a buffering
// route (the proxy's send_timeout is its finding), the async server
// (no worker to hold), an external stack, or where the model has no
// prediction or net lacks what it needs.
func (c *Config) MayHold(net *recorder.NetSettings) []string {
	if c.External != nil {
		return nil
	}
	var out []string
	for _, cond := range c.Conditions {
		if cond.Route.Buffering() || cond.Server == stack.AsyncServer {
			continue
		}
		size := int64(c.Size)
		j, _ := pathmodel.JudgeDownload(net, pathmodel.Download{Route: cond.Route,
			Proxy:        stack.Deployment{Route: cond.Route, LargeSize: size}.ResponseBuffers(),
			ClientRcvBuf: int64(c.Client.RcvBuf), Size: size})
		if j != nil && j.MayHold() {
			out = append(out, j.Warning(fmt.Sprintf("%s %s %s, %s, %d clients, %s", Name, cond.Route, cond.Server, cond.Mode, cond.Clients,
				bytesize.Format(size))))
		}
	}
	return out
}

// warnMayHold logs MayHold's lines for the session's namespace before the
// first run; an invalid config says nothing (Run refuses it).
func (c *Config) warnMayHold(env *lab.Env) {
	if env.Stack.External != nil || c.Validate() != nil {
		return
	}
	for _, w := range c.MayHold(kernelnet.Session()) {
		env.Logf("warning: %s", w)
	}
}

// noteMayHold adds to p, for the results directory dir, MayHold's lines
// under the settings its environment.json records for the scenario its
// scenario.yaml holds; nothing when either is missing or is not
// stalled-reader's.
func noteMayHold(p *report.Part, dir string) {
	cfg, err := lab.LoadScenario(filepath.Join(dir, lab.ScenarioFile), nil)
	if err != nil || cfg.Head().Experiment != Name {
		return
	}
	for _, n := range pathmodel.DirNotes(dir, cfg) {
		p.Note("%s", n)
	}
}
