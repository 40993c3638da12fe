package buffersweep

import (
	"path/filepath"
	"testing"

	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/lab/slowclient"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// modelConfig is a path of route under tcp_wmem max wmem: tcp_rmem's
// default 128 KiB, wmem_max and rmem_max 4 MiB, the slow client's 8 KiB
// SO_RCVBUF, the lab's proxy buffers.
func modelConfig(route stack.Route, wmem int64) pathmodel.Config {
	return pathmodel.Config{Route: route, TCPWmem: recorder.TCPMem{Min: 4096, Default: 16384, Max: wmem},
		TCPRmem: recorder.TCPMem{Min: 4096, Default: 131072, Max: 32 << 20}, WmemMax: 4 << 20, RmemMax: 4 << 20,
		ClientRcvBuf: 8 << 10, Proxy: stack.Deployment{}.ResponseBuffers()}
}

// cellOf writes a cell's results directory: one ok run of route whose two
// downloads had inFlight bytes in flight at most and took appSend seconds
// to send, and returns the row cellRows makes of it with the model's
// prediction from c.
func cellOf(t *testing.T, c pathmodel.Config, inFlight int64, appSend float64) Cell {
	t.Helper()
	const size, rate = 16 << 20, 2 << 20
	dir := t.TempDir()
	run := recorder.Run{RunID: "run1", Route: string(c.Route), Server: "sync-2", SlowClients: 2, Status: recorder.RunOK}
	var hops []recorder.Hop
	var larges []recorder.LargeResponse
	for d := range 2 {
		for i, ts := range []float64{0.05, 0.1, 0.15} {
			w := min(size, inFlight+int64(i)*rate/20)
			hops = append(hops, recorder.Hop{RunID: "run1", TS: ts, Download: d, Hop: recorder.HopAppWritten, Bytes: w, Source: "sock_diag"},
				recorder.Hop{RunID: "run1", TS: ts, Download: d, Hop: recorder.HopClientRead, Bytes: w - inFlight, Source: "sock_diag"})
		}
		larges = append(larges, recorder.LargeResponse{RunID: "run1", Route: run.Route, Server: "sync-2", SlowClients: 2, Client: d,
			Status: 200, Bytes: size, ReceiveS: 8, AppSendS: recorder.Some(appSend), Complete: true, Outcome: recorder.DownloadComplete})
	}
	write(t, dir, []recorder.Run{run})
	write(t, dir, hops)
	write(t, dir, larges)
	res := &slowclient.Result{Dir: dir, Runs: []recorder.Run{run},
		Conditions: []recorder.Condition{{Route: run.Route, Server: "sync-2", SlowClients: 2, Runs: 1, P95MS: recorder.Some(3000)}}}
	p, err := pathmodel.Predict(c)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := cellRows(res, dir, "cell", size, rate, map[stack.Route]pathmodel.Capacity{c.Route: p})
	if err != nil || len(cells) != 1 {
		t.Fatalf("cellRows: %d cells, %v", len(cells), err)
	}
	return cells[0]
}

func write[T recorder.Row[T]](t *testing.T, dir string, rows []T) {
	t.Helper()
	w, err := recorder.CreateFile[T](dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := recorder.ReadFile[T](filepath.Join(dir, recorder.FileName[T]())); err != nil {
		t.Fatal(err)
	}
}

// The prediction comes from configuration: other samples (twice the bytes
// in flight, half the send time) change the measured columns and not the
// predicted ones; another tcp_wmem maximum or SO_RCVBUF changes the
// predicted ones and not the measured.
func TestPredictionIsFromConfigurationOnly(t *testing.T) {
	c := modelConfig(stack.RouteBufferingOff, 1<<20)
	a := cellOf(t, c, 3<<20, 6.5)
	pred := func(cell Cell) [4]recorder.Maybe {
		return [4]recorder.Maybe{cell.CapacityPredictedBytes, cell.AppSendPredictedS, cell.PredictedAppSendS, {}}
	}
	meas := func(cell Cell) [4]recorder.Maybe {
		return [4]recorder.Maybe{cell.CapacityMeasuredBytes, cell.AppSendMeasuredS, cell.CapacityBytes, cell.AppSendS}
	}
	// 1 MiB app send + 128 KiB + 16 KiB proxy + 1 MiB proxy send + 16 KiB client.
	wantCap := float64(2<<20 + 160<<10)
	if a.CapacityPredictedBytes != recorder.Some(wantCap) || a.AppSendPredictedS != recorder.Some((16<<20-wantCap)/(2<<20)) ||
		a.PredictedAppSendS != a.AppSendPredictedS || a.CapacityMeasuredBytes != recorder.Some(3<<20) || a.AppSendMeasuredS != recorder.Some(6.5) {
		t.Fatalf("cell %+v", a)
	}
	if want := (6.5 - a.AppSendPredictedS.Value) / a.AppSendPredictedS.Value * 100; a.PredictionErrorPct != recorder.Some(want) {
		t.Errorf("error %v, want %v%%", a.PredictionErrorPct, want)
	}

	b := cellOf(t, c, 6<<20, 3.2)
	if pred(b) != pred(a) {
		t.Errorf("other samples changed the prediction: %v -> %v", pred(a), pred(b))
	}
	if meas(b) == meas(a) || b.CapacityMeasuredBytes != recorder.Some(6<<20) || b.AppSendMeasuredS != recorder.Some(3.2) {
		t.Errorf("other samples: measured %v -> %v, want 6 MiB and 3.2 s", meas(a), meas(b))
	}

	wider := modelConfig(stack.RouteBufferingOff, 4<<20)
	w := cellOf(t, wider, 3<<20, 6.5)
	if w.CapacityPredictedBytes.Value != a.CapacityPredictedBytes.Value+2*(3<<20) || !(w.AppSendPredictedS.Value < a.AppSendPredictedS.Value) {
		t.Errorf("tcp_wmem max 1m -> 4m: capacity %v -> %v, app_send %v -> %v; want 6 MiB more (two send buffers) and a shorter send",
			a.CapacityPredictedBytes, w.CapacityPredictedBytes, a.AppSendPredictedS, w.AppSendPredictedS)
	}
	rcv := modelConfig(stack.RouteBufferingOff, 1<<20)
	rcv.ClientRcvBuf = 1 << 20
	r := cellOf(t, rcv, 3<<20, 6.5)
	if r.CapacityPredictedBytes.Value != a.CapacityPredictedBytes.Value+(2<<20)-(16<<10) {
		t.Errorf("SO_RCVBUF 8k -> 1m: capacity %v -> %v, want 2 MiB - 16 KiB more", a.CapacityPredictedBytes, r.CapacityPredictedBytes)
	}
	if meas(w) != meas(a) || meas(r) != meas(a) {
		t.Errorf("the configuration changed the measured columns: %v, %v, %v", meas(a), meas(w), meas(r))
	}
}
