package longpoll

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slowlab/slowlab/loadgen"
)

// CmdProbeLoop is the slowlab subcommand that runs a long-poll run's load
// (its holders and closed-loop probes) as a child process in the load
// generator's cgroup: the session starts it, reads its result lines and
// writes the rows, outside the load generator's limits.
const CmdProbeLoop = "probe-loop"

// Result line kinds of the probe loop.
const (
	lineStart = "start"
	lineProbe = "probe"
	lineHold  = "hold"
)

// probeLoop is the command line of `slowlab probe-loop`.
type probeLoop struct {
	probeURL, holdURL, runID string
	workers, holders         int
	lead, window, timeout    time.Duration
	keepAlive, allowRemote   bool
}

// args is p as the child's command line.
func (p probeLoop) args() []string {
	return []string{CmdProbeLoop, "--probe-url", p.probeURL, "--hold-url", p.holdURL, "--run-id", p.runID,
		"--workers", fmt.Sprint(p.workers), "--holders", fmt.Sprint(p.holders), "--lead", p.lead.String(),
		"--window", p.window.String(), "--timeout", p.timeout.String(),
		fmt.Sprintf("--keepalive=%t", p.keepAlive), fmt.Sprintf("--allow-remote=%t", p.allowRemote)}
}

// RunProbeLoop is `slowlab probe-loop ARGS`: it starts --holders
// long-polls to --hold-url, prints a start line ("start T0_UNIX_NS", the
// instant after the holders started), and from --lead after T0
// --workers closed-loop workers probe --probe-url for --window; it prints
// a result line (loadgen.ParseResultLine) for every probe and every hold
// as it ends.
// Its requests are traced with tp when set. Not for people: the long-poll
// experiment runs it.
func RunProbeLoop(ctx context.Context, args []string, stdout io.Writer, tp trace.TracerProvider) error {
	fs := flag.NewFlagSet(CmdProbeLoop, flag.ContinueOnError)
	var p probeLoop
	fs.StringVar(&p.probeURL, "probe-url", "", "URL the probes get")
	fs.StringVar(&p.holdURL, "hold-url", "", "URL the long-polls get")
	fs.StringVar(&p.runID, "run-id", "", "run_id")
	fs.IntVar(&p.workers, "workers", 0, "closed-loop probe workers")
	fs.IntVar(&p.holders, "holders", 0, "long-polls held")
	fs.DurationVar(&p.lead, "lead", 0, "from the holders' start to the probing window's")
	fs.DurationVar(&p.window, "window", 0, "the probing window")
	fs.DurationVar(&p.timeout, "timeout", 0, "per-request timeout")
	fs.BoolVar(&p.keepAlive, "keepalive", false, "reuse connections")
	fs.BoolVar(&p.allowRemote, "allow-remote", false, "allow non-loopback targets")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if p.probeURL == "" || p.workers < 1 || p.window <= 0 || p.timeout <= 0 || p.lead < 0 || (p.holders > 0 && p.holdURL == "") {
		return fmt.Errorf("%s: want --probe-url, --workers, --window, --timeout, --lead (and --hold-url with --holders)", CmdProbeLoop)
	}
	return p.run(ctx, stdout, tp)
}

// run holds and probes; every result line is flushed as it is written, so
// a kill loses none already measured.
func (p probeLoop) run(ctx context.Context, stdout io.Writer, tp trace.TracerProvider) error {
	w := loadgen.NewLineWriter(stdout)
	emit := func(kind string, r loadgen.Result) { w.Line(loadgen.AppendResultLine(nil, kind, r), nil) }
	opts := loadgen.ClientOptions{Timeout: p.timeout, KeepAlive: p.keepAlive, AllowRemote: p.allowRemote, TracerProvider: tp}
	holdCtx, stopHolding := context.WithCancel(ctx)
	defer stopHolding()
	held := make(chan struct{})
	go func() {
		defer close(held)
		if p.holders == 0 {
			return
		}
		client := loadgen.NewClient(opts)
		defer client.Close()
		h := loadgen.Holders{Client: client, URL: p.holdURL, N: p.holders, RunID: p.runID,
			OnResult: func(r loadgen.Result) { emit(lineHold, r) }}
		h.Run(holdCtx)
	}()
	t0 := time.Now()
	w.Line(fmt.Appendf(nil, "%s %d\n", lineStart, t0.UnixNano()), nil)
	client := loadgen.NewClient(opts)
	defer client.Close()
	loop := loadgen.ClosedLoop{Client: client, URL: p.probeURL, Workers: p.workers, Start: t0.Add(p.lead), Duration: p.window,
		RunID: p.runID, OnResult: func(r loadgen.Result) { emit(lineProbe, r) }}
	loop.Run(ctx)
	stopHolding()
	<-held
	return w.Err()
}
