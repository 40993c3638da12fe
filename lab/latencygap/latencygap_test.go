package latencygap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/lab/netem/netemtest"
	"github.com/slowlab/slowlab/recorder"
)

func TestPublishedIsThePublishedMatrix(t *testing.T) {
	c := Published()
	if !slices.Equal(c.Delays, []lab.Duration{0, lab.Duration(25 * time.Millisecond)}) || !slices.Equal(c.Sizes, []lab.Size{1024, 102400}) ||
		c.Runs != 40 || c.Method != netem.MethodAuto {
		t.Errorf("Published() = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Delays = nil }, "delays: none given"},
		{func(c *Config) { c.Delays = []lab.Duration{0, lab.Duration(-time.Millisecond)} }, "delays[1] -1ms: allowed 0 to 1s each way"},
		{func(c *Config) { c.Delays = []lab.Duration{lab.Duration(2 * time.Second)} }, "delays[0] 2s: allowed 0 to 1s each way"},
		{func(c *Config) { c.Method = netem.MethodNone },
			"delays[1] 25ms with method none: none adds no delay; use auto, netem or tun"},
		{func(c *Config) { c.Sizes = nil }, "sizes: none given"},
		{func(c *Config) { c.Sizes = []lab.Size{1024, -1} }, "sizes[1] -1: allowed 0 to 67108864 bytes"},
		{func(c *Config) { c.Runs = 0 }, "runs 0: allowed 1 to 10000"},
		{func(c *Config) { c.Timeout = 0 }, "timeout 0s: allowed more than 0 up to 5m"},
		{func(c *Config) { c.Method = "tc" }, `method "tc": allowed auto, netem, tun, none`},
		{func(c *Config) { c.Rate = -5 }, "rate -5: must be 0 (no limit) or more bytes per second"},
		{func(c *Config) { c.CongestionControl = "Cubic!" }, `congestion control "Cubic!": want a kernel algorithm name such as cubic or bbr`},
		{func(c *Config) { c.Losses = []float64{1, 51} }, "loss[1] 51%: allowed 0 to 50%"},
		{func(c *Config) { c.Losses = []float64{-1} }, "loss[0] -1%: allowed 0 to 50%"},
		{func(c *Config) { c.Rates = []BitRate{10_000_000, 63_999} }, "rates[1] 63999bit: allowed 0 (no limit) or 64kbit to 10gbit"},
		{func(c *Config) { c.Rates, c.Rate = []BitRate{10_000_000}, 100000 }, "rate and rates: give one (rate is bytes per second for every condition; rates, bits per second, one condition each)"},
		{func(c *Config) { c.DelayUp = lab.Duration(-time.Millisecond) }, "delay_up -1ms: allowed 0 to 1s"},
		{func(c *Config) { c.DelayDown = lab.Duration(2 * time.Second) }, "delay_down 2s: allowed 0 to 1s"},
		{func(c *Config) { c.TLS = []string{"1.3", "ssl3"} }, `tls[1] "ssl3": allowed none, 1.2, 1.3, 1.3-resume`},
		{func(c *Config) { c.TLS = []string{"1.3", "1.3"} }, `tls[1] "1.3": given twice`},
		{func(c *Config) { c.Work = []Work{{0, "sleep"}, {6 * time.Second, "cpu"}} }, "work[1] cpu:6s: allowed 0 to 5s"},
		{func(c *Config) { c.Work = []Work{{time.Millisecond, "sleep"}, {time.Millisecond, "sleep"}} }, "work[1] 1ms: given twice"},
		{func(c *Config) { c.DNS = []string{DNSNone, "warm"} }, `dns[1] "warm": allowed none, cold, cached`},
		{func(c *Config) { c.DNS = []string{DNSCold, DNSCold} }, `dns[1] "cold": given twice`},
		{func(c *Config) { c.DNS, c.DNSDelay = []string{DNSCold}, lab.Duration(-time.Millisecond) }, "dns_delay -1ms: allowed 0 to 5s"},
		{func(c *Config) { c.DNS, c.DNSDelay = []string{DNSCached}, lab.Duration(6*time.Second) }, "dns_delay 6s: allowed 0 to 5s"},
		{func(c *Config) { c.DNSDelay = lab.Duration(20 * time.Millisecond) },
			"dns_delay 20ms without a dns condition that looks up: give dns cold or cached (--dns cold,cached)"},
		{func(c *Config) { c.DNS, c.DNSDelay = []string{DNSNone}, lab.Duration(20*time.Millisecond) },
			"dns_delay 20ms without a dns condition that looks up: give dns cold or cached (--dns cold,cached)"},
		{func(c *Config) { c.Losses, c.Method = []float64{1}, netem.MethodNone },
			"delays[1] 25ms with method none: none adds no delay; use auto, netem or tun"},
		{func(c *Config) { c.Delays, c.Losses, c.Method = []lab.Duration{0}, []float64{1}, netem.MethodNone },
			"path 0s each way, 1% loss: method none with delay 0s (up 0s, down 0s), loss 1% and rate 0: none adds nothing; use auto, netem or tun"},
	} {
		c := Published()
		tc.change(c)
		if err := c.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
}

// TestPrint: the conditions table (gap.csv's columns, then gap-path.csv's)
// and, since a path was not faithful, the warning.
func TestPrint(t *testing.T) {
	rows := []Row{
		{Gap: Gap{SizeBytes: 1024, ConfiguredRTTMS: 50, RTTMS: recorder.Some(50.081), ServerMS: recorder.Some(0.1234),
			ClientKeepaliveMS: recorder.Some(50.61), ClientNewMS: recorder.Some(101.4), ServerBlindPct: recorder.Some(99.88), Runs: 40, DelayMethod: "tun",
			ServerLastByteMS: recorder.Some(0.006), ServerLastByteBlindPct: recorder.Some(99.99)},
			Path: Path{Valid: false, LatenessP50MS: recorder.Some(0.05), LatenessP99MS: recorder.Some(1.5), LatenessMaxMS: recorder.Some(3)}},
		{Gap: Gap{SizeBytes: 102400, DelayMethod: "none"}, Path: Path{Valid: true}},
	}
	rows = append(rows, Row{Gap: Gap{SizeBytes: 1024, ConfiguredRTTMS: 50, DelayMethod: "tun", HandshakeMS: recorder.Some(50.5),
		Settings: Settings{TLS: "1.3", LossPct: 1, RateBits: 10_000_000, DelayUpMS: 5, DelayDownMS: 45, WorkMS: 10, WorkKind: "cpu"}},
		Path: Path{Valid: true, LossAppliedPct: recorder.Some(0.987), LossMeasuredPct: recorder.Some(1.0123), OverflowDrops: recorder.Some(12)}})
	rows = append(rows, Row{Gap: Gap{SizeBytes: 1024, ConfiguredRTTMS: 50, DelayMethod: "tun", DNSMS: recorder.Some(71.234),
		Settings: Settings{DNS: DNSCold, DNSDelayMS: 20}}, Path: Path{Valid: true}},
		Row{Gap: Gap{SizeBytes: 1024, ConfiguredRTTMS: 50, DelayMethod: "tun", DNSMS: recorder.Some(0), Settings: Settings{DNS: DNSCached}}, Path: Path{Valid: true}},
		Row{Gap: Gap{SizeBytes: 1024, ConfiguredRTTMS: 50, DelayMethod: "tun", DNSMS: recorder.Some(72.5), ConnectMS: recorder.Some(351.849), IPv6Pct: recorder.Some(0),
			Settings: Settings{DNS: DNSCold, DNSDelayMS: 20, DNSFamilies: FamiliesBlackhole}}, Path: Path{Valid: true}},
		Row{Gap: Gap{SizeBytes: 1024, ConfiguredRTTMS: 50, DelayMethod: "tun", DNSMS: recorder.Some(0), ConnectMS: recorder.Some(50.6), IPv6Pct: recorder.Some(100),
			Settings: Settings{DNS: DNSCached, DNSFamilies: FamiliesBoth}}, Path: Path{Valid: true}})
	var b bytes.Buffer
	(&Result{Rows: rows}).Print(&b)
	want := "" +
		"size_bytes configured_rtt_ms rtt_ms method tls  loss_%   rate work_ms server_ms keepalive_ms new_ms handshake_ms blind_% last_byte_ms last_byte_blind_% runs late_p50_ms late_p99_ms late_max_ms lost_% measured_lost_% overflow valid                      dns dns_ms connect_ms ipv6_%\n" +
		"      1024                50 50.081 tun    none      0      -       -     0.123        50.61 101.40            -    99.9        0.006             100.0   40       0.050       1.500       3.000      -               -        - NO                           -      -          -      -\n" +
		"    102400                 0      - none   none      0      -       -         -            -      -            -       -            -                 -    0           -           -           -      -               -        - yes                          -      -          -      -\n" +
		"      1024              5+45      - tun    1.3       1 10mbit  10 cpu         -            -      -        50.50       -            -                 -    0           -           -           -   0.99            1.01       12 yes                          -      -          -      -\n" +
		"      1024                50      - tun    none      0      -       -         -            -      -            -       -            -                 -    0           -           -           -      -               -        - yes                  cold+20ms  71.23          -      -\n" +
		"      1024                50      - tun    none      0      -       -         -            -      -            -       -            -                 -    0           -           -           -      -               -        - yes                     cached   0.00          -      -\n" +
		"      1024                50      - tun    none      0      -       -         -            -      -            -       -            -                 -    0           -           -           -      -               -        - yes   cold+20ms/aaaa-blackhole  72.50     351.85      0\n" +
		"      1024                50      - tun    none      0      -       -         -            -      -            -       -            -                 -    0           -           -           -      -               -        - yes              cached/a+aaaa   0.00      50.60    100\n" +
		"\n" +
		"warning: in some condition the path was not faithful (measured RTT more than 1 ms off the configured one, the delay line's p99 lateness above 1ms, " +
		"or the loss measured at the path's ends off the asked one beyond the binomial's bound): those rows are marked invalid\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// A row is valid only when the RTT the kernel measured is within 1 ms of
// the configured one and the delay line was on time.
func TestSummarizeValidity(t *testing.T) {
	reqs := func(rtt float64) []Request {
		var out []Request
		for i, mode := range []string{ModeKeepAlive, ModeNew} {
			out = append(out, Request{Mode: mode, NewConn: i == 1, TotalMS: 100, Status: 200, TCPRTTMS: recorder.Some(rtt)})
		}
		return out
	}
	onTime := netem.Lateness{Packets: 10}
	for _, tc := range []struct {
		rtt   float64
		lt    netem.Lateness
		valid bool
	}{
		{50.3, onTime, true},
		{51.2, onTime, false},
		{48.9, onTime, false},
		{50.1, netem.Lateness{Packets: 10, P99: 2 * time.Millisecond}, false},
	} {
		cond := condition{spec: spec{size: 1024, path: pathCond{up: 25 * time.Millisecond, down: 25 * time.Millisecond}}}
		r := summarize(cond, 50, "tun", "cubic", reqs(tc.rtt), tc.lt, &pathCounts{transit: netem.Transit{Sent: 100, Received: 100}})
		if r.Path.Valid != tc.valid || r.Gap.RTTMS.Value != tc.rtt || r.Path.RTTMS != r.Gap.RTTMS || r.Path.ConfiguredRTTMS != 50 {
			t.Errorf("measured %g ms, lateness %+v: row %+v, want valid %t", tc.rtt, tc.lt, r.Path, tc.valid)
		}
	}
	// The loss the path's ends measured must agree with the loss asked
	// for, whatever the path counted itself. 1% of 5000 packets agrees
	// from 0.36% to 1.8% (binomial, Chernoff bound at 1e-6).
	for _, tc := range []struct {
		name           string
		asked          float64
		own            netem.Loss // the path's own count
		sent, received int64      // its ends'
		valid          bool
	}{
		{"as asked", 1, netem.Loss{Packets: 5000, Lost: 50}, 5000, 4950, true},
		{"at the upper bound", 1, netem.Loss{Packets: 5000, Lost: 90}, 5000, 4910, true},
		{"past the upper bound", 1, netem.Loss{Packets: 5000, Lost: 95}, 5000, 4905, false},
		{"none lost of 1%", 1, netem.Loss{Packets: 5000}, 5000, 5000, false},
		{"none asked, none lost", 0, netem.Loss{Packets: 5000}, 5000, 5000, true},
		{"none asked, one lost", 0, netem.Loss{Packets: 5000}, 5000, 4999, false},
		// The path counts the 1% asked (the old rule passed it), but 3%
		// never arrived: a dropper that miscounts, or a loss elsewhere on
		// the path.
		{"right own count, ends lost more", 1, netem.Loss{Packets: 5000, Lost: 50}, 5000, 4850, false},
		// The dropper counts 3% but the ends lost 1%: what crossed counts.
		{"own count off, ends right", 1, netem.Loss{Packets: 5000, Lost: 150}, 5000, 4950, true},
		// Queue overflows under a rate limit are not the random loss: 100
		// overflows and 49 random losses of the 4900 left agree with 1%.
		{"overflow apart", 1, netem.Loss{Packets: 5000, Lost: 49, Overflow: 100}, 5000, 4851, true},
		{"overflow counted as random", 1, netem.Loss{Packets: 5000, Lost: 49}, 5000, 4851, false},
		{"more overflow claimed than lost", 0, netem.Loss{Packets: 5000, Overflow: 10}, 5000, 4995, false},
	} {
		cond := condition{spec: spec{size: 1024, path: pathCond{up: 25 * time.Millisecond, down: 25 * time.Millisecond, loss: tc.asked}}}
		cond.settings = cond.path.settings(TLSNone)
		c := pathCounts{own: tc.own, transit: netem.Transit{Sent: tc.sent, Received: tc.received}}
		r := summarize(cond, 50, "tun", "cubic", reqs(50.1), onTime, &c)
		p := r.Path
		lost, of := tc.sent-tc.received-tc.own.Overflow, tc.sent-tc.own.Overflow
		if p.Valid != tc.valid || p.LossMeasuredPct != recorder.Some(100*float64(lost)/float64(of)) || p.SentPackets.Value != float64(tc.sent) ||
			p.ReceivedPackets.Value != float64(tc.received) || p.OverflowDrops.Value != float64(tc.own.Overflow) || p.LossAppliedPct != recorder.Some(tc.own.Pct()) {
			t.Errorf("%s: asked %g%%: row %+v; want valid %t", tc.name, tc.asked, p, tc.valid)
		}
		if why := invalidWhy(p); !tc.valid && !strings.Contains(why, "its ends lost") {
			t.Errorf("%s: invalid because %q", tc.name, why)
		}
	}
	// Packets that could not be counted leave a row invalid.
	cond := condition{spec: spec{size: 1024, path: pathCond{up: 25 * time.Millisecond, down: 25 * time.Millisecond}}}
	if r := summarize(cond, 50, "tun", "cubic", reqs(50.1), onTime, nil); r.Path.Valid || !strings.Contains(invalidWhy(r.Path), "could not be counted") {
		t.Errorf("no packet counts: valid %t, %q", r.Path.Valid, invalidWhy(r.Path))
	}
	if r := summarize(condition{spec: spec{size: 1024}}, 0, "none", "cubic", nil, netem.Lateness{}, nil); r.Path.Valid {
		t.Error("nothing measured, yet valid")
	}
}

// TestLatencyGapShape runs the published latency-gap conditions with fewer
// runs, in namespaces over a real delayed path (netem, or the TUN delay
// line where the kernel has no netem), and asserts the shape of
// docs/experiments.md section 3, and that every row's measured RTT is the
// configured one.
func TestLatencyGapShape(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "latency-gap's network namespaces")
	c := Published()
	c.Runs = 15
	env := &lab.Env{Out: t.TempDir(), Progress: labtest.LogWriter{T: t}}
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	res := r.(*Result)
	var table bytes.Buffer
	res.Print(&table)
	t.Logf("\n%s", table.String())
	netemtest.CheckNothingLeft(t)
	rows := checkRows(t, c, res)
	ka1, new1, new100 := rows[key{1024, 50}].Gap.ClientKeepaliveMS.Value, rows[key{1024, 50}].Gap.ClientNewMS.Value, rows[key{102400, 50}].Gap.ClientNewMS.Value
	if ka1 < 48 || ka1 > 62 {
		t.Errorf("RTT 50 ms, 1 KB kept alive: %.1f ms, want about one RTT (48-62)", ka1)
	}
	if new1 < 95 || new1 > 120 {
		t.Errorf("RTT 50 ms, 1 KB new connection: %.1f ms, want about two RTTs (95-120)", new1)
	}
	if new100 < new1+50 {
		t.Errorf("RTT 50 ms, 100 KB new connection: %.1f ms, want at least one RTT more than 1 KB (%.1f): slow start", new100, new1)
	}
	checkFiles(t, c, env.Out)
}

type key struct {
	size int
	rtt  float64
}

// checkRows checks every condition's row: all runs ok, the path faithful
// (its measured RTT within 1 ms of the configured one), and the server
// blind as docs/experiments.md says.
func checkRows(t *testing.T, c *Config, res *Result) map[key]Row {
	t.Helper()
	rows := map[key]Row{}
	for _, r := range res.Rows {
		g := r.Gap
		rows[key{g.SizeBytes, g.ConfiguredRTTMS}] = r
		// The user-space delay line can be late on a loaded machine (CI
		// saw p99 1-5 ms over all three tries); the row must then say
		// invalid, which is the tool being honest, not the test failing,
		// and its RTT is as late as the line (51.2 ms of 50 at p99 2.6 ms
		// late): the 1 ms bound is the on-time line's. Any other reason
		// for an invalid row fails the test.
		late := r.Path.LatenessP99MS.Valid && r.Path.LatenessP99MS.Value > 1
		if g.Runs != c.Runs || r.Path.Dropped != 0 || !g.RTTMS.Valid || (!late && g.RTTMS.Value-g.ConfiguredRTTMS > 1) || g.RTTMS.Value < g.ConfiguredRTTMS {
			t.Errorf("%d bytes, RTT %g ms: %d ok runs of %d, measured RTT %v, path %+v", g.SizeBytes, g.ConfiguredRTTMS, g.Runs, c.Runs, g.RTTMS, r.Path)
		}
		switch {
		case !r.Path.Valid && !late:
			t.Errorf("%d bytes, RTT %g ms: invalid though the RTT was right and the delay line on time: %+v", g.SizeBytes, g.ConfiguredRTTMS, r.Path)
		case r.Path.Valid && late:
			t.Errorf("%d bytes, RTT %g ms: valid though the delay line was late: %+v", g.SizeBytes, g.ConfiguredRTTMS, r.Path)
		case late:
			t.Logf("%d bytes, RTT %g ms: delay line late on this machine (p99 %.3f ms), row marked invalid as it must be", g.SizeBytes, g.ConfiguredRTTMS, r.Path.LatenessP99MS.Value)
		}
		if g.ConfiguredRTTMS == 50 && g.ServerBlindPct.Value < 95 {
			t.Errorf("RTT 50 ms, %d bytes: server (as it reports itself) blind to %.1f%%, want >= 95%%", g.SizeBytes, g.ServerBlindPct.Value)
		}
		// Through the last byte written, the server still cannot see the
		// handshake nor the last round trip of delivery; for 1 KB it sees
		// next to nothing (100 KB does not fit in a new connection's
		// default send buffer, so there its write waits for ACKs).
		lb := g.ServerLastByteMS.Value
		if g.ConfiguredRTTMS == 50 && (lb > g.ClientNewMS.Value-75 || g.SizeBytes == 1024 && g.ServerLastByteBlindPct.Value < 95) {
			t.Errorf("RTT 50 ms, %d bytes: server to last byte %.1f ms of %.1f ms, blind %.1f%%", g.SizeBytes, lb, g.ClientNewMS.Value, g.ServerLastByteBlindPct.Value)
		}
		if g.ConfiguredRTTMS == 0 && !(g.ClientNewMS.Value > g.ServerMS.Value && g.ServerBlindPct.Value > 20) {
			t.Errorf("no delay, %d bytes: server %.3f ms, new connection %.3f ms, blind %.1f%%: want a gap", g.SizeBytes, g.ServerMS.Value, g.ClientNewMS.Value, g.ServerBlindPct.Value)
		}
		if want := map[float64]string{0: "none", 50: "tun"}[g.ConfiguredRTTMS]; g.DelayMethod != want && !(g.ConfiguredRTTMS == 50 && g.DelayMethod == "netem") {
			t.Errorf("RTT %g ms: delay method %q, want %s", g.ConfiguredRTTMS, g.DelayMethod, want)
		}
	}
	if len(rows) != 4 {
		t.Fatalf("%d conditions, want 4", len(rows))
	}
	return rows
}

// checkFiles checks the results files: every request once, the TCP
// connect of a new connection about one RTT, every request's RTT measured.
func checkFiles(t *testing.T, c *Config, out string) {
	t.Helper()
	reqs, err := recorder.ReadFile[Request](filepath.Join(out, "gap-requests.csv"))
	if err != nil || len(reqs) != 2*c.Runs*4 {
		t.Fatalf("gap-requests.csv: %d rows, %v; want %d", len(reqs), err, 2*c.Runs*4)
	}
	var connect []float64
	for _, r := range reqs {
		if r.ConfiguredRTTMS == 50 && r.Mode == ModeNew {
			connect = append(connect, r.ConnectMS)
		}
		if r.Mode == ModeKeepAlive && r.NewConn {
			t.Errorf("keep-alive request %+v opened a connection", r)
		}
		if !r.TCPRTTMS.Valid {
			t.Errorf("request %+v: no TCP RTT", r)
		}
	}
	if m := recorder.Median(connect); m < 49 || m > 56 {
		t.Errorf("RTT 50 ms: TCP connect median %.1f ms, want about one RTT (50)", m)
	}
	for _, name := range append(registeredFiles(t), "environment.json", lab.ScenarioFile) {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
}

// A condition whose delay line runs late is measured again, and only the
// attempt kept is in gap-requests.csv. With the lateness bound at 0 every
// TUN-delayed attempt is late: three tries, the last kept and marked invalid.
func TestLatencyGapRetriesLatePath(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "latency-gap's network namespaces")
	saved := netem.MaxP99Lateness
	netem.MaxP99Lateness = 0
	t.Cleanup(func() { netem.MaxP99Lateness = saved })
	c := Published()
	c.Delays, c.Sizes, c.Runs, c.Method = []lab.Duration{lab.Duration(5 * time.Millisecond)}, []lab.Size{1024}, 3, netem.MethodTUN
	var progress bytes.Buffer
	env := &lab.Env{Out: t.TempDir(), Progress: &progress}
	r, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	res := r.(*Result)
	netemtest.CheckNothingLeft(t)
	for _, want := range []string{"discarded, measuring again (try 2 of 3)", "discarded, measuring again (try 3 of 3)"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	if strings.Contains(progress.String(), "try 4 of 3") {
		t.Errorf("more than 3 tries:\n%s", progress.String())
	}
	if len(res.Rows) != 1 || res.Rows[0].Path.Valid || res.Rows[0].Gap.Runs != c.Runs {
		t.Fatalf("rows %+v: want one condition, invalid, %d runs", res.Rows, c.Runs)
	}
	reqs, err := recorder.ReadFile[Request](filepath.Join(env.Out, "gap-requests.csv"))
	if err != nil || len(reqs) != 2*c.Runs {
		t.Errorf("gap-requests.csv: %d rows (%v), want the kept attempt's %d", len(reqs), err, 2*c.Runs)
	}
}

// TestLatencyGapInterrupted cancels a run after 5 measured requests: Run
// returns the context's error with what it measured on disk, and no
// namespace, link, TUN device or thread of the run is left.
func TestLatencyGapInterrupted(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "latency-gap's network namespaces")
	c := Published()
	c.Delays, c.Runs = []lab.Duration{lab.Duration(25 * time.Millisecond)}, 1000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	measured := 0
	env := &lab.Env{Out: t.TempDir(), OnRequest: func(string) {
		if measured++; measured == 5 {
			cancel()
		}
	}}
	r, err := c.Run(ctx, env)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", err)
	}
	res, _ := r.(*Result)
	if res == nil || len(res.Rows) != 1 || !res.Rows[0].Gap.ClientKeepaliveMS.Valid {
		t.Fatalf("result %+v: want the interrupted condition with its keep-alive measurements", res)
	}
	reqs, err := recorder.ReadFile[Request](filepath.Join(env.Out, "gap-requests.csv"))
	if err != nil || len(reqs) < 5 {
		t.Errorf("gap-requests.csv: %d rows, %v", len(reqs), err)
	}
	for _, f := range append(registeredFiles(t), "environment.json") {
		if _, err := os.Stat(filepath.Join(env.Out, f)); err != nil {
			t.Error(err)
		}
	}
	netemtest.CheckNothingLeft(t)
}

// TestNeedsPrivileges runs Run in a copy of the test binary as an
// unprivileged user: it fails before writing anything, with an error that
// wraps netem.ErrPermission and says what is needed.
func TestNeedsPrivileges(t *testing.T) {
	if out := os.Getenv("SLOWLAB_GAP_UNPRIVILEGED_OUT"); out != "" {
		_, err := Published().Run(context.Background(), &lab.Env{Out: out})
		fmt.Println("error:", err)
		if !errors.Is(err, netem.ErrPermission) {
			os.Exit(3)
		}
		os.Exit(0)
	}
	slowlabtest.RequireRoot(t, "starting an unprivileged child")
	bin, dir := slowlabtest.PublicTestBinary(t, 0o777)
	out := filepath.Join(dir, "results")
	cmd := exec.Command(bin, "-test.run=^TestNeedsPrivileges$")
	cmd.Env = append(os.Environ(), "SLOWLAB_GAP_UNPRIVILEGED_OUT="+out)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	msg, err := cmd.CombinedOutput()
	t.Logf("unprivileged: %s", strings.TrimSpace(string(msg)))
	if err != nil || !strings.Contains(string(msg), "CAP_NET_ADMIN") {
		t.Errorf("want an error wrapping ErrPermission that names CAP_NET_ADMIN; exit %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("results directory written without privileges: %v", err)
	}
}

// registeredFiles are the results files latency-gap's registration says
// each session writes.
func registeredFiles(t *testing.T) []string {
	t.Helper()
	e, err := lab.Lookup(Name)
	if err != nil {
		t.Fatal(err)
	}
	return e.Files
}
