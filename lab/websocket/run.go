package websocket

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// Run implements lab.Config: every run of the matrix on a fresh stack
// (lab.Plan), writing ws-sessions.csv, ws-runs.csv, requests.csv,
// resource-samples.csv and environment.json. A socket the server refused
// or ended is an outcome in ws-sessions.csv, not a failed run.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	return lab.Plan[RunSpec, Session, RunRow]{
		Specs:    func() ([]RunSpec, []string) { return c.Runs(env.Stack) },
		Check:    func(specs []RunSpec) error { return holdable(env.Stack, specs) },
		Expected: func(RunSpec) time.Duration { return c.Hold() },
		Measure:  c.measure,
		Line:     runLine,
	}.Run(ctx, env, c, &Result{})
}

// holdable refuses, before anything starts, a run whose server cannot
// hold a WebSocket on st, naming the models that can.
func holdable(st stack.Stack, specs []RunSpec) error {
	for _, s := range specs {
		if ok, why := st.HoldsWebSocket(s.Server.Model); !ok {
			can := slices.DeleteFunc(st.Models(), func(m string) bool { ok, _ := st.HoldsWebSocket(m); return !ok })
			return fmt.Errorf("server %s on the %s stack: %s; run a server of model %s", s.Server.Name(), st.Name, why, strings.Join(can, ", "))
		}
	}
	return nil
}

// runLine is the progress line of a finished run.
func runLine(r RunRow) string {
	return fmt.Sprintf("sockets %d opened, %d held, %d refused; app held %s on %s workers; fast %d/%d ok, p95 %s ms  [%s]",
		r.Opened, r.Held, r.Refused, lab.Num(r.HeldMax, 0), lab.Num(r.WorkersHoldingMax, 0), r.FastOK, r.FastTotal, lab.Num(r.P95MS, 1),
		lab.StatusText(r.Status, r.Reason))
}

// measure performs one run: a fresh stack, the instruments, the sockets
// and the /fast schedule, the held-socket samples, then the verdict. Its
// error is only for results that could not be written.
func (c *Config) measure(ctx context.Context, env *lab.Env, spec RunSpec, id string, f *lab.RunFiles[Session, RunRow]) (RunRow, error) {
	run := RunRow{RunKey: lab.RunKey{RunID: id, Route: string(spec.Route), Server: spec.Server.Name(), Clients: spec.Sockets, Rep: spec.Rep},
		Mode: cmp.Or(spec.Mode, ModeIdle), Queue: c.Queue(spec.Condition),
		HoldS: c.Hold().Seconds(), PingS: time.Duration(spec.Ping).Seconds(), ReadTimeoutS: time.Duration(spec.ProxyReadTimeout).Seconds(),
		StartedAt: time.Now().UTC(), Status: recorder.RunOK}
	run.Workers, run.Slots = lab.Capacity(spec.Server)
	d := stack.Deployment{RunID: id, Route: spec.Route, Server: spec.Server, ProxyReadTimeout: time.Duration(spec.ProxyReadTimeout)}
	fr, err := lab.StartFresh(ctx, env, d, false)
	if err != nil {
		return lab.Failed(ctx, run, err), nil
	}
	defer fr.Close()

	l, res, sampErr := lab.SampledLoad(fr, f.Resources, func(t0 time.Time) lab.Clients[Session] {
		stopHeld := stack.SampleRunHeld(ctx, env, fr.Running, id, "sockets")
		defer stopHeld(&run.HeldMax, &run.WorkersHoldingMax)
		return c.load(ctx, env, fr.Running, spec, run, t0, f)
	})
	run.FastPlanned = l.Planned
	run = SummarizeRun(run, l.Reqs, l.Rows)
	run.AppMemPeakMiB, run.AppRSSPeakMiB = recorder.MemoryPeakMiB(res.App), lab.MiB(res.App.RSSPeakBytes)
	if kills, ok := fr.Running.OOMKills()["app"]; ok {
		run.AppOOMKills = recorder.Some(float64(kills))
	}
	return run, lab.Judge(ctx, lab.VerdictOf(&run), fr.Running, errors.Join(l.WriteErr, sampErr),
		lab.FastAccounted(run.FastTotal, run.FastPlanned), lab.Accounted(len(l.Rows), spec.Sockets, "sockets"))
}

// load opens the sockets at t0 and, Fast.Offset later, starts the
// open-loop /fast schedule; each socket is held until the schedule's end
// and gets its row as it ends.
func (c *Config) load(ctx context.Context, env *lab.Env, running *stack.Running, spec RunSpec, run RunRow, t0 time.Time, f *lab.RunFiles[Session, RunRow]) lab.Clients[Session] {
	path := c.Socket.Path + "?" + c.Params(spec.Condition).Query()
	return lab.RunClients(ctx, env, c.Fast, running, run.Meta(), t0, f, path, true, func(i int, u *url.URL) Session {
		dial := loadgen.WSDial{URL: u, Timeout: time.Duration(c.Socket.Timeout), AllowRemote: running.AllowRemote(), RcvBuf: int(c.Socket.Push.RcvBuf)}
		var r loadgen.WSResult
		var delays []float64
		if spec.Mode == ModeConsume {
			r, delays = c.consume(ctx, dial)
		} else {
			r = loadgen.WSHolder{WSDial: dial, Hold: c.Hold(), Ping: time.Duration(spec.Ping)}.Run(ctx)
		}
		row := sessionRow(run, i, t0, r)
		row.DelayP95MS = recorder.Some(recorder.NearestRank(delays, 95))
		return row
	})
}

// consume reads the app's pushes until it closes, the path ends the
// session or the hold is over (then the session counts as held): the
// result and each message's delivery delay in ms.
func (c *Config) consume(ctx context.Context, dial loadgen.WSDial) (loadgen.WSResult, []float64) {
	hold, cancel := context.WithTimeout(ctx, c.Hold())
	defer cancel()
	var delays []float64
	r := loadgen.WSConsumer{WSDial: dial, Rate: float64(c.Socket.Push.Rate), OnMessage: func(d loadgen.WSDelivery) {
		delays = append(delays, float64(d.Delay().Microseconds())/1e3)
	}}.Run(hold)
	if ctx.Err() == nil && errors.Is(r.Err, context.DeadlineExceeded) && hold.Err() != nil {
		r.End, r.Err = EndHeld, nil
	}
	return r, delays
}

// sessionRow is one socket's row.
func sessionRow(run RunRow, client int, t0 time.Time, r loadgen.WSResult) Session {
	row := Session{ClientKey: lab.ClientKey{RunKey: run.RunKey, Client: client},
		StartS: r.Start.Sub(t0).Seconds(), HeldS: r.Duration.Seconds(), End: r.End, Pings: r.Pings, Pongs: r.Pongs,
		Status: r.Status, Messages: r.Messages, Bytes: r.Bytes}
	if r.Status == 101 {
		row.HandshakeMS = recorder.Some(float64(r.Handshake.Microseconds()) / 1e3)
	}
	if r.CloseCode >= 0 {
		row.CloseCode = recorder.Some(float64(r.CloseCode))
	}
	if r.Status > 0 && r.Status != 101 {
		row.End = EndRefused
	}
	if r.Err != nil {
		row.Error = r.Err.Error()
	}
	return row
}
