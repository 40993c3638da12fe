package recorder

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestGapHeaders pins the latency-gap files' columns. gap.csv's are the
// ones report reads.
func TestGapHeaders(t *testing.T) {
	const settings = "tls,loss_pct,rate,delay_up_ms,delay_down_ms,work_ms,work_kind"
	for _, tc := range []struct {
		file, header, want string
	}{
		{FileName[GapRow](), strings.Join(Header[GapRow](), ","),
			"size_bytes,configured_rtt_ms,rtt_ms,server_ms,client_keepalive_ms,client_new_ms,server_blind_pct,runs,delay_method,server_last_byte_ms,server_last_byte_blind_pct," + settings + ",handshake_ms,resumed_pct,run_id"},
		{FileName[GapRequest](), strings.Join(Header[GapRequest](), ","),
			"size_bytes,configured_rtt_ms,delay_method,mode,seq,start_s,new_conn,connect_ms,ttfb_ms,total_ms,server_header_ms,server_last_byte_ms,tcp_rtt_ms,status,bytes,error," + settings + ",handshake_ms,tls_resumed,run_id"},
		{FileName[GapPath](), strings.Join(Header[GapPath](), ","),
			"size_bytes,configured_rtt_ms,rtt_ms,delay_method,mtu,congestion_control,packets,dropped,lateness_p50_ms,lateness_p99_ms,lateness_max_ms,valid," + settings + ",path_packets,loss_applied_pct,overflow_drops,sent_packets,received_packets,loss_measured_pct,run_id"},
	} {
		if tc.header != tc.want {
			t.Errorf("%s header\n got: %s\nwant: %s", tc.file, tc.header, tc.want)
		}
	}
	if FileName[GapRow]() != "gap.csv" || FileName[GapRequest]() != "gap-requests.csv" || FileName[GapPath]() != "gap-path.csv" {
		t.Errorf("file names %s, %s, %s", FileName[GapRow](), FileName[GapRequest](), FileName[GapPath]())
	}
}

func TestSummarizeGap(t *testing.T) {
	req := func(mode string, newConn bool, total, server float64, status int, errText string) GapRequest {
		// the last byte is timed 10x the header, to tell them apart
		return GapRequest{Mode: mode, NewConn: newConn, TotalMS: total, ServerHeaderMS: Some(server), ServerLastByteMS: Some(10 * server), Status: status, Error: errText,
			TCPRTTMS: Some(50 + total/1000)}
	}
	reqs := []GapRequest{
		req(GapKeepAlive, false, 50, 0.1, 200, ""),
		req(GapKeepAlive, false, 52, 0.1, 200, ""),
		req(GapKeepAlive, false, 60, 0.1, 200, ""),
		req(GapKeepAlive, true, 100, 0.1, 200, ""), // not a kept-alive connection
		req(GapKeepAlive, false, 1, 0.1, 0, "timeout"),
		req(GapNew, true, 100, 1, 200, ""),
		req(GapNew, true, 104, 3, 200, ""),
		req(GapNew, true, 1, 0, 500, ""),
	}
	g := SummarizeGap(1024, 50, "tun", reqs)
	// The measured RTT is the median over the ok requests of both modes:
	// 50.05, 50.052, 50.06, 50.1, 50.1, 50.104 -> 50.08.
	want := GapRow{SizeBytes: 1024, ConfiguredRTTMS: 50, RTTMS: g.RTTMS, ServerMS: Some(2), ClientKeepaliveMS: Some(52), ClientNewMS: Some(102),
		ServerBlindPct: g.ServerBlindPct, Runs: 2, DelayMethod: "tun", ServerLastByteMS: Some(20), ServerLastByteBlindPct: g.ServerLastByteBlindPct}
	if g != want || math.Abs(g.ServerBlindPct.Value-98.0392) > 1e-4 || math.Abs(g.ServerLastByteBlindPct.Value-80.3922) > 1e-4 ||
		math.Abs(g.RTTMS.Value-50.08) > 1e-9 {
		t.Errorf("SummarizeGap\n got %+v\nwant %+v", g, want)
	}
	empty := SummarizeGap(1024, 0, "none", nil)
	if empty.ServerMS.Valid || empty.ClientNewMS.Valid || empty.ServerBlindPct.Valid || empty.ServerLastByteMS.Valid || empty.ServerLastByteBlindPct.Valid ||
		empty.RTTMS.Valid || empty.Runs != 0 {
		t.Errorf("no requests: %+v, want nothing measured", empty)
	}
	// Written and read back, a not-measured cell stays not measured.
	got, err := ReadAll[GapRow](bytes.NewReader(writeRows(t, []GapRow{empty, g})))
	if err != nil || len(got) != 2 || got[0].ServerBlindPct.Valid || math.Abs(got[1].ServerBlindPct.Value-98.039) > 1e-9 {
		t.Errorf("read back %+v, %v", got, err)
	}
}

// TestSummarizeGapHandshake: the handshake median and resumed share come
// from the ok new-connection requests only; without TLS both stay empty.
func TestSummarizeGapHandshake(t *testing.T) {
	req := func(mode string, hs float64, resumed bool, status int) GapRequest {
		return GapRequest{Mode: mode, NewConn: mode == GapNew, TotalMS: 100, Status: status, HandshakeMS: Some(hs), TLSResumed: resumed}
	}
	g := SummarizeGap(1024, 50, "tun", []GapRequest{
		req(GapNew, 100, false, 200), req(GapNew, 50, true, 200), req(GapNew, 52, true, 200), req(GapNew, 51, true, 200),
		req(GapNew, 1, true, 500),          // failed: not counted
		req(GapKeepAlive, 999, false, 200), // not a new connection
	})
	if !g.HandshakeMS.Valid || g.HandshakeMS.Value != 51.5 || !g.ResumedPct.Valid || g.ResumedPct.Value != 75 {
		t.Errorf("handshake %v, resumed %v: want 51.5 ms and 75%%", g.HandshakeMS, g.ResumedPct)
	}
	plain := SummarizeGap(1024, 50, "tun", []GapRequest{{Mode: GapNew, NewConn: true, TotalMS: 100, Status: 200}})
	if plain.HandshakeMS.Valid || plain.ResumedPct.Valid {
		t.Errorf("without TLS: handshake %v, resumed %v, want both empty", plain.HandshakeMS, plain.ResumedPct)
	}
}
