package instrument

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slowlab/slowlab/child"
	"github.com/slowlab/slowlab/recorder"
)

// watcher runs `slowlab exporter` for one run, configured with exactly the
// run's processes, and restarts it on the same address if it dies, so a
// crash costs a gap of error rows rather than the rest of the run.
type watcher struct {
	argv    []string
	logPath string
	addr    string

	mu       sync.Mutex
	cur      *child.Process
	restarts int
	stopped  bool
	done     chan struct{}
}

// startWatcher starts the exporter for groups (component -> selectors),
// with the proxy group's error logs.
func startWatcher(ctx context.Context, exe, logPath string, groups map[string][]string, tempDirs, errorLogs []string) (*watcher, error) {
	argv := []string{exe, child.CmdExporter}
	argv = append(argv, child.ExporterListen.Arg("127.0.0.1:0")...)
	argv = append(argv, child.ExporterLogLevel.Arg("warn")...)
	names := make([]string, 0, len(groups))
	for name := range groups {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		argv = append(argv, child.ExporterGroup.Arg(name+"="+strings.Join(groups[name], ","))...)
	}
	for _, d := range tempDirs {
		argv = append(argv, child.ExporterTempDir.Arg(d)...)
	}
	for _, l := range errorLogs {
		argv = append(argv, child.ExporterErrorLog.Arg(ProxyGroup+"="+l)...)
	}
	c, err := child.Start(ctx, "exporter", logPath, argv, os.Environ())
	if err != nil {
		return nil, err
	}
	w := &watcher{argv: argv, logPath: logPath, addr: c.Ready()[child.KeyListen], cur: c, done: make(chan struct{})}
	go w.supervise()
	return w, nil
}

// URL is the exporter's /metrics.
func (w *watcher) URL() string { return "http://" + w.addr + "/metrics" }

func (w *watcher) pid() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur.PID()
}

func (w *watcher) supervise() {
	defer close(w.done)
	for {
		w.mu.Lock()
		c := w.cur
		w.mu.Unlock()
		<-c.Done()
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			return
		}
		w.restarts++
		n := w.restarts
		w.mu.Unlock()
		c.Stop(0)
		time.Sleep(ExporterRestartDelay)
		argv := slices.Clone(w.argv)
		argv[3] = w.addr // same address, so the sampler's URL stays valid
		nc, err := child.Start(context.Background(), "exporter", fmt.Sprintf("%s.restart%d", w.logPath, n), argv, os.Environ())
		w.mu.Lock()
		if err != nil || w.stopped {
			w.mu.Unlock()
			if nc != nil {
				nc.Stop(time.Second)
			}
			return
		}
		w.cur = nc
		w.mu.Unlock()
	}
}

// ExporterRestartDelay is how long a run's exporter stays down after it
// died before it is started again. A variable so that a test can hold the
// gap open for some of the sampler's ticks to fall in it.
var ExporterRestartDelay = 100 * time.Millisecond

// stop ends the exporter and its supervisor.
func (w *watcher) stop() {
	w.mu.Lock()
	w.stopped = true
	c := w.cur
	w.mu.Unlock()
	c.Stop(2 * time.Second)
	<-w.done
}

// sampling scrapes the exporter into resource-samples.csv for one run.
type sampling struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples []recorder.ResourceSample
	jitter  recorder.Jitter
	err     error
}

// minScrapeTimeout is the least a run's resource scrape may take. The
// sampler skips the ticks a long scrape overlaps (rows at their due
// times), so a slow scrape costs resolution, not order; a scrape cut at
// the interval (200 ms) is a row of errors instead of the values it was
// about to return: 8 of 11 ticks in a run beside another package's
// end-to-end tests.
const minScrapeTimeout = time.Second

// startSampling samples urls every interval from t0 until stopped, writing
// each row as it is measured; a scrape may take minScrapeTimeout.
func startSampling(urls []string, runID string, t0 time.Time, interval time.Duration, w *recorder.FileWriter[recorder.ResourceSample]) *sampling {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampling{cancel: cancel, done: make(chan struct{})}
	if interval == 0 {
		interval = recorder.DefaultInterval
	}
	sm := recorder.Sampler{URLs: urls, Interval: interval, Timeout: max(interval, minScrapeTimeout), Start: t0, RunID: runID,
		OnSample: func(r recorder.ResourceSample) error {
			s.mu.Lock()
			s.samples = append(s.samples, r)
			s.mu.Unlock()
			return w.Write(r)
		}}
	go func() {
		defer close(s.done)
		s.jitter, s.err = sm.Run(ctx)
	}()
	return s
}

// stop ends sampling and returns the rows.
func (s *sampling) stop() ([]recorder.ResourceSample, recorder.Jitter, error) {
	s.cancel()
	<-s.done
	return s.samples, s.jitter, s.err
}

func exporterLog(dir, runID string) string {
	return filepath.Join(dir, runID+"-exporter.log")
}

// writeTargets writes a Prometheus file_sd file listing this run's
// endpoints by job (or nothing, between runs), atomically so Prometheus
// never reads half a file.
func writeTargets(path, runID string, endpoints map[string]string) error {
	if path == "" {
		return nil
	}
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	groups := []group{}
	jobs := make([]string, 0, len(endpoints))
	for job := range endpoints {
		jobs = append(jobs, job)
	}
	slices.Sort(jobs)
	for _, job := range jobs {
		groups = append(groups, group{Targets: []string{endpoints[job]}, Labels: map[string]string{"job": job, recorder.RunLabel: runID}})
	}
	b, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("prometheus targets file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("prometheus targets file: %w", err)
	}
	return nil
}
