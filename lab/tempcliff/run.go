package tempcliff

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/internal/bounded"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/instrument"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// files are the open results files of a session: large-responses.csv
// and temp-runs.csv, with requests.csv and resource-samples.csv.
type files = lab.RunFiles[recorder.LargeResponse, RunRow]

// Run implements lab.Config: every run of the matrix on a fresh stack
// (lab.Matrix: resume, the host-CPU guard, progress), writing
// temp-runs.csv, large-responses.csv, requests.csv, resource-samples.csv
// and environment.json, after a warning for each condition whose path may
// hold the whole response it expects to hold the app (MayHold) and before
// one for each whose downloads it held (Measured). A
// download the proxy cut (a full temp disk) is an outcome, not a failed
// run. Cancelling ctx keeps what was measured and
// returns ctx's error; the stack, and with it the proxy's tmpfs, is gone
// on every path.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	c.warnMayHold(env, false)
	res, err := lab.Plan[RunSpec, recorder.LargeResponse, RunRow]{Line: runLine, Measure: c.measure,
		Specs:    func() ([]RunSpec, []string) { return c.Runs(), nil },
		Expected: func(s RunSpec) time.Duration { return c.Duration(int64(s.Size)) }}.Run(ctx, env, c, &Result{})
	c.warnMayHold(env, true)
	return res, err
}

// runLine is the progress line of a finished run.
func runLine(r RunRow) string {
	return fmt.Sprintf("fast %d/%d ok, p95 %s ms; app_send %s s, receive %s s; downloads complete %d, cut %d (fewest bytes %d); temp peak %s MiB, temp fs avail min %s MiB, proxy errors %d, exporter temp write errors %s  [%s]",
		r.FastOK, r.FastTotal, lab.Num(r.P95MS, 1), lab.Num(r.AppSendS, 2), lab.Num(r.ReceiveS, 2), r.DownloadsComplete, r.DownloadsCut,
		r.BytesMin, lab.Num(r.TempPeakMiB, 1), lab.Num(r.TempFSAvailMinMiB, 2), r.ProxyErrors, lab.Num(r.ExporterTempWriteErrors, 0), lab.StatusText(r.Status, r.Reason))
}

// measure performs one run: a fresh stack, the instruments, the slow
// readers and the /fast schedule, then the run's verdict. Its error is
// only for results that could not be written.
func (c *Config) measure(ctx context.Context, env *lab.Env, spec RunSpec, id string, f *files) (RunRow, error) {
	run := RunRow{RunID: id, Route: string(stack.RouteBufferingOn), Server: spec.Server.Name(), SlowClients: spec.SlowClients,
		Rep: spec.Rep, SizeBytes: int64(spec.Size), MaxTempFileBytes: int64(spec.MaxTempFileSize), TempTmpfsBytes: int64(spec.TempTmpfs),
		StartedAt: time.Now().UTC(), Status: recorder.RunOK}
	maxTemp := int64(spec.MaxTempFileSize)
	fr, err := lab.StartFresh(ctx, env, stack.Deployment{RunID: id, Route: stack.RouteBufferingOn, Server: spec.Server,
		LargeSize: int64(spec.Size), MaxTempFileSize: &maxTemp, TempTmpfs: int64(spec.TempTmpfs)}, false)
	if err != nil {
		return lab.Failed(ctx, run, err), nil
	}
	defer fr.Close()

	t0 := time.Now()
	fr.Start(t0, f.Resources)
	pollCtx, stopPoll := context.WithCancel(ctx)
	avail := make(chan tempFSPoll, 1)
	go func() { avail <- pollTempFSAvail(pollCtx, fr.In.ExporterURL()) }()
	meta := recorder.RunMeta{RunID: id, Route: run.Route, Server: run.Server, SlowClients: spec.SlowClients, Rep: spec.Rep}
	l := c.load(ctx, env, fr.Running, meta, t0, f)
	end := time.Now()
	stopPoll()
	polled := <-avail
	polled.note(env, id)
	run.TempFSAvailMinMiB = polled.least
	run.FastPlanned = l.Planned
	larges, sendErr, largeErr := c.downloads(ctx, fr.Running, meta, l.Rows, f)
	rs, sampErr := fr.Sampled(end)
	run = SummarizeRun(run, l.Reqs, larges)
	run.TempPeakMiB, run.AppMemMiB, run.ProxyMemMiB = rs.TempPeakMiB, recorder.MemoryPeakMiB(rs.App), recorder.MemoryPeakMiB(rs.Proxy)
	n, logErr := countProxyErrors(fr.Running.ProxyErrorLogs())
	run.ProxyErrors = n
	// After the log was read: every line in it now is there for the
	// exporter's scrape too (the proxy writes its stderr to the file).
	// None when the exporter reported no count or could not be read.
	run.ExporterTempWriteErrors = exporterTempWriteErrors(ctx, env, id, fr.In.ExporterURL())
	return run, lab.Judge(ctx, lab.VerdictOf(&run), fr.Running, errors.Join(l.WriteErr, sampErr, largeErr),
		lab.Reason("read app_send_s: ", sendErr), lab.Reason("read the proxy's log: ", logErr), lab.FastAccounted(run.FastTotal, run.FastPlanned))
}

