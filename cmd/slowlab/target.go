package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/child"
)

func init() {
	register(command{name: "target", summary: "run the embedded lab server (Gunicorn-like worker models)", run: runTarget})
}

func runTarget(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("target", "--model "+appserver.ModelNames("|")+" --workers N [--threads T] --listen ADDR --admin ADDR", stdout)
	o := appserver.DefaultOptions()
	model := fs.String(string(child.TargetModel), string(o.Model), "worker model: "+appserver.ModelHelp())
	fs.IntVar(&o.Workers, string(child.TargetWorkers), o.Workers, "number of workers (W)")
	fs.IntVar(&o.Threads, string(child.TargetThreads), o.Threads, "threads per worker (T), gthread only")
	fs.IntVar(&o.WorkerConnections, "worker-connections", 0, "gthread: connections a worker keeps open before it stops accepting (0: Gunicorn's default, 1000)")
	fs.BoolVar(&o.AcceptWhenFree, string(child.TargetAcceptWhenFree), false, "gthread: a worker accepts only while one of its threads is free (Gunicorn accepts regardless and queues)")
	fs.DurationVar(&o.WorkerTimeout, string(child.TargetWorkerTimeout), 0, "sync: abort a worker's connection once the worker has spent this long on it, as Gunicorn's --timeout kills the worker (0: none)")
	large := fs.String(string(child.TargetLargeSize), "16m", "body size of /large (bytes; suffixes k, m, g are KiB, MiB, GiB)")
	block := fs.String("block-size", "64k", "/large is written as one block of this size repeated (bytes; k, m suffixes)")
	listen := fs.String(string(child.TargetListen), "127.0.0.1:0", "app address (port 0 picks a free port)")
	admin := fs.String(string(child.TargetAdmin), "127.0.0.1:0", "admin address for /metrics, /healthz, /app-send; outside the worker pool")
	tracing := addTracingFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o.Model = appserver.Model(*model)
	var err error
	if o.LargeSize, err = byteSizeFlag("large-size", *large); err != nil {
		return err
	}
	bs, err := byteSizeFlag("block-size", *block)
	if err != nil {
		return err
	}
	o.BlockSize = int(bs)
	if err := o.Validate(); err != nil {
		return usagef("--%v", err)
	}
	if err := tracing.validate(); err != nil {
		return err
	}
	if err := parsedOnly(ctx); err != nil {
		return err
	}
	tp, stopTracing, err := tracing.start(ctx, "slowlab-target", stderr)
	if err != nil {
		return err
	}
	defer stopTracing()
	o.TracerProvider = tp
	o.ErrorLog = stderr
	srv, err := appserver.New(o)
	if err != nil {
		return usagef("--%v", err)
	}
	appLn, err := net.Listen("tcp", *listen)
	if err != nil {
		return listenError("--listen", *listen, err)
	}
	adminLn, err := net.Listen("tcp", *admin)
	if err != nil {
		appLn.Close()
		return listenError("--admin", *admin, err)
	}
	fmt.Fprintln(stdout, child.ReadyLine(child.Field{Key: child.KeyListen, Value: appLn.Addr().String()},
		child.Field{Key: child.KeyAdmin, Value: adminLn.Addr().String()}, child.Field{Key: child.KeyModel, Value: o.Name()},
		child.Field{Key: child.KeySlots, Value: strconv.Itoa(o.Slots())}))
	return srv.Serve(ctx, appLn, adminLn)
}

// listenError is the error of listening on the address flag gave: an
// address another process holds is a failure (exit 1, as slowlab proxy
// and slowlab-exporter say it), not a mistake on the command line; any
// other (an address that is not one, or not this machine's) is a usage
// error.
func listenError(flag, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s %q: %w", flag, addr, err)
	}
	return usagef("%s %q: %v", flag, addr, err)
}
