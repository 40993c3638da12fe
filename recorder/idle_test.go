package recorder

import (
	"math"
	"testing"
)

func TestSummarizeIdle(t *testing.T) {
	conns := []IdleConn{
		{End: "fin", HeldS: Some(3.1)},
		{End: "fin", HeldS: Some(3.5), ReceivedBytes: 120},
		{End: "reset", HeldS: Some(9)},
		{End: "bound", HeldS: Some(20)},
		{End: "connect-error", Error: "i/o timeout"},
	}
	fast := []Request{
		{Status: 200, StartS: 1, LatencyMS: 2},
		{Status: 200, StartS: 1.1, LatencyMS: 4000},
		{Status: 0, StartS: 1.2, LatencyMS: 5000, Error: "EOF"},
		{StartS: math.NaN(), LatencyMS: math.NaN()}, // never sent
	}
	got := SummarizeIdle(IdleRun{}, conns, fast)
	want := IdleRun{Connected: 4, ConnectErrors: 1, FIN: 2, Reset: 1, Bound: 1, Responded: 1,
		ServerClosedP50S: Some(3.5), ServerClosedMaxS: Some(9), FastSent: 3, FastOK: 2, FastP50MS: Some(2), FastP95MS: Some(4000)}
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}
