package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

func init() {
	register(command{name: "loadgen", summary: "send open-loop requests (and slow readers) to any target and report latency", run: runLoadgen})
}

func runLoadgen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("loadgen", "--target URL [--rate R] [--duration D] [--slow N] [--out DIR] [--metrics-addr ADDR]", stdout)
	targetURL := fs.String("target", "", "URL of the open-loop requests, e.g. http://127.0.0.1:8000/fast (required)")
	rate := fs.Float64("rate", 8, "open-loop rate in requests per second; each starts on schedule whatever earlier ones are doing")
	duration := fs.Duration("duration", 9*time.Second, "how long to send open-loop requests")
	offset := fs.Duration("start-offset", 0, "delay of the open-loop schedule after the slow readers start")
	keepAlive := fs.Bool("keepalive", false, "reuse connections (default: a new TCP connection per request)")
	timeout := fs.Duration("timeout", loadgen.DefaultTimeout, "per-request timeout, start to last body byte")
	slow := fs.Int("slow", 0, "number of slow readers downloading --slow-target during the run")
	slowTarget := fs.String("slow-target", "", "URL the slow readers download (default: --target with path /large)")
	readRate := fs.String("read-rate", "2m", "bytes per second each slow reader consumes (k, m suffixes are KiB, MiB)")
	rcvBuf := fs.String("rcvbuf", "8k", "slow readers' SO_RCVBUF, set before connect (Linux reports double)")
	readSize := fs.String("read-size", "16k", "slow readers read at most this many bytes per read")
	runID := fs.String("run-id", "", "run_id label and CSV column (default adhoc-<UTC timestamp>)")
	out := fs.String("out", "", "write requests.csv (and large-responses.csv with --slow) to this directory")
	metricsAddr := fs.String("metrics-addr", "", "serve /metrics here while running, e.g. 127.0.0.1:9101")
	linger := fs.Duration("linger", 0, "keep serving /metrics this long after the run, so a scraper sees the final values")
	allowRemote := fs.Bool("allow-remote", false, "allow targets that are not loopback addresses")
	tracing := addTracingFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *targetURL == "" {
		return usagef("--target is required, e.g. --target http://127.0.0.1:8000/fast")
	}
	u, err := loadgen.CheckTarget(*targetURL, *allowRemote)
	if err != nil {
		return usagef("--%v", err)
	}
	pacer, err := loadgen.RatePacer(*rate, *duration)
	if err != nil {
		if *duration <= 0 {
			return usagef("--duration %s: must be more than 0", *duration)
		}
		return usagef("--rate %v: want more than 0 and at most 1e6 requests/s", *rate)
	}
	if *timeout <= 0 {
		return usagef("--timeout %s: must be more than 0", *timeout)
	}
	if *offset < 0 {
		return usagef("--start-offset %s: must be 0 or more", *offset)
	}
	if *slow < 0 || *slow > 10000 {
		return usagef("--slow %d: allowed 0 to 10000", *slow)
	}
	sr := loadgen.SlowReader{}
	if *slow > 0 {
		raw := *slowTarget
		if raw == "" {
			v := *u
			v.Path, v.RawQuery = "/large", ""
			raw = v.String()
		}
		if sr.URL, err = loadgen.CheckTarget(raw, *allowRemote); err != nil {
			return usagef("--slow-%v", err)
		}
	}
	rr, err := byteSizeFlag("read-rate", *readRate)
	if err != nil {
		return err
	}
	rb, err := byteSizeFlag("rcvbuf", *rcvBuf)
	if err != nil {
		return err
	}
	rs, err := byteSizeFlag("read-size", *readSize)
	if err != nil {
		return err
	}
	sr.Rate, sr.RcvBuf, sr.ReadSize = float64(rr), int(rb), int(rs)
	if err := sr.Validate(); err != nil {
		return usagef("slow reader: %v", err)
	}
	if err := tracing.validate(); err != nil {
		return err
	}
	if *runID == "" {
		*runID = "adhoc-" + time.Now().UTC().Format("20060102T150405Z")
	}
	tp, stopTracing, err := tracing.start(ctx, "slowlab-loadgen", stderr)
	if err != nil {
		return err
	}
	defer stopTracing()
	metrics, stopMetrics, err := serveLoadgenMetrics(*metricsAddr, stderr)
	if err != nil {
		return err
	}
	defer stopMetrics()
	sr.RunID, sr.Metrics, sr.TracerProvider = *runID, metrics, tp

	var reqW *recorder.FileWriter[recorder.Request]
	var largeW *recorder.FileWriter[recorder.LargeResponse]
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		if reqW, err = recorder.CreateFile[recorder.Request](*out); err != nil {
			return err
		}
		defer reqW.Close()
		if *slow > 0 {
			if largeW, err = recorder.CreateFile[recorder.LargeResponse](*out); err != nil {
				return err
			}
			defer largeW.Close()
		}
	}

	t0 := time.Now()
	var wg sync.WaitGroup
	downloads := make([]loadgen.Download, *slow)
	for i := range downloads {
		wg.Go(func() { downloads[i] = sr.Run(ctx, i) })
	}
	client := loadgen.NewClient(loadgen.ClientOptions{KeepAlive: *keepAlive, Timeout: *timeout, TracerProvider: tp})
	defer client.Close()
	var writeErr error
	loop := loadgen.OpenLoop{Client: client, URL: u.String(), Pacer: pacer, Start: t0.Add(*offset), RunID: *runID, Metrics: metrics,
		OnResult: func(r loadgen.Result) {
			if reqW == nil {
				return
			}
			row := recorder.Request{RunID: *runID, Seq: r.Seq, ScheduledS: r.ScheduledAt.Sub(t0).Seconds(), StartS: r.Start.Sub(t0).Seconds(),
				ScheduleLagMS: msOf(r.ScheduleLag), ConnectMS: msOf(r.Connect), TTFBMS: msOf(r.TTFB), LatencyMS: msOf(r.Latency), Status: r.Status, Bytes: r.Bytes}
			if r.Err != nil {
				row.Error = r.Err.Error()
			}
			if err := reqW.Write(row); err != nil && writeErr == nil {
				writeErr = err
			}
		}}
	results := loop.Run(ctx)
	wg.Wait()
	for _, d := range downloads {
		if largeW != nil {
			row := recorder.LargeResponse{RunID: *runID, Client: d.Client, Status: d.Status, Bytes: d.Bytes, ReceiveS: d.Receive.Seconds(), Complete: d.Complete}
			if d.Err != nil {
				row.Error = d.Err.Error()
			}
			if err := largeW.Write(row); err != nil && writeErr == nil {
				writeErr = err
			}
		}
	}
	printLoadSummary(stdout, results, downloads)
	if *linger > 0 && *metricsAddr != "" {
		select {
		case <-time.After(*linger):
		case <-ctx.Done():
		}
	}
	return writeErr
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// printLoadSummary prints counts and nearest-rank percentiles of latency
// and schedule lag.
func printLoadSummary(w io.Writer, results []loadgen.Result, downloads []loadgen.Download) {
	var lat, lag []float64
	ok, codes := 0, map[int]int{}
	for _, r := range results {
		lag = append(lag, msOf(r.ScheduleLag))
		codes[r.Status]++
		if r.Err == nil && r.Status >= 200 && r.Status < 400 {
			ok++
			lat = append(lat, msOf(r.Latency))
		}
	}
	fmt.Fprintf(w, "requests %d, ok %d, status counts %v\n", len(results), ok, codes)
	pct := func(v []float64, p float64) float64 { return recorder.NearestRank(v, p) }
	fmt.Fprintf(w, "latency ms:      p50 %.2f  p95 %.2f  p99 %.2f  max %.2f\n", pct(lat, 50), pct(lat, 95), pct(lat, 99), pct(lat, 100))
	fmt.Fprintf(w, "schedule lag ms: p50 %.3f  p99 %.3f  max %.3f\n", pct(lag, 50), pct(lag, 99), pct(lag, 100))
	for _, d := range downloads {
		status := "complete"
		if !d.Complete {
			status = fmt.Sprintf("incomplete: %v", d.Err)
		}
		fmt.Fprintf(w, "slow reader %d: status %d, %d bytes in %.2f s (%s)\n", d.Client, d.Status, d.Bytes, d.Receive.Seconds(), status)
	}
}
