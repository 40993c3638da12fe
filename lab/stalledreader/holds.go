package stalledreader

import (
	"fmt"

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
	if c.External != nil {
		return nil
	}
	size := int64(c.Size)
	var conds []holds.Condition
	for _, cond := range c.Conditions {
		if !cond.Route.Buffering() && cond.Server != stack.AsyncServer {
			conds = append(conds, holds.Condition{Name: fmt.Sprintf("%s %s %s, %s, clients %d, %s", Name, cond.Route, cond.Server, cond.Mode,
				cond.Clients, bytesize.Format(size)), Download: pathmodel.DownloadOf(stack.Deployment{Route: cond.Route, LargeSize: size}, int64(c.Client.RcvBuf))})
		}
	}
	return holds.Warnings(net, conds)
}

// warnMayHold logs MayHold's lines for the session's namespace before the
// first run; an invalid config says nothing (Run refuses it).
func (c *Config) warnMayHold(env *lab.Env) {
	if env.Stack.External == nil && c.Validate() == nil {
		holds.Log(env, c)
	}
}
