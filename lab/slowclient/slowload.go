package slowclient

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/loadgen"
)

// CmdSlowLoad is the slowlab subcommand that runs a slow-client run's
// load (its slow readers and the open-loop /fast schedule) as a child
// process in the load generator's cgroup: the session starts it, reads
// its wire lines and writes the rows, samples the hops and the resources,
// all outside the load generator's limits.
const CmdSlowLoad = "slow-load"

// slowLoad is the command line of `slowlab slow-load`.
type slowLoad struct {
	largeURL, fastURL, runID string
	slow                     int
	rcvBuf, readSize         int
	readRate                 float64
	slowTimeout, fastTimeout time.Duration
	fastInterval, fastFor    time.Duration
	fastOffset               time.Duration
	allowRemote              bool
}

// args is l as the child's command line.
func (l slowLoad) args() []string {
	return []string{CmdSlowLoad, "--large-url", l.largeURL, "--fast-url", l.fastURL, "--run-id", l.runID,
		"--slow", fmt.Sprint(l.slow), "--rcvbuf", fmt.Sprint(l.rcvBuf), "--read-size", fmt.Sprint(l.readSize),
		"--read-rate", fmt.Sprint(l.readRate), "--slow-timeout", l.slowTimeout.String(), "--fast-timeout", l.fastTimeout.String(),
		"--fast-interval", l.fastInterval.String(), "--fast-for", l.fastFor.String(), "--fast-offset", l.fastOffset.String(),
		fmt.Sprintf("--allow-remote=%t", l.allowRemote)}
}

// parseSlowLoad reads the command line args makes.
func parseSlowLoad(args []string) (slowLoad, error) {
	fs := flag.NewFlagSet(CmdSlowLoad, flag.ContinueOnError)
	var l slowLoad
	fs.StringVar(&l.largeURL, "large-url", "", "URL the slow readers download")
	fs.StringVar(&l.fastURL, "fast-url", "", "URL of the open-loop schedule")
	fs.StringVar(&l.runID, "run-id", "", "run_id")
	fs.IntVar(&l.slow, "slow", 0, "slow readers")
	fs.IntVar(&l.rcvBuf, "rcvbuf", 0, "the slow readers' SO_RCVBUF (0: the kernel's default)")
	fs.IntVar(&l.readSize, "read-size", 0, "the slow readers' read size")
	fs.Float64Var(&l.readRate, "read-rate", 0, "the slow readers' rate, bytes/s")
	fs.DurationVar(&l.slowTimeout, "slow-timeout", 0, "a download's timeout")
	fs.DurationVar(&l.fastTimeout, "fast-timeout", 0, "a /fast request's timeout")
	fs.DurationVar(&l.fastInterval, "fast-interval", 0, "between scheduled /fast requests")
	fs.DurationVar(&l.fastFor, "fast-for", 0, "how long the schedule lasts")
	fs.DurationVar(&l.fastOffset, "fast-offset", 0, "from the start to the schedule's first request")
	fs.BoolVar(&l.allowRemote, "allow-remote", false, "allow non-loopback targets")
	if err := fs.Parse(args); err != nil {
		return l, err
	}
	switch {
	case fs.NArg() > 0:
		return l, fmt.Errorf("%s: unexpected arguments %q", CmdSlowLoad, fs.Args())
	case l.fastURL == "" || l.runID == "" || l.fastInterval <= 0 || l.fastFor <= 0 || l.fastTimeout <= 0 || l.fastOffset < 0:
		return l, fmt.Errorf("%s: want --fast-url, --run-id, --fast-interval, --fast-for, --fast-timeout and --fast-offset of 0 or more", CmdSlowLoad)
	case l.slow < 0 || l.slow > 0 && l.largeURL == "":
		return l, fmt.Errorf("%s: want --slow of 0 or more, and with slow readers --large-url", CmdSlowLoad)
	}
	if l.slow == 0 {
		return l, nil
	}
	// The slow readers' settings, by loadgen's rules, named by their flags.
	err := (loadgen.SlowReader{RcvBuf: l.rcvBuf, ReadSize: l.readSize, Rate: l.readRate, Timeout: l.slowTimeout}).Validate()
	err = lab.SettingPath("--", err, map[string]string{loadgen.SettingReadRate: "read-rate", loadgen.SettingReadSize: "read-size",
		loadgen.SettingTimeout: "slow-timeout"})
	if err != nil {
		return l, fmt.Errorf("%s: %w", CmdSlowLoad, err)
	}
	return l, nil
}

