package hops

import (
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/recorder"
)

func ap(port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
}

func sock(local, remote uint16, rq, sq uint32, acked, recv uint64) Socket {
	return Socket{Local: ap(local), Remote: ap(remote), State: 1, RecvQ: rq, SendQ: sq, BytesAcked: acked, BytesReceived: recv, HasInfo: true, RcvBuf: 64 << 10}
}

func hopAt(rows []recorder.Hop, ts float64, hop string) (recorder.Hop, bool) {
	for _, r := range rows {
		if r.TS == ts && r.Hop == hop {
			return r, true
		}
	}
	return recorder.Hop{}, false
}

// Through a proxy that reports nothing (NGINX), what it holds is derived
// from its two sockets and split at its memory; after the app's and the
// proxy's upstream sockets closed, their queues are empty and app_written
// keeps the last value; a sample before the app's socket existed names
// the missing hops and is not a violation (nothing was written yet); a
// sample whose counts do not add up is one.
func TestHopsDerivedProxy(t *testing.T) {
	const app, proxy, client, peer = 8000, 8080, 40000, 40001
	p := Path{AppPort: app, ProxyPort: proxy, ProxyMemory: 80 << 10}
	d := Download{Client: 1, Local: ap(client), PeerPort: peer}
	samples := []Sample{
		{T: 100 * time.Millisecond, HasTemp: true, Sockets: []Socket{sock(client, proxy, 0, 0, 100, 0), sock(proxy, client, 0, 0, 0, 100)}},
		// The app wrote 5 MiB: 1 MiB in its send queue, 4 MiB acked by the
		// proxy, which has 256 KiB unread; it wrote 1 MiB to the client
		// (768 KiB acked, read by the client but 8 KiB). Its temp file
		// has 3 MiB (so it holds 2.75 MiB: in memory and in the file).
		{T: 200 * time.Millisecond, HasTemp: true, TempFile: 3 << 20, Sockets: []Socket{
			sock(app, peer, 100, 1<<20, 4<<20, 100),
			sock(peer, app, 256<<10, 0, 100, 4<<20),
			sock(proxy, client, 0, 256<<10, 768<<10, 100),
			sock(client, proxy, 8<<10, 0, 100, 768<<10),
		}},
		// The app and the proxy's upstream socket are gone (5 MiB read,
		// 4 MiB of it in the temp file, 1.25 MiB sent).
		{T: 300 * time.Millisecond, HasTemp: true, TempFile: 4 << 20, Sockets: []Socket{
			sock(proxy, client, 0, 256<<10, 1<<20, 100),
			sock(client, proxy, 8<<10, 0, 100, 1<<20),
		}},
	}
	rows := Hops("r", p, []Download{d}, samples)
	if bad := Check(rows).Violations; len(bad) != 0 {
		t.Fatalf("violations: %v", bad)
	}
	held := int64(4<<20-256<<10) - (768<<10 + 256<<10)
	for hop, want := range map[string]int64{
		recorder.HopAppWritten: 5 << 20, recorder.HopAppSendQueue: 1 << 20, recorder.HopProxyUpstreamRecvQ: 256 << 10,
		recorder.HopProxyMemory: 80 << 10, recorder.HopProxyTempFile: held - 80<<10, recorder.HopProxyClientSendQueue: 256 << 10,
		recorder.HopClientRecvQueue: 8 << 10, recorder.HopClientRead: 760 << 10,
	} {
		r, ok := hopAt(rows, 0.2, hop)
		if !ok || r.Bytes != want {
			t.Errorf("at 0.2 s %s = %+v, want %d", hop, r, want)
		}
	}
	if r, _ := hopAt(rows, 0.2, recorder.HopProxyMemory); r.Source != recorder.HopSourceDerived {
		t.Errorf("NGINX's memory: source %q, want derived", r.Source)
	}
	if r, _ := hopAt(rows, 0.1, recorder.HopUnaccounted); r.Source != recorder.HopSourceMissing || r.Bytes != 0 {
		t.Errorf("before the app's socket: unaccounted %+v, want 0 marked missing", r)
	}
	// After the upstream side closed, app_written keeps what was last seen
	// (derived) and the proxy's holding is derived from it.
	if r, _ := hopAt(rows, 0.3, recorder.HopAppWritten); r.Source != recorder.HopSourceDerived || r.Bytes != 5<<20 {
		t.Errorf("after close: app_written %+v, want 5 MiB derived", r)
	}

	// A sample that loses 1 MiB: the proxy's socket to the client claims
	// less than the client received.
	broken := []Sample{{T: time.Second, HasTemp: true, TempFile: 3 << 20, Sockets: []Socket{
		sock(app, peer, 100, 0, 4<<20, 100),
		sock(peer, app, 0, 0, 100, 4<<20),
		sock(client, proxy, 0, 0, 100, 1<<20),
	}}}
	bad := Check(Hops("r", p, []Download{d}, broken)).Violations
	if len(bad) != 1 || !strings.Contains(bad[0].String(), "missing from the sample: ") ||
		!strings.Contains(bad[0].String(), "proxy_client_send_queue") {
		t.Fatalf("violations %v: want one naming proxy_client_send_queue", bad)
	}
}

