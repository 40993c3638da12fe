package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// send runs the load from t0: this shard's slow readers and its open
// loop, with a progress line on stderr every progressEvery unless
// --quiet. Results are streamed into the files and the summary, never
// kept: the memory of a long run does not grow with its requests.
func (r *loadgenRun) send(ctx context.Context, client *loadgen.Client, h2 *loadgen.H2Conn, metrics *loadgen.Metrics,
	files *loadgenFiles, meta recorder.RunMeta, t0 time.Time, stderr io.Writer) (*loadgen.Summary, []loadgen.Download) {
	var wg sync.WaitGroup
	var downloads []loadgen.Download
	for i := r.shard; i < r.f.slow; i += r.count {
		downloads = append(downloads, loadgen.Download{Client: i})
	}
	live := &liveSummary{sum: loadgen.NewSummary()}
	live.readers.Store(int64(len(downloads)))
	for k := range downloads {
		wg.Go(func() {
			defer live.readers.Add(-1)
			downloads[k] = r.sr.Run(ctx, downloads[k].Client)
		})
	}
	loop := loadgen.OpenLoop{Client: client, H2: h2, URL: r.u.String(), Pacer: r.pacer, Start: t0.Add(r.f.offset), RunID: r.f.runID, Metrics: metrics,
		MaxLag: r.f.maxLag, DiscardResults: true, RawSleep: r.f.pacerSleep == "raw",
		OnSend: func(int) { live.inFlight.Add(1) },
		OnResult: func(res loadgen.Result) {
			live.add(res)
			files.request(loadgen.RequestRow(meta, t0, res))
		}}
	stopProgress := func() {}
	if !r.f.quiet {
		stopProgress = startProgress(stderr, t0, r.f.offset+r.f.duration, live.progress, live.waiting)
	}
	loop.Run(ctx)
	wg.Wait()
	stopProgress()
	return live.sum, downloads
}

// liveSummary is a run's summary as it grows: the open loop adds each
// result, the progress lines read it meanwhile, so that they count as
// the final summary does.
// inFlight counts the requests started and not answered, readers the
// slow readers not done: what a run waits for after its schedule.
type liveSummary struct {
	mu                sync.Mutex
	sum               *loadgen.Summary
	inFlight, readers atomic.Int64
}

func (l *liveSummary) add(res loadgen.Result) {
	if !res.NotSent && !res.Skipped {
		l.inFlight.Add(-1)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sum.Add(res)
}

// waiting says what the run waits for once its schedule is done: "N in
// flight", and " and M slow reader(s)" while some read.
func (l *liveSummary) waiting() string {
	s := fmt.Sprintf("%d in flight", max(l.inFlight.Load(), 0))
	if n := l.readers.Load(); n > 0 {
		s += fmt.Sprintf(" and %d slow reader(s)", n)
	}
	return s
}

func (l *liveSummary) progress() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sum.Progress()
}

// progressEvery is how often `slowlab loadgen` prints a progress line
// (tests shorten it).
var progressEvery = 5 * time.Second

// startProgress writes "progress ELAPSED/TOTAL: " and line() to w every
// progressEvery, ELAPSED counted from start, until the returned stop is
// called; stop returns once the last line is written. Past TOTAL, the
// schedule done and the run waiting for its last requests and slow
// readers, the line says so instead: "progress schedule done, waiting for
// " and waiting().
func startProgress(w io.Writer, start time.Time, total time.Duration, line, waiting func() string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	tick := time.NewTicker(progressEvery)
	wg.Go(func() {
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				elapsed := max(time.Since(start), 0).Round(100 * time.Millisecond)
				if elapsed > total {
					fmt.Fprintf(w, "progress schedule done, waiting for %s: %s\n", waiting(), line())
					continue
				}
				fmt.Fprintf(w, "progress %v/%v: %s\n", elapsed, total, line())
			case <-done:
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
