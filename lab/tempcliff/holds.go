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
		size, maxTemp, tmpfs := int64(cond.Size), int64(cond.MaxTempFileSize), int64(cond.TempTmpfs)
		if judged(cond.SlowClients, size, maxTemp, tmpfs) {
			conds = append(conds, holds.Condition{Name: conditionText(cond.Server, cond.SlowClients, size, maxTemp, tmpfs),
				Download: pathmodel.DownloadOf(stack.Deployment{Route: stack.RouteBufferingOn, LargeSize: size, MaxTempFileSize: &maxTemp},
					int64(c.SlowReader.RcvBuf))})
		}
	}
	return holds.Warnings(net, conds)
}

// Measured implements holds.MayHolder: the conditions MayHold judges as
// dir's files measured them (their ok runs' complete downloads in
// large-responses.csv).
func (c *Config) Measured(dir string) []holds.Measured {
	d, err := ReadData(dir)
	if c.Experiment != Name || err != nil {
		return nil
	}
	var out []holds.Measured
	for i, s := range d.Conds {
		if !judged(s.SlowClients, s.SizeBytes, s.MaxTempFileBytes, s.TempTmpfsBytes) {
			continue
		}
		var app, recv []float64
		for _, l := range d.downloads[i] {
			if l.Complete && l.AppSendS.Valid {
				app, recv = append(app, l.AppSendS.Value), append(recv, l.ReceiveS)
			}
		}
		out = append(out, holds.Medians(conditionText(s.Server, s.SlowClients, s.SizeBytes, s.MaxTempFileBytes, s.TempTmpfsBytes),
			s.SizeBytes, app, recv))
	}
	return out
}

// judged says whether MayHold and Measured judge a condition: its app
// is expected held (over the temp limit, or with 0) and no tmpfs too
// small for its temp files decides.
func judged(slow int, size, maxTemp, tmpfs int64) bool {
	return !(maxTemp != 0 && size <= maxTemp || tmpfs != 0 && tmpfs < int64(slow)*maxTemp)
}

// conditionText names a condition in a warning: "temp-cliff sync-2, 2
// slow, 32m, max temp 8m".
func conditionText(server string, slow int, size, maxTemp, tmpfs int64) string {
	s := fmt.Sprintf("%s %s, %d slow, %s, max temp %s", Name, server, slow, bytesize.Format(size), bytesize.Format(maxTemp))
	if tmpfs != 0 {
		s += ", tmpfs " + bytesize.Format(tmpfs)
	}
	return s
}

// warnMayHold logs MayHold's lines for the session's namespace before the
// first run, or, after the runs (done), those of the conditions whose
// downloads the path held (holds.Log); a config Run refuses says
// nothing.
func (c *Config) warnMayHold(env *lab.Env, done bool) {
	if lab.RefuseExternal(c) == nil && c.Validate() == nil {
		holds.Log(env, c, done)
	}
}