// A reporting proxy's buffers come from its report, matched by the
// client's address, and its upstream address names the app's socket when
// the app's header is missing; what it holds is tested against its report.
func TestHopsReportingProxy(t *testing.T) {
	b, err := os.ReadFile("testdata/buffers.json")
	if err != nil {
		t.Fatal(err)
	}
	report, err := ParseProxyReport(b)
	if err != nil {
		t.Fatal(err)
	}
	const app, proxy, client, peer = 8000, 8080, 40000, 40001
	smp := Sample{T: time.Second, Proxy: report, HasTemp: true, TempFile: 1 << 20, Sockets: []Socket{
		sock(app, peer, 0, 512<<10, 3<<20, 100),
		sock(peer, app, 0, 0, 100, 3<<20),
		// The proxy wrote what it reports, 2,015,232 bytes: 1 MiB queued,
		// 40 KiB of which the client has received but not acknowledged.
		sock(proxy, client, 0, 1<<20, 944<<10, 100),
		sock(client, proxy, 8<<10, 0, 100, 984<<10),
	}}
	p := Path{AppPort: app, ProxyPort: proxy, ProxyReports: true, ProxyMemory: 80 << 10}
	rows := Hops("r", p, []Download{{Local: ap(client)}}, []Sample{smp})
	if res := Check(rows); len(res.Violations) != 0 || res.Judged != 2 {
		t.Fatalf("%s: %v; want both samples judged and held", res, res.Violations)
	}
	// What the proxy holds is tested against its report: a report that
	// says it holds 1 MiB more in memory fails, naming the hop.
	report[0].Memory += 1 << 20
	bad := Check(Hops("r", p, []Download{{Local: ap(client)}}, []Sample{smp})).Violations
	if len(bad) == 0 || !slices.Contains(bad[0].Hops, recorder.HopProxyMemory) {
		t.Errorf("a report 1 MiB off: %v, want a violation naming proxy_memory", bad)
	}
	if r, _ := hopAt(rows, 1, recorder.HopProxyTempFile); r.Bytes != 1<<20 || r.Source != recorder.HopSourceProxy {
		t.Errorf("temp file %+v, want 1 MiB from the proxy", r)
	}
	if r, _ := hopAt(rows, 1, recorder.HopAppSendQueue); r.Bytes != 512<<10 {
		t.Errorf("app send queue %+v: the app's socket was not found by the proxy's upstream address", r)
	}
}

func TestParseProxyReportErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, "cannot unmarshal"},
		{`[{"client":"nowhere"}]`, "buffers[0].client"},
		{`[{"client":"127.0.0.1:1","upstream_local":"x"}]`, "buffers[0].upstream_local"},
		{`[{"client":"127.0.0.1:1","memory_bytes":-1}]`, "negative"},
	} {
		if _, err := ParseProxyReport([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParseProxyReport(f *testing.F) {
	b, err := os.ReadFile("testdata/buffers.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := ParseProxyReport(b)
		if err != nil {
			return
		}
		for _, e := range out {
			if !e.Client.IsValid() || e.Memory < 0 || e.TempFile < 0 {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}

// Directly, an app socket not in the first sample although the client
// already received bytes did not close (the client has read too little):
// app_written is missing, not the whole response derived, so the sample
// is not judged (unmeasured).
func TestHopsDirectAppNotYetSeen(t *testing.T) {
	const app, client = 8000, 40000
	d := Download{Local: ap(client), PeerPort: client, Total: 8 << 20}
	smp := Sample{T: 4 * time.Millisecond, Sockets: []Socket{sock(client, app, 8<<10, 0, 100, 20<<10)}}
	rows := Hops("r", Path{AppPort: app}, []Download{d}, []Sample{smp})
	if r, _ := hopAt(rows, 0.004, recorder.HopAppWritten); r.Source != recorder.HopSourceMissing {
		t.Errorf("app_written %+v, want missing", r)
	}
	if res := Check(rows); len(res.Violations) != 0 || res.Unmeasured != 1 {
		t.Errorf("%s %v: want the sample unmeasured", res, res.Violations)
	}
}

// Movement between two dumps counts each socket's largest change, and
// all the bytes of a socket in one dump only (a connection half in a dump).
func TestMovement(t *testing.T) {
	a := []Socket{sock(1, 2, 0, 100, 1000, 0), sock(2, 1, 50, 0, 0, 1050)}
	b := []Socket{sock(1, 2, 0, 40, 1100, 0), sock(2, 1, 10, 0, 0, 1130), sock(3, 4, 0, 0, 7, 9)}
	// acked 1000 -> 1100 (100), received 1050 -> 1130 (80), new socket 7 + 9.
	if m, each := movement(a, b); m != 100+80+16 || !slices.Equal(each, []int64{100, 80, 16}) {
		t.Errorf("movement %d %v, want 196: 100, 80, 16", m, each)
	}
	if m, _ := movement(b, b); m != 0 {
		t.Errorf("no change: movement %d", m)
	}
}

// A burst between reading two sockets of one dump: the app's socket had
// 1.29 MiB acknowledged (its send queue fell as much, its written total
// stayed put) while the proxy's sockets were read before it. The two
// dumps differ by the burst, and the sample is skewed by it. Seen on
// real NGINX as 1,288,152 bytes unaccounted with a skew of 0, when the
// skew counted written totals only.
func TestMovementSeesAckedBurst(t *testing.T) {
	const burst = 1289180
	before := sock(8000, 41000, 0, 3749876, 16777434-3749876, 200)
	after := sock(8000, 41000, 0, 3749876-burst, 16777434-3749876+burst, 200)
	if m, _ := movement([]Socket{before}, []Socket{after}); m < burst {
		t.Errorf("movement %d, want at least the burst %d", m, burst)
	}
}

// A reporting proxy that has read less than the body keeps its socket to
// the app open, so the app's socket cannot have gone (the dump leaves out
// only TIME_WAIT, which needs the proxy's side closed): not in a sample,
// it was skipped by the dump, and its hops are missing, not derived as
// the whole response written (which made a sample 13 MiB unaccounted in
// a buffer-sweep run once).
func TestHopsReportingProxyAppSkipped(t *testing.T) {
	b, err := os.ReadFile("testdata/buffers.json")
	if err != nil {
		t.Fatal(err)
	}
	report, err := ParseProxyReport(b)
	if err != nil {
		t.Fatal(err)
	}
	const app, proxy, client, peer = 8000, 8080, 40000, 40001
	smp := Sample{T: time.Second, Proxy: report, HasTemp: true, TempFile: 1 << 20, Sockets: []Socket{
		sock(peer, app, 0, 0, 100, 3<<20),
		sock(proxy, client, 0, 1<<20, 944<<10, 100),
		sock(client, proxy, 8<<10, 0, 100, 984<<10),
	}}
	p := Path{AppPort: app, ProxyPort: proxy, ProxyReports: true, ProxyMemory: 80 << 10}
	d := Download{Local: ap(client), Total: 16<<20 + 200, Body: 16 << 20}
	rows := Hops("r", p, []Download{d}, []Sample{smp})
	if r, _ := hopAt(rows, 1, recorder.HopAppWritten); r.Source != recorder.HopSourceMissing {
		t.Errorf("app_written %+v, want missing: the proxy has read 3 MiB of the 16 MiB body", r)
	}
	if res := Check(rows); len(res.Violations) != 0 {
		t.Errorf("%s: %v; want no violation", res, res.Violations)
	}
	// Once the proxy has read the whole body its socket to the app may
	// have closed, and the app's with it: then the app wrote it all.
	report[0].UpstreamRead, report[0].TempFile = d.Body, 14<<20
	smp.TempFile = 14 << 20
	rows = Hops("r", p, []Download{d}, []Sample{smp})
	if r, _ := hopAt(rows, 1, recorder.HopAppWritten); r.Source != recorder.HopSourceDerived || r.Bytes != d.Total {
		t.Errorf("the body read, app_written %+v, want %d derived", r, d.Total)
	}
}

// Through a proxy, an app socket never seen by a download that did not
// complete (no Total) leaves app_written unknown: missing, not 0, and the
// sample unmeasured.
func TestHopsProxyAppNeverSeen(t *testing.T) {
	const app, proxy, client = 8000, 8080, 40000
	smp := Sample{T: time.Second, HasTemp: true, Sockets: []Socket{
		sock(proxy, client, 0, 256<<10, 1<<20, 100),
		sock(client, proxy, 8<<10, 0, 100, 1<<20),
	}}
	rows := Hops("r", Path{AppPort: app, ProxyPort: proxy, ProxyMemory: 80 << 10}, []Download{{Local: ap(client)}}, []Sample{smp})
	if r, _ := hopAt(rows, 1, recorder.HopAppWritten); r.Source != recorder.HopSourceMissing {
		t.Errorf("app_written %+v, want missing", r)
	}
	if res := Check(rows); len(res.Violations) != 0 || res.Unmeasured != 2 || res.Judged != 0 {
		t.Errorf("%s %v: want the sample unmeasured, the download's and the proxy's, not judged", res, res.Violations)
	}
}

// An incomplete download through a buffering proxy whose app closed its
// socket before the first sample: what the app wrote is unknown, so the
// sample is not judged (counted unmeasured), not reported as bytes lost;
// the same download completed (its total known) is judged, and a
// corrupted client count then fails.
func TestHopsAppWrittenUnknown(t *testing.T) {
	const app, proxy, client, up = 8000, 8080, 40000, 41000
	p := Path{AppPort: app, ProxyPort: proxy, ProxyMemory: 64 << 10}
	smp := Sample{T: 20 * time.Millisecond, HasTemp: true, TempFile: 700 << 10}
	d := Download{Client: 0, Local: ap(client), PeerPort: up}
	for _, tc := range []struct {
		name       string
		total      int64
		read       uint64
		unmeasured bool
		fails      bool
	}{
		{"incomplete", 0, 300 << 10, true, false},
		{"complete", 1 << 20, 300 << 10, false, false},
		{"complete, client count corrupted", 1 << 20, 1600 << 10, false, true},
	} {
		d.Total = tc.total
		s := smp
		s.Sockets = []Socket{sock(client, proxy, 0, 0, 0, tc.read), sock(proxy, client, 0, 0, tc.read, 0)}
		res := Check(Hops("r", p, []Download{d}, []Sample{s}))
		var downloads []Violation
		for _, v := range res.Violations {
			if v.Download == 0 {
				downloads = append(downloads, v)
			}
		}
		if tc.fails != (len(downloads) > 0) {
			t.Errorf("%s: violations %v, want some: %v", tc.name, downloads, tc.fails)
		}
		if got := res.Unmeasured == 2 && res.Judged == 0; got != tc.unmeasured { // the download's and the proxy's
			t.Errorf("%s: %s; want unmeasured %v", tc.name, res, tc.unmeasured)
		}
	}
}

// Directly, once the app's socket closed, app_written is derived from
// what the client received (its own count): the sample is counted
// unmeasured, not judged, so a corrupted client count there neither
// passes as conserved nor fails; the sample before, with the app's socket
// in it, is judged and fails the same corruption.
func TestHopsDirectAppClosedUnmeasured(t *testing.T) {
	slowlabtest.Timing(t)
	const app, client = 8000, 40000
	d := Download{Local: ap(client), PeerPort: client}
	samples := []Sample{
		{T: time.Second, Sockets: []Socket{sock(app, client, 0, 512<<10, 1<<20, 100), sock(client, app, 8<<10, 0, 100, 1<<20)}},
		{T: 2 * time.Second, Sockets: []Socket{sock(client, app, 8<<10, 0, 100, 1536<<10)}},
	}
	rows := Hops("r", Path{AppPort: app}, []Download{d}, samples)
	if r, _ := hopAt(rows, 2, recorder.HopAppWritten); r.Source != recorder.HopSourceDerived {
		t.Fatalf("after close: app_written %+v, want derived", r)
	}
	if res := Check(rows); res.Judged != 1 || res.Unmeasured != 1 || len(res.Violations) != 0 {
		t.Fatalf("%s %v: want the first sample judged, the second unmeasured", res, res.Violations)
	}
	for _, ts := range []float64{1, 2} {
		bad := slices.Clone(rows)
		for i := range bad {
			if bad[i].TS == ts && bad[i].Hop == recorder.HopClientRead {
				bad[i].Bytes -= 256 << 10
			}
		}
		res := Check(bad)
		conserved := slices.ContainsFunc(res.Violations, func(v Violation) bool { return v.Reason == "" })
		if conserved != (ts == 1) {
			t.Errorf("client_read 256 KiB short at %v s: %s %v; want a conservation violation only where the app's socket was sampled", ts, res, res.Violations)
		}
	}
}

// A client's receive queue beyond its receive buffer (the kernel's own
// counts otherwise consistent) is a violation naming the buffer; within
// it, none.
func TestCheckRecvQueueCapacity(t *testing.T) {
	const app, client = 8000, 40000
	d := Download{Local: ap(client), PeerPort: client}
	for _, q := range []uint32{60 << 10, 80 << 10} {
		cli := sock(client, app, q, 0, 100, 1<<20)
		smp := Sample{T: time.Second, Sockets: []Socket{sock(app, client, 0, 0, 1<<20, 100), cli}}
		bad := Check(Hops("r", Path{AppPort: app}, []Download{d}, []Sample{smp})).Violations
		over := q > cli.RcvBuf
		if got := len(bad) == 1 && slices.Contains(bad[0].Hops, recorder.HopClientRecvBuffer); got != over || !over && len(bad) > 0 {
			t.Errorf("receive queue %d, buffer %d: %v; want a violation naming client_recv_buffer: %v", q, cli.RcvBuf, bad, over)
		}
	}
}
