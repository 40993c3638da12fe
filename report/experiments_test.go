package report

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/slowlab/slowlab/recorder"
)

// writeGap writes gap.csv as the issue gives its columns.
func writeGap(t *testing.T, dir string) {
	t.Helper()
	gap := "size_bytes,configured_rtt_ms,rtt_ms,server_ms,client_keepalive_ms,client_new_ms,server_blind_pct,runs,delay_method,server_last_byte_ms,server_last_byte_blind_pct," +
		"tls,loss_pct,rate,delay_up_ms,delay_down_ms,work_ms,work_kind,handshake_ms,resumed_pct,run_id\n" +
		"1024,0,0.04,0.05,0.12,0.17,70.6,40,none,0.06,64.7,none,0,0,0,0,0,sleep,,,latency-gap.1024B.0ms\n" +
		"102400,0,0.05,0.2,0.5,0.7,71.4,40,none,0.3,57.1,none,0,0,0,0,0,sleep,,,latency-gap.102400B.0ms\n" +
		"1024,50,50.08,0.06,50.3,100.7,99.9,40,netem,0.1,99.9,none,0,0,25,25,0,sleep,,,latency-gap.1024B.50ms\n" +
		"102400,50,50.1,0.3,100.8,151.2,99.8,40,netem,,,none,0,0,25,25,0,sleep,,,latency-gap.102400B.50ms\n" // last byte not measured
	if err := os.WriteFile(filepath.Join(dir, gapFile), []byte(gap), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWriteLatencyGap(t *testing.T) {
	dir := t.TempDir()
	writeGap(t, dir)
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Experiments, []string{"latency-gap"}) {
		t.Errorf("experiments %v", rep.Experiments)
	}
	stats := checkFiles(t, rep)
	checkHTML(t, rep)
	gap := figureByName(t, rep, "latency-gap")
	if gap.Series != 3 || !slices.Equal(gap.Points, []int{4, 4, 4}) {
		t.Errorf("latency-gap: %d series, points %v", gap.Series, gap.Points)
	}
	for i := range 3 {
		if got := stats["latency-gap"].fills[hexColor(lighter(ColorAt(i)))]; got != 4+1 {
			t.Errorf("latency-gap.svg series %d: %d bars, want 4 + legend", i, got)
		}
	}
	b, _ := os.ReadFile(rep.HTML)
	page := html.UnescapeString(string(b))
	for _, want := range []string{"<td class=\"num\">99.9</td>", "netem", "100 KiB"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestLatencyGapConditions: gap.csv rows with TLS and processing time,
// and their requests in gap-requests.csv, give the new-connection phases
// (a stacked bar per condition and phase) and the blind-against-work
// curve (the plain condition at three processing times; the TLS one has a
// single time and draws no line).
func TestLatencyGapConditions(t *testing.T) {
	dir := t.TempDir()
	plain := recorder.GapSettings{TLS: recorder.GapTLSNone, DelayUpMS: 25, DelayDownMS: 25, WorkKind: recorder.GapWorkSleep}
	tls13, work := plain, func(ms float64) recorder.GapSettings { s := plain; s.WorkMS = ms; return s }
	tls13.TLS = recorder.GapTLS13
	conds := []struct {
		s            recorder.GapSettings
		server, hs   float64
		total, blind float64
	}{{plain, 0.1, 0, 101, 99.9}, {tls13, 0.1, 51.3, 152, 99.9}, {work(10), 10.1, 0, 111, 90.9}, {work(50), 50.1, 0, 151, 66.8}}
	gaps, err := recorder.CreateFile[recorder.GapRow](dir)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := recorder.CreateFile[recorder.GapRequest](dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range conds {
		g := recorder.GapRow{SizeBytes: 1024, ConfiguredRTTMS: 50, RTTMS: recorder.Some(50.1), ServerMS: recorder.Some(c.server),
			ClientKeepaliveMS: recorder.Some(51), ClientNewMS: recorder.Some(c.total), ServerBlindPct: recorder.Some(c.blind), Runs: 3,
			DelayMethod: "tun", GapSettings: c.s}
		if c.hs > 0 {
			g.HandshakeMS, g.ResumedPct = recorder.Some(c.hs), recorder.Some(0)
		}
		if err := gaps.Write(g); err != nil {
			t.Fatal(err)
		}
		for seq := range 3 {
			r := recorder.GapRequest{SizeBytes: 1024, ConfiguredRTTMS: 50, DelayMethod: "tun", Mode: recorder.GapNew, Seq: seq, NewConn: true,
				ConnectMS: 50, TTFBMS: 100 + c.hs + c.server, TotalMS: c.total, Status: 200, Bytes: 1024, GapSettings: c.s}
			if c.hs > 0 {
				r.HandshakeMS = recorder.Some(c.hs)
			}
			if err := reqs.Write(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := errors.Join(gaps.Close(), reqs.Close()); err != nil {
		t.Fatal(err)
	}
	rep, err := Write(dir, allSections)
	if err != nil {
		t.Fatal(err)
	}
	checkHTML(t, rep)
	phases := figureByName(t, rep, "latency-gap-phases")
	if phases.Series != 4 || !slices.Equal(phases.Points, []int{4, 4, 4, 4}) {
		t.Errorf("latency-gap-phases: %d series, points %v; want 4 phases of 4 conditions", phases.Series, phases.Points)
	}
	blind := figureByName(t, rep, "latency-gap-blind-by-work")
	if blind.Series != 1 || !slices.Equal(blind.Points, []int{3}) {
		t.Errorf("latency-gap-blind-by-work: %d series, points %v; want the plain condition at 3 processing times", blind.Series, blind.Points)
	}
	b, _ := os.ReadFile(rep.HTML)
	page := html.UnescapeString(string(b))
	for _, want := range []string{"TLS 1.3", "10 (sleep)", ">51.3<"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
