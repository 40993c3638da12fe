package stalledreader

import (
	"fmt"
	"path/filepath"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/lab/pathmodel/holds"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// MayHold implements holds.MayHolder: stalled and slow readers of a
// worker server are meant to hold a worker on a route whose proxy does
// not read ahead (direct, buffering off); if the path holds /large the
// app is rid of it before the stall and no worker times out. The whole
// response is judged, though a stalled reader takes client.stall_after
// first (64 KiB as published). Left out: a buffering route (the proxy's
// send_timeout is its finding), the async server (no worker to hold), an
// external stack.
func (c *Config) MayHold(net *recorder.NetSettings) []string {
	size := int64(c.Size)
	var conds []holds.Condition
	for _, cond := range c.Conditions {
		if c.judged(cond.Route, cond.Server) {
			conds = append(conds, holds.Condition{Name: conditionText(cond.Route, cond.Server, cond.Mode, cond.Clients, size),
				Download: pathmodel.DownloadOf(stack.Deployment{Route: cond.Route, LargeSize: size}, int64(c.Client.RcvBuf))})
		}
	}
	return holds.Warnings(net, conds)
}

// Measured implements holds.MayHolder: the conditions MayHold judges as
// dir's files measured them: the downloads in stalled-downloads.csv of
// their ok runs whose app's worker was not killed (a WORKER TIMEOUT ends
// the app's send early, though the app was held: its runs are left out),
// complete or cut; client_receive_s is last_byte_s, the stall included.
func (c *Config) Measured(dir string) []holds.Measured {
	runs, err := recorder.ReadFile[RunRow](filepath.Join(dir, runFile))
	downloads, dErr := recorder.ReadFile[Download](filepath.Join(dir, downloadFile))
	if err != nil || dErr != nil {
		return nil
	}
	d := newSectionData(runs, downloads)
	killed := map[string]bool{}
	for _, r := range runs {
		killed[r.RunID] = r.WorkerTimeouts.Value > 0
	}
	var out []holds.Measured
	for i, s := range d.conds {
		if !c.judged(stack.Route(s.Route), s.Server) {
			continue
		}
		var app, recv []float64
		for _, dl := range d.downloads[i] {
			if !killed[dl.RunID] && dl.AppSendS.Valid && dl.LastByteS.Valid {
				app, recv = append(app, dl.AppSendS.Value), append(recv, dl.LastByteS.Value)
			}
		}
		out = append(out, holds.Medians(conditionText(stack.Route(s.Route), s.Server, s.Mode, s.Clients, s.SizeBytes), s.SizeBytes, app, recv))
	}
	return out
}

// judged says whether MayHold and Measured judge a condition: a worker
// server on a route whose proxy does not read ahead.
func (c *Config) judged(route stack.Route, server string) bool {
	return c.External == nil && !route.Buffering() && server != stack.AsyncServer
}

// conditionText names a condition in a warning: "stalled-reader direct
// sync-2, stall, clients 2, 16m".
func conditionText(route stack.Route, server, mode string, clients int, size int64) string {
	return fmt.Sprintf("%s %s %s, %s, clients %d, %s", Name, route, server, mode, clients, bytesize.Format(size))
}

// warnMayHold logs MayHold's lines for the session's namespace before the
// first run, or, after the runs (done), those of the conditions whose
// downloads the path held (holds.Log); an invalid config says
// nothing (Run refuses it).
func (c *Config) warnMayHold(env *lab.Env, done bool) {
	if env.Stack.External == nil && c.Validate() == nil {
		holds.Log(env, c, done)
	}
}
