package appserver

import (
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Model is a worker model name.
type Model string

// Worker models; see the package doc.
const (
	ModelSync    Model = "sync"
	ModelGthread Model = "gthread"
	ModelAsync   Model = "async"
)

// Default sizes from docs/experiments.md section 1.
const (
	DefaultLargeSize = 16 << 20
	DefaultBlockSize = 64 << 10
	DefaultWorkers   = 2
	// MaxLongPollWait bounds /longpoll?wait= so a typo cannot hold a slot for a day.
	MaxLongPollWait = 10 * time.Minute
	// DefaultWorkerConnections is Gunicorn's worker_connections default: a
	// gthread worker stops accepting once it has this many connections open.
	DefaultWorkerConnections = 1000
)

// Options configures a Server.
type Options struct {
	Model     Model
	Workers   int   // W
	Threads   int   // T, gthread only
	LargeSize int64 // /large body size in bytes
	BlockSize int   // /large is written in blocks of this size
	// WorkerConnections bounds the connections a gthread worker has open
	// (accepted, queued for a thread, or kept alive); 0 means
	// DefaultWorkerConnections.
	WorkerConnections int
	// AcceptWhenFree makes a gthread worker accept only while one of its
	// threads is free. Gunicorn does not do this: its workers accept up to
	// worker_connections and queue requests for their threads, so a worker
	// whose threads are all held keeps taking requests that then wait. Set
	// it to see what the accept policy changes.
	AcceptWhenFree bool
	// TracerProvider, when set, gives every app request a server span
	// continuing the client's W3C traceparent. Nil: no tracing, no cost.
	TracerProvider trace.TracerProvider
	// LastByteTiming sends every response chunked, with its Server-Timing
	// again as a trailer timed through the last body byte handed to the
	// socket (LastByteTiming); the latency-gap experiment compares both.
	LastByteTiming bool
	// WorkerTimeout is Gunicorn's --timeout for the sync model: a worker
	// that spends longer than this on one connection (waiting for its
	// request, working on it or writing the response) has the connection
	// aborted, as Gunicorn kills the worker (see timeouts). 0: none (a
	// request header still has to arrive within 30 s). The gthread and
	// async models accept it and ignore it, as Gunicorn's gthread and
	// gevent workers do: their main thread (greenlet) reports alive while
	// connections are held.
	WorkerTimeout time.Duration
	// ErrorLog receives the server's log lines (a worker timeout's); nil
	// discards them.
	ErrorLog io.Writer
}

// DefaultOptions returns the published main condition: sync, 2 workers.
func DefaultOptions() Options {
	return Options{Model: ModelSync, Workers: DefaultWorkers, Threads: 1, LargeSize: DefaultLargeSize, BlockSize: DefaultBlockSize}
}

// Validate reports the first invalid field, naming the value and what is allowed.
func (o Options) Validate() error {
	spec, ok := specOf(o.Model)
	if !ok {
		return fmt.Errorf("model %q: allowed %s", o.Model, ModelNames(", "))
	}
	if o.Workers < 1 {
		return fmt.Errorf("workers %d: must be at least 1", o.Workers)
	}
	if o.Threads < 1 {
		return fmt.Errorf("threads %d: must be at least 1", o.Threads)
	}
	if !spec.Threads && o.Threads != 1 {
		return fmt.Errorf("threads %d: only the gthread model has threads (use 1)", o.Threads)
	}
	if o.LargeSize < 0 {
		return fmt.Errorf("large size %d: must be 0 or more bytes", o.LargeSize)
	}
	if o.BlockSize < 1 {
		return fmt.Errorf("block size %d: must be at least 1 byte", o.BlockSize)
	}
	if o.WorkerConnections < 0 {
		return fmt.Errorf("worker connections %d: must be 0 (Gunicorn's default, %d) or more", o.WorkerConnections, DefaultWorkerConnections)
	}
	if o.WorkerTimeout < 0 || o.WorkerTimeout > MaxWorkerTimeout {
		return fmt.Errorf("worker timeout %v: want 0 (none) up to %v", o.WorkerTimeout, MaxWorkerTimeout)
	}
	if o.Model != ModelGthread && (o.AcceptWhenFree || o.WorkerConnections != 0) {
		return fmt.Errorf("accept policy: only the gthread model has one (model %s)", o.Model)
	}
	return nil
}

// Slots is the number of requests the server works on at once (W*T), or 0
// for unbounded (async).
func (o Options) Slots() int {
	switch spec, _ := specOf(o.Model); {
	case spec.Threads:
		return o.Workers * o.Threads
	case spec.Sized:
		return o.Workers
	}
	return 0
}

// Name is the server label used in CSVs: sync-2, gthread-1x4, async.
func (o Options) Name() string {
	switch spec, _ := specOf(o.Model); {
	case spec.Threads:
		return fmt.Sprintf("%s-%dx%d", o.Model, o.Workers, o.Threads)
	case spec.Sized || spec.Model == "":
		return fmt.Sprintf("%s-%d", o.Model, o.Workers)
	}
	return string(o.Model)
}
