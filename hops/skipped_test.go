package hops

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// skippedRun is a download of 8 MiB through a proxy that reports its
// buffers (or, unless reports, does not: NGINX), sampled four times: at
// 0.1 s the dump skipped the app's socket and the proxy's to it (or,
// upOnly, the proxy's only), both back at 0.15 s; at 0.2 s both closed
// for good. Every sample's counts add up.
func skippedRun(upOnly, reports bool) (Path, Download, []Sample) {
	const app, proxy, client, peer = 8000, 8080, 40000, 40001
	const k = 1 << 10
	p := Path{AppPort: app, ProxyPort: proxy, ProxyReports: reports, ProxyMemory: 80 * k}
	d := Download{Client: 1, Local: ap(client), PeerPort: peer, Total: 8192 * k}
	// front is the proxy's socket to the client, which wrote sent (64 KiB
	// queued), and the client's, 8 KiB unread.
	front := func(sent uint64) []Socket {
		return []Socket{sock(proxy, client, 0, 64*k, sent-64*k, 100), sock(client, proxy, 8*k, 0, 100, sent-64*k)}
	}
	// back is the app's socket, which wrote written (sq queued), and the
	// proxy's to it, 64 KiB unread.
	back := func(written uint64, sq uint32) []Socket {
		return []Socket{sock(app, peer, 0, sq, written-uint64(sq), 100), sock(peer, app, 64*k, 0, 100, written-uint64(sq))}
	}
	report := func(read, sent int64) []ProxyBuffer {
		return []ProxyBuffer{{Client: ap(client), Memory: 32 * k, TempFile: read - 32*k - sent, UpstreamRead: read, ClientWritten: sent}}
	}
	skipped := front(512 * k)
	if upOnly {
		skipped = append(skipped, back(5376*k, 192*k)[0])
	}
	// Its temp files hold all it read but its memory.
	at := func(ms int, socks []Socket, read, sent int64) Sample {
		return Sample{T: time.Duration(ms) * time.Millisecond, Sockets: socks, Proxy: report(read, sent), HasTemp: true, TempFile: read - 32*k}
	}
	return p, d, []Sample{
		at(50, append(back(2048*k, 256*k), front(256*k)...), 1728*k, 256*k),
		at(100, skipped, 5120*k, 512*k),
		at(150, append(back(7168*k, 256*k), front(768*k)...), 6848*k, 768*k),
		at(200, front(1024*k), 8192*k, 1024*k),
	}
}

// A socket a dump skipped (absent from one sample, back in the next) did
// not close: its hops are missing at that sample, not derived (nothing
// closed, the whole response is not written), and the sample is not
// judged (the download's sample nor the proxy's), so no violation; one
// absent for good is derived as closed and its sample judged.
func TestHopsSkippedSocketNotClosed(t *testing.T) {
	for _, tc := range []struct{ upOnly, reports bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
		upOnly := tc.upOnly
		p, d, samples := skippedRun(upOnly, tc.reports)
		rows := Hops("r", p, []Download{d}, samples)
		res := Check(rows)
		if len(res.Violations) != 0 || res.Judged != 6 || res.Unmeasured != 2 {
			t.Errorf("upstream only %v, reports %v: %s %v; want 6 samples judged (3 of the download's, 3 of the proxy's), the skipped ones unmeasured", upOnly, tc.reports, res, res.Violations)
		}
		skippedHops := []string{recorder.HopProxyUpstreamRecvQ, recorder.HopProxyUpstreamReceived}
		if !tc.reports {
			// Derived from what the proxy read, not known.
			skippedHops = append(skippedHops, recorder.HopProxyMemory, recorder.HopProxyTempFile)
		}
		if !upOnly {
			skippedHops = append(skippedHops, recorder.HopAppSendQueue, recorder.HopAppSendQueueNotSent, recorder.HopAppWritten)
		}
		for _, hop := range skippedHops {
			if r, ok := hopAt(rows, 0.1, hop); !ok || r.Source != recorder.HopSourceMissing || r.Bytes != 0 {
				t.Errorf("upstream only %v, reports %v: skipped at 0.1 s: %s %+v, want 0 missing", upOnly, tc.reports, hop, r)
			}
			if r, ok := hopAt(rows, 0.2, hop); !ok || r.Source != recorder.HopSourceDerived {
				t.Errorf("upstream only %v, reports %v: closed at 0.2 s: %s %+v, want derived", upOnly, tc.reports, hop, r)
			}
		}
		if r, _ := hopAt(rows, 0.2, recorder.HopAppWritten); r.Bytes != d.Total {
			t.Errorf("upstream only %v, reports %v: closed at 0.2 s: app_written %+v, want the whole response, %d", upOnly, tc.reports, r, d.Total)
		}
		if upOnly {
			if r, _ := hopAt(rows, 0.1, recorder.HopAppWritten); r.Source != recorder.HopSourceKernel || r.Bytes != 5376<<10 {
				t.Errorf("the app's socket in the sample: app_written %+v, want 5376 KiB from the kernel", r)
			}
		}
		// The sample the dump skipped nothing of is still tested: the
		// client's count 256 KiB short at 0.15 s fails.
		bad := slices.Clone(rows)
		for i := range bad {
			if bad[i].TS == 0.15 && bad[i].Hop == recorder.HopClientRead {
				bad[i].Bytes -= 256 << 10
			}
		}
		if res := Check(bad); len(res.Violations) == 0 {
			t.Errorf("upstream only %v, reports %v: client_read corrupted at 0.15 s: %s, want a violation", upOnly, tc.reports, res)
		}
	}
}

