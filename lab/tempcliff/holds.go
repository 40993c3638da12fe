package tempcliff

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

// MayHold is, for each condition of temp-cliff whose finding needs the
// app held (a response over proxy_max_temp_file_size, or with 0, memory
// buffers only), a line saying the path may hold the whole response
// where the path model says so under net (the socket buffer settings of
// the session's namespace), from configuration only. None for a
// condition whose temp dir is on a tmpfs too small for its temp files
// (the tmpfs, which the model does not know, bounds them: temp-disk-full's
// subject), nor for another experiment sharing the config, nor where net
// lacks what the model needs.
func (c *Config) MayHold(net *recorder.NetSettings) []string {
	if c.Experiment != Name {
		return nil
	}
	var out []string
	for _, cond := range c.Conditions {
		size, maxTemp := int64(cond.Size), int64(cond.MaxTempFileSize)
		if maxTemp != 0 && size <= maxTemp || cond.TempTmpfs != 0 && int64(cond.TempTmpfs) < int64(cond.SlowClients)*maxTemp {
			continue // the app is expected free, or the tmpfs decides
		}
		j, _ := pathmodel.JudgeDownload(net, pathmodel.Download{Route: stack.RouteBufferingOn,
			Proxy:        stack.Deployment{Route: stack.RouteBufferingOn, LargeSize: size, MaxTempFileSize: &maxTemp}.ResponseBuffers(),
			ClientRcvBuf: int64(c.SlowReader.RcvBuf), Size: size})
		if j != nil && j.MayHold() {
			out = append(out, j.Warning(conditionText(cond)))
		}
	}
	return out
}

// conditionText names a condition in a warning: "temp-cliff sync-2, 2
// slow, 32m, max temp 8m".
func conditionText(cond Condition) string {
	s := fmt.Sprintf("%s %s, %d slow, %s, max temp %s", Name, cond.Server, cond.SlowClients, bytesize.Format(int64(cond.Size)),
		bytesize.Format(int64(cond.MaxTempFileSize)))
	if cond.TempTmpfs != 0 {
		s += ", tmpfs " + bytesize.Format(int64(cond.TempTmpfs))
	}
	return s
}

// warnMayHold logs MayHold's lines for the session's namespace before the
// first run; an invalid config says nothing (Run refuses it).
func (c *Config) warnMayHold(env *lab.Env) {
	if lab.RefuseExternal(c) != nil || c.Validate() != nil {
		return
	}
	for _, w := range c.MayHold(kernelnet.Session()) {
		env.Logf("warning: %s", w)
	}
}

// noteMayHold adds to p, for the results directory dir, MayHold's lines
// under the settings its environment.json records for the scenario its
// scenario.yaml holds; nothing when either is missing or is not
// temp-cliff's.
func noteMayHold(p *report.Part, dir string) {
	cfg, err := lab.LoadScenario(filepath.Join(dir, lab.ScenarioFile), nil)
	if err != nil || cfg.Head().Experiment != Name {
		return
	}
	for _, n := range pathmodel.DirNotes(dir, cfg) {
		p.Note("%s", n)
	}
}