// RunSlowLoad is `slowlab slow-load ARGS`: it prints a start line (the
// run's t0), starts --slow slow readers of --large-url at once and from
// --fast-offset after t0 the open-loop schedule of --fast-url, and prints
// a wire line (loadgen.ParseWireLine) for every slow reader's connect,
// request and download and every scheduled /fast request as it starts
// and as it ends,
// each flushed as it is written, so a kill loses none already measured.
// Its requests are traced with tp when set. Not for people: the
// slow-client experiment runs it.
func RunSlowLoad(ctx context.Context, args []string, stdout io.Writer, tp trace.TracerProvider) error {
	l, err := parseSlowLoad(args)
	if err != nil {
		return err
	}
	return l.run(ctx, stdout, tp)
}

func (l slowLoad) run(ctx context.Context, stdout io.Writer, tp trace.TracerProvider) error {
	fast, err := loadgen.CheckTarget(l.fastURL, l.allowRemote)
	if err != nil {
		return err
	}
	var large = fast
	if l.slow > 0 {
		if large, err = loadgen.CheckTarget(l.largeURL, l.allowRemote); err != nil {
			return err
		}
	}
	w := loadgen.NewLineWriter(stdout)
	emit := func(line loadgen.WireLine) { w.Line(loadgen.AppendWireLine(nil, line)) }
	t0 := time.Now()
	emit(loadgen.WireLine{Kind: loadgen.KindStart, At: t0.UnixNano()})
	var wg sync.WaitGroup
	for i := range l.slow {
		sr := loadgen.SlowReader{URL: large, AllowRemote: l.allowRemote, RcvBuf: l.rcvBuf, ReadSize: l.readSize, Rate: l.readRate,
			Timeout: l.slowTimeout, RunID: l.runID, TracerProvider: tp,
			Header:    http.Header{appserver.RequestIDHeader: {slowID(l.runID, i)}},
			OnConnect: func(c int, _ netip.AddrPort) { emit(loadgen.WireLine{Kind: loadgen.KindConnect, Client: c}) },
			OnResult: func(r loadgen.Result) {
				emit(loadgen.WireLine{Kind: loadgen.KindSlow, Client: i, Result: loadgen.ToWire(r)})
			}}
		wg.Go(func() {
			d := sr.Run(ctx, i)
			emit(loadgen.WireLine{Kind: loadgen.KindDownload, Client: i, Download: loadgen.DownloadToWire(d)})
		})
	}
	client := loadgen.NewClient(loadgen.ClientOptions{Timeout: l.fastTimeout, TracerProvider: tp, AllowRemote: l.allowRemote})
	defer client.Close()
	loop := loadgen.OpenLoop{Client: client, URL: fast.String(), Pacer: loadgen.ConstantPacer{Interval: l.fastInterval, Duration: l.fastFor},
		Start: t0.Add(l.fastOffset), RunID: l.runID, Role: loadgen.RoleFast, DiscardResults: true,
		OnSend:   func(seq int) { emit(loadgen.WireLine{Kind: loadgen.KindSent, Seq: seq}) },
		OnResult: func(r loadgen.Result) { emit(loadgen.WireLine{Kind: loadgen.KindFast, Result: loadgen.ToWire(r)}) }}
	loop.Run(ctx)
	wg.Wait()
	if err := w.Err(); err != nil {
		return fmt.Errorf("%s: write results: %w", CmdSlowLoad, err)
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
