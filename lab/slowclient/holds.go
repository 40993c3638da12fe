package slowclient

import (
	"fmt"

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
	if c.External != nil || c.Large.Backpressure == "off" || c.Large.Size <= 0 {
		return nil
	}
	size := int64(c.Large.Size)
	var conds []holds.Condition
	for _, cond := range c.Conditions {
		if cond.SlowClients > 0 && !cond.Route.Buffering() {
			conds = append(conds, holds.Condition{Name: fmt.Sprintf("%s %s %s, %d slow, %s", Name, cond.Route, cond.Server, cond.SlowClients,
				bytesize.Format(size)), Download: pathmodel.DownloadOf(stack.Deployment{Route: cond.Route, LargeSize: size}, int64(c.SlowReader.RcvBuf))})
		}
	}
	return holds.Warnings(net, conds)
}

// SkipMayHold leaves MayHold's warnings out of the session's log: for a
// caller that predicts the path itself (buffer-sweep, whose cells are
// sized to fit and not to fit).
func (c *Config) SkipMayHold() { c.skipMayHold = true }

// warnMayHold logs MayHold's lines for the session's namespace before the
// first run.
func (c *Config) warnMayHold(env *lab.Env) {
	if !c.skipMayHold && env.Stack.External == nil {
		holds.Log(env, c)
	}
}
