package latencygap

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

// TestHeaders pins the experiment's files' columns. gap.csv's are the
// ones the report reads.
func TestHeaders(t *testing.T) {
	const settings = "tls,loss_pct,rate,delay_up_ms,delay_down_ms,work_ms,work_kind"
	for _, tc := range []struct {
		file, header, want string
	}{
		{recorder.FileName[Gap](), strings.Join(recorder.Header[Gap](), ","),
			"size_bytes,configured_rtt_ms,rtt_ms,server_ms,client_keepalive_ms,client_new_ms,server_blind_pct,runs,delay_method,server_last_byte_ms,server_last_byte_blind_pct," + settings + ",handshake_ms,resumed_pct,dns,dns_delay_ms,dns_families,dns_aaaa_delay_ms,dns_ms,connect_ms,ipv6_pct,run_id"},
		{recorder.FileName[Request](), strings.Join(recorder.Header[Request](), ","),
			"size_bytes,configured_rtt_ms,delay_method,mode,seq,start_s,new_conn,connect_ms,ttfb_ms,total_ms,server_header_ms,server_last_byte_ms,tcp_rtt_ms,status,bytes,error," + settings + ",handshake_ms,tls_resumed,dns,dns_delay_ms,dns_families,dns_aaaa_delay_ms,dns_ms,family,run_id"},
		{recorder.FileName[Path](), strings.Join(recorder.Header[Path](), ","),
			"size_bytes,configured_rtt_ms,rtt_ms,delay_method,mtu,congestion_control,packets,dropped,lateness_p50_ms,lateness_p99_ms,lateness_max_ms,valid," + settings + ",path_packets,loss_applied_pct,overflow_drops,sent_packets,received_packets,loss_measured_pct,dns,dns_delay_ms,dns_families,dns_aaaa_delay_ms,run_id"},
	} {
		if tc.header != tc.want {
			t.Errorf("%s header\n got: %s\nwant: %s", tc.file, tc.header, tc.want)
		}
	}
	if recorder.FileName[Gap]() != "gap.csv" || recorder.FileName[Request]() != "gap-requests.csv" || recorder.FileName[Path]() != "gap-path.csv" ||
		recorder.FileName[RunRow]() != "gap-runs.csv" {
		t.Errorf("file names %s, %s, %s, %s", recorder.FileName[Gap](), recorder.FileName[Request](), recorder.FileName[Path](), recorder.FileName[RunRow]())
	}
}

// TestColumnsKeepLayout: every file keeps each column's name, place and
// precision (the layouts are those recorder wrote before the rows moved
// here, with the DNS columns added before run_id, and the family ones
// among them later).
func TestColumnsKeepLayout(t *testing.T) {
	const settings = "tls/0 loss_pct/3 rate/0 delay_up_ms/3 delay_down_ms/3 work_ms/3 work_kind/0"
	for _, tc := range []struct{ file, got, want string }{
		{gapFile, recordertest.Layout[Gap](), "size_bytes/0 configured_rtt_ms/3 rtt_ms/3 server_ms/3 client_keepalive_ms/3 client_new_ms/3 server_blind_pct/3 runs/0 " +
			"delay_method/0 server_last_byte_ms/3 server_last_byte_blind_pct/3 " + settings + " handshake_ms/3 resumed_pct/3 dns/0 dns_delay_ms/3 dns_families/0 dns_aaaa_delay_ms/3 dns_ms/3 connect_ms/3 ipv6_pct/3 run_id/0"},
		{requestFile, recordertest.Layout[Request](), "size_bytes/0 configured_rtt_ms/3 delay_method/0 mode/0 seq/0 start_s/6 new_conn/0 connect_ms/3 ttfb_ms/3 " +
			"total_ms/3 server_header_ms/3 server_last_byte_ms/3 tcp_rtt_ms/3 status/0 bytes/0 error/0 " + settings + " handshake_ms/3 tls_resumed/0 dns/0 dns_delay_ms/3 dns_families/0 dns_aaaa_delay_ms/3 dns_ms/3 family/0 run_id/0"},
		{pathFile, recordertest.Layout[Path](), "size_bytes/0 configured_rtt_ms/3 rtt_ms/3 delay_method/0 mtu/0 congestion_control/0 packets/0 dropped/0 " +
			"lateness_p50_ms/3 lateness_p99_ms/3 lateness_max_ms/3 valid/0 " + settings + " path_packets/0 loss_applied_pct/3 overflow_drops/0 sent_packets/0 " +
			"received_packets/0 loss_measured_pct/3 dns/0 dns_delay_ms/3 dns_families/0 dns_aaaa_delay_ms/3 run_id/0"},
		{runFile, recordertest.Layout[RunRow](), "run_id/0 status/0 reason/0"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.file, tc.got, tc.want)
		}
	}
}

// TestRowContract: each file's rows read back as written, and every field
// of each has one column.
func TestRowContract(t *testing.T) {
	recordertest.Contract[Gap](t)
	recordertest.Contract[Request](t)
	recordertest.Contract[Path](t)
	recordertest.Contract[RunRow](t)
	recordertest.Contract[Fetch](t)
	recordertest.Contract[Load](t)
	recordertest.Contract[Page](t)
}

