package loadgen

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// RequestRow is r as a requests.csv row of the run meta names, times
// relative to t0. A request never sent (the run ended before it was due)
// has its row too, its times not measured and ErrNotSent as its error; one
// skipped as late (Result.Skipped) has only its schedule lag.
func RequestRow(meta recorder.RunMeta, t0 time.Time, r Result) recorder.Request {
	row := recorder.Request{RunID: meta.RunID, Route: meta.Route, Server: meta.Server, SlowClients: meta.SlowClients,
		Rep: meta.Rep, Shard: meta.Shard, Seq: r.Seq, ScheduledS: r.ScheduledAt.Sub(t0).Seconds(), Status: r.Status, Bytes: r.Bytes}
	switch {
	case r.NotSent:
		nan := math.NaN()
		row.StartS, row.ScheduleLagMS, row.ConnectMS, row.TTFBMS, row.LatencyMS = nan, nan, nan, nan, nan
	case r.Skipped:
		// Not started: no times, but how late it was is kept.
		nan := math.NaN()
		row.StartS, row.ConnectMS, row.TTFBMS, row.LatencyMS = nan, nan, nan, nan
		row.ScheduleLagMS = ms(r.ScheduleLag)
	default:
		row.StartS, row.ScheduleLagMS, row.ConnectMS = r.Start.Sub(t0).Seconds(), ms(r.ScheduleLag), ms(r.Connect)
		row.TTFBMS, row.LatencyMS = ms(r.TTFB), ms(r.Latency)
	}
	if r.Err != nil {
		row.Error = r.Err.Error()
	}
	row.Protocol, row.Stream = r.Proto, int(r.Stream)
	if r.Conn.IsValid() {
		row.Conn = r.Conn.String()
	}
	return row
}

// DownloadRow is d as a large-responses.csv row, with the verdict on it:
// a download is complete only when the client read it whole with status
// 200 and, when the caller knows the app's send times (appKnown), the app
// reported finishing it (appSend).
func DownloadRow(meta recorder.RunMeta, d Download, appSend recorder.Maybe, appKnown bool) recorder.LargeResponse {
	row := recorder.LargeResponse{RunID: meta.RunID, Route: meta.Route, Server: meta.Server, SlowClients: meta.SlowClients,
		Rep: meta.Rep, Client: d.Client, Status: d.Status, Bytes: d.Bytes, ReceiveS: d.Receive.Seconds(),
		AppSendS: appSend, Complete: d.Complete, Outcome: recorder.DownloadComplete}
	switch {
	case errors.Is(d.Err, ErrIncomplete):
		row.Outcome = recorder.DownloadShortBody
	case d.Err != nil:
		row.Outcome = recorder.DownloadClientError
	case !d.Complete:
		row.Outcome = recorder.DownloadClientError
		row.Error = fmt.Sprintf("status %d, want 200", d.Status)
	case appKnown && !appSend.Valid:
		row.Outcome = recorder.DownloadAppUnfinished
		row.Error = "the app did not report finishing its send"
	}
	if d.Err != nil {
		row.Error = d.Err.Error()
	}
	return row
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