// load starts the slow readers at t0 and, Fast.Offset later, the
// open-loop /fast schedule, and waits for both: its Rows are the
// readers' downloads by client number.
func (c *Config) load(ctx context.Context, env *lab.Env, running *stack.Running, meta recorder.RunMeta, t0 time.Time, f *files) (l lab.Clients[loadgen.Download]) {
	largeURL, err := loadgen.CheckTarget(running.Target(stack.TargetLarge, "/large"), running.AllowRemote())
	if err != nil {
		l.WriteErr = err
		return l
	}
	l.Rows = make([]loadgen.Download, meta.SlowClients)
	fast := c.Fast.RunBeside(ctx, env, running.Target(stack.TargetFast, c.Fast.Path), running.AllowRemote(), meta, t0, f.Requests, meta.SlowClients, func(i int) {
		sr := c.SlowReader.Reader()
		sr.URL, sr.AllowRemote, sr.RunID, sr.Metrics, sr.TracerProvider = largeURL, running.AllowRemote(), meta.RunID, env.Metrics, env.TracerProvider
		sr.Header = http.Header{appserver.RequestIDHeader: {slowID(meta.RunID, i)}}
		l.Rows[i] = sr.Run(ctx, i)
	})
	l.Reqs, l.Planned, l.WriteErr = fast.Reqs, fast.Planned, fast.WriteErr
	return l
}

// appSendWait bounds how long the lab waits, after the downloads ended,
// for the app's record of each complete download (lab.AppSends).
var appSendWait = 10 * time.Second