// Attribution over a spill (its first pass, then its rows one sample at a
// time) gives what Hops gives of the same samples in memory, the skipped
// socket's hops missing alike; a spill that cannot be read back fails the
// first pass, naming the sample.
func TestAttributionSpillAgreesWithHops(t *testing.T) {
	p, d, samples := skippedRun(false, true)
	want := Hops("r", p, []Download{d}, samples)
	s, err := NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, smp := range samples {
		if err := s.Put(smp); err != nil {
			t.Fatal(err)
		}
	}
	a, err := NewAttribution("r", p, []Download{d}, s.Each)
	if err != nil {
		t.Fatal(err)
	}
	var got []recorder.Hop
	if err := s.Each(func(smp Sample) error { got = a.Rows(got, smp); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("streamed rows differ from Hops':\n%v\n%v", got, want)
	}
	if r, _ := hopAt(got, 0.1, recorder.HopAppWritten); r.Source != recorder.HopSourceMissing {
		t.Errorf("streamed: app_written at the skipped sample %+v, want missing", r)
	}
	if err := os.Truncate(s.f.Name(), 100); err != nil {
		t.Fatal(err)
	}
	if _, err := NewAttribution("r", p, []Download{d}, s.Each); err == nil || !strings.Contains(err.Error(), "of 4") {
		t.Errorf("first pass over a cut spill: %v, want an error naming the sample", err)
	}
}

// A reporting proxy that has read less of the body than the download's
// (Download.Body) still has its socket to the app open: absent from a
// sample and from every later one (skipped at the last samples it was
// open in), that socket's hops are missing and the sample unmeasured; once
// the report has the whole body, absent is closed, derived and judged.
// Without the body known, the same samples are taken for closed and fail.
func TestHopsProxyStillReadingNotClosed(t *testing.T) {
	p, d, samples := skippedRun(false, true)
	samples[2].Sockets = samples[2].Sockets[2:] // the app's and the proxy's to it never back
	d.Body = d.Total
	rows := Hops("r", p, []Download{d}, samples)
	if res := Check(rows); len(res.Violations) != 0 || res.Judged != 4 || res.Unmeasured != 4 {
		t.Errorf("%s %v: want the two samples the proxy was still reading in unmeasured, the others judged", res, res.Violations)
	}
	for _, ts := range []float64{0.1, 0.15} {
		if r, _ := hopAt(rows, ts, recorder.HopProxyUpstreamRecvQ); r.Source != recorder.HopSourceMissing {
			t.Errorf("at %v s, the proxy still reading: %+v, want missing", ts, r)
		}
	}
	if r, _ := hopAt(rows, 0.2, recorder.HopProxyUpstreamReceived); r.Source != recorder.HopSourceDerived || r.Bytes != d.Total {
		t.Errorf("at 0.2 s, the body read: %+v, want the whole response derived", r)
	}
	d.Body = 0
	res := Check(Hops("r", p, []Download{d}, samples))
	var at []float64
	for _, v := range res.Violations {
		if !slices.Contains(at, v.TS) {
			at = append(at, v.TS)
		}
	}
	if slices.Sort(at); !slices.Equal(at, []float64{0.1, 0.15}) {
		t.Errorf("the body unknown: %s %v; want violations at 0.1 and 0.15 s", res, res.Violations)
	}
}
