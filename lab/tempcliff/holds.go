package tempcliff

import (
	"fmt"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/lab/pathmodel/holds"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// MayHold implements holds.MayHolder: temp-cliff's finding needs the app
// held above proxy_max_temp_file_size and with 0 (memory buffers only),
// so those conditions are judged. Left out: a temp dir on a tmpfs too
// small for its temp files (the tmpfs, which the model does not know,
// bounds them: temp-disk-full's subject), and temp-disk-full itself,
// which shares this config.
func (c *Config) MayHold(net *recorder.NetSettings) []string {
	if c.Experiment != Name {
		return nil
	}
	var conds []holds.Condition
	for _, cond := range c.Conditions {
		size, maxTemp := int64(cond.Size), int64(cond.MaxTempFileSize)
		if maxTemp != 0 && size <= maxTemp || cond.TempTmpfs != 0 && int64(cond.TempTmpfs) < int64(cond.SlowClients)*maxTemp {
			continue // the app is expected free, or the tmpfs decides
		}
		conds = append(conds, holds.Condition{Name: conditionText(cond), Download: pathmodel.DownloadOf(stack.Deployment{Route: stack.RouteBufferingOn,
			LargeSize: size, MaxTempFileSize: &maxTemp}, int64(c.SlowReader.RcvBuf))})
	}
	return holds.Warnings(net, conds)
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
// first run; a config Run refuses says nothing.
func (c *Config) warnMayHold(env *lab.Env) {
	if lab.RefuseExternal(c) == nil && c.Validate() == nil {
		holds.Log(env, c)
	}
}
