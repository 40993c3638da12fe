package slowclient

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

// MayHold implements holds.MayHolder: slow clients are meant to hold the
// app on a route whose proxy does not read the response ahead of them
// (direct, buffering off, a relaying proxy), so those are judged. Left
// out: a buffering route (freeing the app is its finding), /large with
// backpressure off (the app does not wait for the socket), an external
// stack (its settings are not this machine's).
func (c *Config) MayHold(net *recorder.NetSettings) []string {
	size := int64(c.Large.Size)
	var conds []holds.Condition
	for _, cond := range c.Conditions {
		if c.judged(string(cond.Route), cond.SlowClients) {
			conds = append(conds, holds.Condition{Name: c.conditionText(string(cond.Route), cond.Server, cond.SlowClients),
				Download: pathmodel.DownloadOf(stack.Deployment{Route: cond.Route, LargeSize: size}, int64(c.SlowReader.RcvBuf))})
		}
	}
	return holds.Warnings(net, conds)
}

// Measured implements holds.MayHolder: the conditions MayHold judges as
// dir's runs.csv measured them (its ok runs, as conditions.csv sums them
// up: app_send_s and client_receive_s are medians over the runs of each
// run's median complete download).
func (c *Config) Measured(dir string) []holds.Measured {
	runs, err := recorder.ReadFile[recorder.Run](filepath.Join(dir, runsFile))
	if err != nil {
		return nil
	}
	var out []holds.Measured
	for _, cond := range recorder.SummarizeConditions(runs) {
		if c.judged(cond.Route, cond.SlowClients) {
			out = append(out, holds.Measured{Name: c.conditionText(cond.Route, cond.Server, cond.SlowClients), Size: int64(c.Large.Size),
				AppSendS: cond.AppSendS, ReceiveS: cond.ClientReceiveS})
		}
	}
	return out
}

// judged says whether MayHold and Measured judge a condition: slow
// clients on a route whose proxy does not read ahead.
func (c *Config) judged(route string, slow int) bool {
	return c.External == nil && c.Large.Backpressure != "off" && c.Large.Size > 0 && slow > 0 && !stack.Route(route).Buffering()
}

// conditionText names a condition in a warning: "slow-client direct
// sync-2, 2 slow, 16m".
func (c *Config) conditionText(route, server string, slow int) string {
	return fmt.Sprintf("%s %s %s, %d slow, %s", Name, route, server, slow, bytesize.Format(int64(c.Large.Size)))
}

// SkipMayHold leaves MayHold's warnings out of the session's log: for a
// caller that predicts the path itself (buffer-sweep, whose cells are
// sized to fit and not to fit).
func (c *Config) SkipMayHold() { c.skipMayHold = true }

// warnMayHold logs MayHold's lines for the session's namespace before the
// first run, or, after the runs (done), those of the conditions whose
// downloads the path held (holds.Log).
func (c *Config) warnMayHold(env *lab.Env, done bool) {
	if !c.skipMayHold && env.Stack.External == nil {
		holds.Log(env, c, done)
	}
}
