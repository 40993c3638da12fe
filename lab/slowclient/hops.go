package slowclient

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/hops"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// hopSampling follows a run's slow downloads hop by hop (hops.csv): its
// samples wait on disk (hops.Spill) until the downloads are known, then
// are attributed and checked one at a time.
type hopSampling struct {
	path  hops.Path
	g     *hops.Sampling
	spill *hops.Spill
}

// startHops starts sampling the stack's sockets every Hops.Interval, or
// returns nil when there is nothing to follow: no slow clients, sampling
// off, or an external stack (whose ports slowlab does not own).
func (c *Config) startHops(ctx context.Context, running *stack.Running, slow int, t0 time.Time) (*hopSampling, error) {
	if c.Hops.Interval == 0 || slow == 0 {
		return nil, nil
	}
	if _, ext := running.External(); ext {
		return nil, nil
	}
	appPort, err := port(running.AppAddr())
	if err != nil {
		return nil, fmt.Errorf("hops: app address: %w", err)
	}
	p := hops.Path{AppPort: appPort}
	s := &hops.Sampler{Interval: time.Duration(c.Hops.Interval), Ports: []uint16{appPort}, IPv6: strings.Contains(running.AppAddr(), "[")}
	if addr := running.ProxyAddr(); addr != "" {
		if p.ProxyPort, err = port(addr); err != nil {
			return nil, fmt.Errorf("hops: proxy address: %w", err)
		}
		s.Ports = append(s.Ports, p.ProxyPort)
		url, mem := running.ProxyBuffers()
		p.ProxyMemory = mem
		if url != "" {
			p.ProxyReports = true
			s.Proxy = hops.FetchProxy(url)
		}
		// The proxy's temp files, measured from the files at every sample
		// (Check bounds what the proxy holds by them).
		pid, dirs := running.ProxyProcess()
		if pid == 0 {
			return nil, fmt.Errorf("hops: the proxy's process is not known")
		}
		s.Temp = hops.TempFiles{PIDs: []int{pid}, Dirs: dirs}.Size
	}
	spill, err := hops.NewSpill("")
	if err != nil {
		return nil, err
	}
	s.Sink = spill.Put
	return &hopSampling{path: p, g: s.Start(ctx, t0), spill: spill}, nil
}

// finish stops the sampling, attributes its samples to downloads and
// hands each sample's rows to write, checked: it returns the check's
// verdict (the samples at which bytes were not conserved, how many were
// judged), the error of samples that failed, and write's first error.
func (h *hopSampling) finish(runID string, downloads []loadgen.Download, write func([]recorder.Hop) error) (res hops.Result, sampleErr, writeErr error) {
	if h == nil {
		return res, nil, nil
	}
	defer h.spill.Close()
	_, sampleErr = h.g.Stop()
	var ds []hops.Download
	for _, d := range downloads {
		hd := hops.Download{Client: d.Client, Local: d.Local}
		if d.Complete {
			hd.Total = headerSize(d.Header) + d.Bytes
			hd.Body = d.Bytes
		}
		if v, perr := strconv.ParseUint(d.Header.Get(appserver.PeerPortHeader), 10, 16); perr == nil {
			hd.PeerPort = uint16(v)
		}
		ds = append(ds, hd)
	}
	a, err := hops.NewAttribution(runID, h.path, ds, h.spill.Each)
	if err != nil {
		return res, sampleErr, err
	}
	var c hops.Checker
	var rows []recorder.Hop
	var bad []hops.Violation
	writeErr = h.spill.Each(func(smp hops.Sample) error {
		rows = a.Rows(rows[:0], smp)
		bad = append(bad, c.Add(rows)...)
		return write(rows)
	})
	res = c.Result()
	res.Violations = bad
	return res, sampleErr, writeErr
}

// headerSize is about the bytes of a response header: its status line and
// fields as received (the app's own header, which a proxy may have
// rewritten, differs by some tens of bytes).
func headerSize(h http.Header) int64 {
	n := int64(len("HTTP/1.1 200 OK\r\n\r\n"))
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k) + len(": ") + len(v) + len("\r\n"))
		}
	}
	return n
}

func port(hostPort string) (uint16, error) {
	_, p, err := net.SplitHostPort(hostPort)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(p, 10, 16)
	return uint16(v), err
}