func FuzzReadGap(f *testing.F)      { recordertest.FuzzRead[Gap](f) }
func FuzzReadRequests(f *testing.F) { recordertest.FuzzRead[Request](f) }
func FuzzReadPath(f *testing.F)     { recordertest.FuzzRead[Path](f) }
func FuzzReadRuns(f *testing.F)     { recordertest.FuzzRead[RunRow](f) }
func FuzzReadFetches(f *testing.F)  { recordertest.FuzzRead[Fetch](f) }
func FuzzReadLoads(f *testing.F)    { recordertest.FuzzRead[Load](f) }
func FuzzReadPages(f *testing.F)    { recordertest.FuzzRead[Page](f) }

// TestVerdictFields: RunRow's VerdictFields points at its own RunID,
// Status and Reason.
func TestVerdictFields(t *testing.T) {
	var r, zero RunRow
	id, status, reason := zero.VerdictFields(&r)
	*id, *status, *reason = "x.rep1", recorder.RunFailed, "why"
	if r.RunID != "x.rep1" || r.Status != recorder.RunFailed || r.Reason != "why" {
		t.Errorf("VerdictFields set run_id %q, status %q, reason %q; want x.rep1, failed, why", r.RunID, r.Status, r.Reason)
	}
}

func TestSummarizeRun(t *testing.T) {
	req := func(mode string, newConn bool, total, server float64, status int, errText string) Request {
		// the last byte is timed 10x the header, to tell them apart
		return Request{Mode: mode, NewConn: newConn, TotalMS: total, ServerHeaderMS: recorder.Some(server), ServerLastByteMS: recorder.Some(10 * server),
			Status: status, Error: errText, TCPRTTMS: recorder.Some(50 + total/1000)}
	}
	reqs := []Request{
		req(ModeKeepAlive, false, 50, 0.1, 200, ""),
		req(ModeKeepAlive, false, 52, 0.1, 200, ""),
		req(ModeKeepAlive, false, 60, 0.1, 200, ""),
		req(ModeKeepAlive, true, 100, 0.1, 200, ""), // not a kept-alive connection
		req(ModeKeepAlive, false, 1, 0.1, 0, "timeout"),
		req(ModeNew, true, 100, 1, 200, ""),
		req(ModeNew, true, 104, 3, 200, ""),
		req(ModeNew, true, 1, 0, 500, ""),
	}
	g := SummarizeRun(1024, 50, "tun", reqs)
	// The measured RTT is the median over the ok requests of both modes:
	// 50.05, 50.052, 50.06, 50.1, 50.1, 50.104 -> 50.08.
	want := Gap{SizeBytes: 1024, ConfiguredRTTMS: 50, RTTMS: g.RTTMS, ServerMS: recorder.Some(2), ClientKeepaliveMS: recorder.Some(52), ClientNewMS: recorder.Some(102),
		ServerBlindPct: g.ServerBlindPct, Runs: 2, DelayMethod: "tun", ServerLastByteMS: recorder.Some(20), ServerLastByteBlindPct: g.ServerLastByteBlindPct}
	if g != want || math.Abs(g.ServerBlindPct.Value-98.0392) > 1e-4 || math.Abs(g.ServerLastByteBlindPct.Value-80.3922) > 1e-4 ||
		math.Abs(g.RTTMS.Value-50.08) > 1e-9 {
		t.Errorf("SummarizeRun\n got %+v\nwant %+v", g, want)
	}
	empty := SummarizeRun(1024, 0, "none", nil)
	if empty.ServerMS.Valid || empty.ClientNewMS.Valid || empty.ServerBlindPct.Valid || empty.ServerLastByteMS.Valid || empty.ServerLastByteBlindPct.Valid ||
		empty.RTTMS.Valid || empty.Runs != 0 {
		t.Errorf("no requests: %+v, want nothing measured", empty)
	}
	// Written and read back, a not-measured cell stays not measured.
	b, err := recordertest.EncodeRows([]Gap{empty, g})
	if err != nil {
		t.Fatal(err)
	}
	got, err := recorder.ReadAll[Gap](bytes.NewReader(b))
	if err != nil || len(got) != 2 || got[0].ServerBlindPct.Valid || math.Abs(got[1].ServerBlindPct.Value-98.039) > 1e-9 {
		t.Errorf("read back %+v, %v", got, err)
	}
}

// TestSummarizeRunHandshake: the handshake median and resumed share come
// from the ok new-connection requests only; without TLS both stay empty.
func TestSummarizeRunHandshake(t *testing.T) {
	req := func(mode string, hs float64, resumed bool, status int) Request {
		return Request{Mode: mode, NewConn: mode == ModeNew, TotalMS: 100, Status: status, HandshakeMS: recorder.Some(hs), TLSResumed: resumed}
	}
	g := SummarizeRun(1024, 50, "tun", []Request{
		req(ModeNew, 100, false, 200), req(ModeNew, 50, true, 200), req(ModeNew, 52, true, 200), req(ModeNew, 51, true, 200),
		req(ModeNew, 1, true, 500),          // failed: not counted
		req(ModeKeepAlive, 999, false, 200), // not a new connection
	})
	if !g.HandshakeMS.Valid || g.HandshakeMS.Value != 51.5 || !g.ResumedPct.Valid || g.ResumedPct.Value != 75 {
		t.Errorf("handshake %v, resumed %v: want 51.5 ms and 75%%", g.HandshakeMS, g.ResumedPct)
	}
	plain := SummarizeRun(1024, 50, "tun", []Request{{Mode: ModeNew, NewConn: true, TotalMS: 100, Status: 200}})
	if plain.HandshakeMS.Valid || plain.ResumedPct.Valid {
		t.Errorf("without TLS: handshake %v, resumed %v, want both empty", plain.HandshakeMS, plain.ResumedPct)
	}
}
