package sse

import (
	"errors"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/recorder/recordertest"
)

func TestSummarizeRun(t *testing.T) {
	streams := []Stream{
		{EventsExpected: 3, Outcome: loadgen.SSEComplete, FirstByteMS: recorder.Some(2)},
		{EventsExpected: 3, Outcome: loadgen.SSETruncated, FirstByteMS: recorder.Some(4)},
	}
	var events []Event
	for i, d := range []float64{1, 2, 3, 4, 100} {
		events = append(events, Event{Seq: i, DelayMS: d})
	}
	run := SummarizeRun(RunRow{Status: recorder.RunOK}, nil, streams, events)
	if run.EventsExpected != 6 || run.Events != 5 || run.StreamsComplete != 1 {
		t.Errorf("counts %+v", run)
	}
	if run.DelayP50MS != recorder.Some(3) || run.DelayP95MS != recorder.Some(100) || run.DelayMaxMS != recorder.Some(100) || run.FirstByteMS != recorder.Some(3) {
		t.Errorf("delays p50 %v p95 %v max %v first byte %v", run.DelayP50MS, run.DelayP95MS, run.DelayMaxMS, run.FirstByteMS)
	}
	conds := Summarize([]RunRow{run, {Status: recorder.RunFailed}, {RunKey: lab.RunKey{Route: "direct"}, Status: recorder.RunOK}})
	if len(conds) != 2 || conds[0].Runs != 1 || conds[0].Excluded != 1 || conds[0].Events != 5 || conds[1].DelayP50MS.Valid {
		t.Errorf("conditions %+v", conds)
	}
}

// TestStreamRows: a stream the client measured becomes its sse-streams.csv
// row (the run's columns kept, times from t0) and an sse-events.csv row
// per event, with the delays' p50, p95 and max.
func TestStreamRows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := loadgen.SSEStream{Client: 7, Status: 200, Outcome: loadgen.SSETruncated, Start: t0.Add(time.Second), FirstByte: 2500 * time.Microsecond,
		Err: errors.New("unexpected EOF")}
	for i, d := range []time.Duration{1, 3, 2} {
		sent := t0.Add(time.Duration(2+i) * time.Second)
		s.Events = append(s.Events, loadgen.SSEDelivery{Seq: i, Sent: sent, Received: sent.Add(d * time.Millisecond)})
	}
	key := lab.RunKey{RunID: "r", Route: "direct"}
	row, evs := streamRows(Stream{ClientKey: lab.ClientKey{RunKey: key}}, t0, 5, s)
	want := Stream{ClientKey: lab.ClientKey{RunKey: key, Client: 7}, Status: 200, Outcome: loadgen.SSETruncated, Events: 3, EventsExpected: 5,
		StartS: 1, FirstByteMS: recorder.Some(2.5), Error: "unexpected EOF",
		DelayP50MS: recorder.Some(2), DelayP95MS: recorder.Some(3), DelayMaxMS: recorder.Some(3)}
	if row != want {
		t.Errorf("stream row\n got %+v\nwant %+v", row, want)
	}
	if len(evs) != 3 || evs[1] != (Event{ClientKey: lab.ClientKey{RunKey: key, Client: 7}, Seq: 1, SentS: 3, ReceivedS: 3.003, DelayMS: 3}) {
		t.Errorf("event rows %+v", evs)
	}
}

// TestRowContract: sse-events.csv's, sse-streams.csv's and sse-runs.csv's
// rows read back as written, and every field of each has one column.
func TestRowContract(t *testing.T) {
	recordertest.Contract[Event](t)
	recordertest.Contract[Stream](t)
	recordertest.Contract[RunRow](t)
}

func FuzzReadEvents(f *testing.F)  { recordertest.FuzzRead[Event](f) }
func FuzzReadStreams(f *testing.F) { recordertest.FuzzRead[Stream](f) }
func FuzzReadRuns(f *testing.F)    { recordertest.FuzzRead[RunRow](f) }

// TestRunColumnsKeepLayout: sse-runs.csv keeps every column's name, place
// and precision (the layout is 33ab07f's, before the shared status and
// /fast columns were written once).
func TestRunColumnsKeepLayout(t *testing.T) {
	const published = "run_id/0 route/0 server/0 streams/0 rep/0 interval_s/3 duration_s/3 started_at/0 status/0 reason/0 events_expected/0 events/0 streams_complete/0 delay_p50_ms/3 delay_p95_ms/3 delay_max_ms/3 first_byte_ms/3 slots/0 workers/0 held_max/0 workers_holding_max/0 fast_planned/0 fast_sent/0 fast_total/0 fast_ok/0 p50_ms/3 p95_ms/3 max_ms/3"
	if got := recordertest.Layout[RunRow](); got != published {
		t.Errorf("%s:\n got %s\nwant %s", runFile, got, published)
	}
}
