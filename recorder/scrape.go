package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slowlab/slowlab/internal/bounded"
)

// DefaultInterval is the resource sampling interval of docs/experiments.md
// section 1.
const DefaultInterval = 200 * time.Millisecond

// ErrTickSkipped starts the Error of the rows of a tick the Sampler
// skipped because it could not start on time.
var ErrTickSkipped = errors.New("tick skipped")

// maxBodyBytes bounds one /metrics response; the exporter's is a few KiB.
const maxBodyBytes = 16 << 20

// Sampler scrapes /metrics endpoints on a fixed schedule and turns the
// exporter's metrics into resource-samples.csv rows.
//
// Tick k is due at Start + k*Interval. The schedule never drifts: a tick
// starts when it is due, however long earlier ones took. A tick that
// cannot start within half an interval of its due time, because the
// previous scrape overran, is skipped rather than run late and bunched up
// with the next; a skipped tick still yields its rows, at its due time,
// with every value None and an Error starting with ErrTickSkipped. Every tick from the first one to the
// last therefore has exactly one row per component.
//
// All targets are scraped at once at each tick; SamplesFromFamilies merges
// them. A target that fails, answers with an error, or does not answer
// within Timeout contributes nothing and is named in the rows' Error: a
// value is never copied from an earlier tick or interpolated.
type Sampler struct {
	// URLs are the /metrics endpoints, such as the exporter's, loadgen's
	// and the target's admin endpoint; earlier ones win when two have the
	// same metric for a component.
	URLs []string
	// Interval between ticks; 0 means DefaultInterval.
	Interval time.Duration
	// Timeout of one scrape, from its start to the end of the body; 0 means
	// Interval.
	Timeout time.Duration
	// Start anchors the schedule and is the origin of the rows' TS, normally
	// the run start. The zero time means when Run is called. Ticks due
	// before Run is called are not sampled.
	Start time.Time
	// RunID is copied into every row.
	RunID string
	// Components are the group label values turned into rows, in row
	// order; nil means Components.
	Components []string
	// Client does the scrapes; nil means a keep-alive client that uses no
	// proxy and does not ask for compression, which saves CPU on loopback.
	Client *http.Client
	// OnSample receives the rows, from Run's goroutine, in tick order and
	// within a tick in Components order. An error stops Run, which returns
	// it. Required.
	OnSample func(ResourceSample) error
	// OnScrape, if set, receives every target's raw scrape before the
	// tick's rows, for metrics that have no resource-samples.csv column.
	OnScrape func(Scrape)
}

// Scrape is one target's answer at one tick.
type Scrape struct {
	URL      string
	Due      time.Time // when the tick was due
	Start    time.Time // when the request was sent
	Duration time.Duration
	Families Families // nil when Err is set
	Err      error
}

// Jitter is how late the Sampler's scrapes started: for each scraped tick,
// the scrape start minus the due time, in tick order.
type Jitter struct {
	Samples []time.Duration
	Skipped int // ticks skipped because an earlier scrape overran
}

// Percentile returns the p-th nearest-rank percentile of the samples
// (0 < p <= 100), or 0 when there are none.
func (j Jitter) Percentile(p float64) time.Duration {
	if len(j.Samples) == 0 || !(p > 0 && p <= 100) {
		return 0
	}
	return slices.Sorted(slices.Values(j.Samples))[Rank(len(j.Samples), p)-1]
}

// String gives the three figures a run reports.
func (j Jitter) String() string {
	if len(j.Samples) == 0 {
		return fmt.Sprintf("no scrapes, %d ticks skipped", j.Skipped)
	}
	return fmt.Sprintf("p50 %v p99 %v max %v over %d scrapes, %d ticks skipped",
		j.Percentile(50), j.Percentile(99), j.Percentile(100), len(j.Samples), j.Skipped)
}