// downloads writes the slow downloads' rows with the app's send times
// (waiting for those of every complete download until appSendWait; a cut
// one's app may still be writing into the proxy's closed connection).
func (c *Config) downloads(ctx context.Context, running *stack.Running, meta recorder.RunMeta, downloads []loadgen.Download, f *files) (_ []recorder.LargeResponse, sendErr, writeErr error) {
	var complete []string
	for _, d := range downloads {
		if d.Complete {
			complete = append(complete, slowID(meta.RunID, d.Client))
		}
	}
	sends, sendErr := lab.AppSends(ctx, running, complete, appSendWait)
	var larges []recorder.LargeResponse
	for _, d := range downloads {
		appSend := recorder.None()
		if v, ok := sends[slowID(meta.RunID, d.Client)]; ok {
			appSend = recorder.Some(v)
		}
		row := loadgen.DownloadRow(meta, d, appSend, true)
		larges = append(larges, row)
		if err := f.Items.Write(row); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	return larges, sendErr, writeErr
}

func slowID(runID string, client int) string { return fmt.Sprintf("%s/slow-%d", runID, client) }

// tempFSAvailMetric is the exporter's space available on the proxy's temp
// filesystem (exporter/tempfs.go).
const tempFSAvailMetric = "slowlab_proxy_temp_fs_avail_bytes"

// tempFSPoll is what polling the exporter for tempFSAvailMetric found:
// the least value, in MiB (None when it reported none), and how many of
// its scrapes failed, with the last failure.
type tempFSPoll struct {
	least           recorder.Maybe
	scrapes, failed int
	last            error
}

// note tells run id's progress how many of the poll's scrapes failed, if
// any did: one among many only leaves a gap of 50 ms, all of them leave
// temp_fs_avail_min_mib empty although the exporter may have had a value.
func (p tempFSPoll) note(env *lab.Env, id string) {
	if p.failed > 0 {
		env.Logf("run %s: %d of %s of %s failed, the last: %v", id, p.failed, report.Count(p.scrapes, "scrape"), tempFSAvailMetric, p.last)
	}
}

// pollTempFSAvail scrapes the exporter every 50 ms until ctx ends and
// returns the least slowlab_proxy_temp_fs_avail_bytes it reported for the
// proxy, in MiB, and the scrapes that failed (not the one ctx's end cut).
func pollTempFSAvail(ctx context.Context, url string) tempFSPoll {
	p := tempFSPoll{least: recorder.None()}
	client := &http.Client{Timeout: time.Second}
	for {
		v, ok, err := scrapeGauge(ctx, client, url, tempFSAvailMetric)
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil:
			p.scrapes, p.failed, p.last = p.scrapes+1, p.failed+1, err
		default:
			p.scrapes++
		}
		if mib := v / (1 << 20); ok && (!p.least.Valid || mib < p.least.Value) {
			p.least = recorder.Some(mib)
		}
		select {
		case <-ctx.Done():
			return p
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// exporterTempWriteErrors is the exporter's tempWriteErrorsMetric for the
// proxy at url, None when it reported none; a scrape that failed (unless
// ctx ended) is told in run id's progress, since its empty column then
// says nothing about the proxy's writes.
func exporterTempWriteErrors(ctx context.Context, env *lab.Env, id, url string) recorder.Maybe {
	v, ok, err := scrapeGauge(ctx, &http.Client{Timeout: 5 * time.Second}, url, tempWriteErrorsMetric)
	if err != nil && ctx.Err() == nil {
		env.Logf("run %s: %s not read: %v", id, tempWriteErrorsMetric, err)
	}
	if !ok {
		return recorder.None()
	}
	return recorder.Some(v)
}

// tempWriteErrorsMetric counts the failed temp writes the exporter read in
// the proxy's error log (exporter/errorlog.go).
const tempWriteErrorsMetric = "slowlab_proxy_temp_write_errors_total"

// maxExpositionBytes bounds one scrape of the exporter, as the Sampler's
// (the exporter's exposition is a few KiB).
const maxExpositionBytes = 16 << 20

// scrapeGauge returns the value of gauge (or counter) name's series for
// the proxy's group (instrument.ProxyGroup) in the exposition at url,
// parsed as the Sampler parses it (recorder.ParseExposition); false when
// the scrape failed (the error says why, naming url; a status other than
// 200 fails it) or has no such series. A body over maxExpositionBytes is an error, not parsed whole.
func scrapeGauge(ctx context.Context, client *http.Client, url, name string) (float64, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Accept", recorder.AcceptHeader)
	resp, err := client.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false, fmt.Errorf("%s: HTTP %s", url, resp.Status)
	}
	body := &bounded.Body{R: resp.Body, Left: maxExpositionBytes, Err: fmt.Errorf("response body over %d bytes", maxExpositionBytes)}
	fams, err := recorder.ParseExposition(body, resp.Header.Get("Content-Type"))
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", url, err)
	}
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "group" && l.GetValue() == instrument.ProxyGroup {
				if c := m.GetCounter(); c != nil {
					return c.GetValue(), true, nil
				}
				return m.GetGauge().GetValue(), true, nil
			}
		}
	}
	return 0, false, nil
}

// errorLevels mark a proxy log line at error level or worse, NGINX's
// ("[crit] pwrite() ... failed (28: No space left on device)") and the
// embedded proxy's alike.
var errorLevels = [][]byte{[]byte("[error]"), []byte("[crit]"), []byte("[alert]"), []byte("[emerg]")}

// countProxyErrors counts the error lines in the run's proxy logs (the
// running proxy names them).
func countProxyErrors(paths []string) (int, error) {
	if len(paths) == 0 {
		return 0, errors.New("the proxy names no error log")
	}
	n := 0
	for _, p := range paths {
		err := stack.LogLines(p, func(line []byte) {
			if slices.ContainsFunc(errorLevels, func(lvl []byte) bool { return bytes.Contains(line, lvl) }) {
				n++
			}
		})
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}