// Run samples until ctx is done, then returns the jitter and nil; a tick
// whose scrape is cut short by ctx yields no rows. It returns an error
// without sampling when the Sampler is misconfigured, and stops early with
// the error of OnSample.
func (s *Sampler) Run(ctx context.Context) (Jitter, error) {
	cfg, err := s.withDefaults()
	if err != nil {
		return Jitter{}, err
	}
	if s.Client == nil {
		defer cfg.Client.CloseIdleConnections()
	}
	var j Jitter
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	// Ticks due more than half an interval ago are before our time.
	k := max(0, int64(math.Ceil(float64(time.Since(cfg.Start)-cfg.Interval/2)/float64(cfg.Interval))))
	for ; ; k++ {
		due := cfg.Start.Add(time.Duration(k) * cfg.Interval)
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return j, nil
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			return j, nil
		}
		start := time.Now()
		late := start.Sub(due)
		var rows []ResourceSample
		if late > cfg.Interval/2 {
			j.Skipped++
			rows = errorRows(cfg.RunID, due.Sub(cfg.Start).Seconds(), cfg.Components,
				fmt.Sprintf("%v: %v late, the previous tick overran", ErrTickSkipped, late.Round(time.Millisecond)))
		} else {
			j.Samples = append(j.Samples, late)
			scrapes := cfg.scrapeAll(ctx, due)
			if ctx.Err() != nil {
				return j, nil
			}
			rows = cfg.rows(start.Sub(cfg.Start).Seconds(), scrapes)
		}
		for _, r := range rows {
			if err := cfg.OnSample(r); err != nil {
				return j, err
			}
		}
	}
}

// withDefaults validates s and returns a copy with defaults filled in.
func (s *Sampler) withDefaults() (Sampler, error) {
	cfg := *s
	if len(cfg.URLs) == 0 {
		return cfg, errors.New("sampler: no URLs to scrape")
	}
	for _, raw := range cfg.URLs {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, fmt.Errorf("sampler: URL %q: want http://HOST:PORT/PATH", raw)
		}
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = cfg.Interval
	}
	if cfg.Interval < 0 || cfg.Timeout < 0 {
		return cfg, fmt.Errorf("sampler: interval %v and timeout %v: want positive durations", cfg.Interval, cfg.Timeout)
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Now()
	}
	if cfg.Components == nil {
		cfg.Components = Components[:]
	}
	if cfg.Client == nil {
		cfg.Client = newScrapeClient()
	}
	if cfg.OnSample == nil {
		return cfg, errors.New("sampler: OnSample is required")
	}
	return cfg, nil
}

// newScrapeClient returns a client for frequent small scrapes: one kept-
// alive connection per target and no proxy.
func newScrapeClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// scrapeAll scrapes every URL at once and waits for all of them.
func (s *Sampler) scrapeAll(ctx context.Context, due time.Time) []Scrape {
	scrapes := make([]Scrape, len(s.URLs))
	var wg sync.WaitGroup
	for i, u := range s.URLs {
		wg.Go(func() {
			start := time.Now()
			fams, err := s.scrape(ctx, u)
			scrapes[i] = Scrape{URL: u, Due: due, Start: start, Duration: time.Since(start), Families: fams, Err: err}
		})
	}
	wg.Wait()
	return scrapes
}

// rows turns one tick's scrapes into rows at t.
func (s *Sampler) rows(t float64, scrapes []Scrape) []ResourceSample {
	var ok []Families
	var errs []string
	for _, sc := range scrapes {
		if s.OnScrape != nil {
			s.OnScrape(sc)
		}
		if sc.Err != nil {
			errs = append(errs, sc.Err.Error())
			continue
		}
		ok = append(ok, sc.Families)
	}
	rows := SamplesFromFamilies(s.RunID, t, s.Components, ok...)
	if len(errs) > 0 {
		msg := strings.Join(errs, "; ")
		for i := range rows {
			rows[i].Error = msg
		}
	}
	return rows
}

// errBodyTooLarge stops reading a response that is not a metrics page.
var errBodyTooLarge = fmt.Errorf("response body larger than %d bytes", maxBodyBytes)

// scrape fetches and parses one target within s.Timeout.
func (s *Sampler) scrape(ctx context.Context, target string) (Families, error) {
	sctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	fams, err := s.fetch(sctx, target)
	if err != nil {
		if errors.Is(sctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %v", s.Timeout)
		}
		return nil, fmt.Errorf("scrape %s: %w", target, err)
	}
	return fams, nil
}

func (s *Sampler) fetch(ctx context.Context, target string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", AcceptHeader)
	req.Header.Set("User-Agent", "slowlab-recorder")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(s.Timeout.Seconds(), 'f', -1, 64))
	resp, err := s.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the caller's context already
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	body := &bounded.Body{R: ctxReader{ctx: ctx, r: resp.Body}, Left: maxBodyBytes, Err: errBodyTooLarge}
	return ParseExposition(body, resp.Header.Get("Content-Type"))
}

// ctxReader fails reads once ctx is done. The parsers read through a
// buffer, so this bounds how long a slow parse (OpenMetrics) outlives the
// scrape's timeout to one buffer's worth of lines.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
