package sse

import (
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// The results files of the rows this package declares.
const (
	eventFile  = "sse-events.csv"
	streamFile = "sse-streams.csv"
	runFile    = "sse-runs.csv"
)

// Event is one event of an SSE stream of the sse experiment
// (sse-events.csv), as the client received it. SentS is the server's
// timestamp in the event (its wall clock when it wrote the event) and
// ReceivedS the client's when it had read the whole event, both relative
// to the run's start; DelayMS = received - sent: the event's delivery
// delay (one machine, one clock, loopback).
type Event struct {
	lab.ClientKey `csv:"clients=streams"`
	Seq           int     `csv:"seq"`
	SentS         float64 `csv:"sent_s,micros"`
	ReceivedS     float64 `csv:"received_s,micros"`
	DelayMS       float64 `csv:"delay_ms,millis"`
}

func (Event) Schema() *recorder.Schema[Event] { return eventSchema }

var eventSchema = recorder.Tagged[Event](eventFile)

// Stream is one SSE stream of the sse experiment (sse-streams.csv):
// when its request was sent (StartS, relative to the run's start), how
// long until the response's first byte (FirstByteMS), its status, the
// tick events received of those the stream should carry, their delivery
// delays (nearest-rank p50 and p95, and the largest) and how it ended
// (Outcome, one of loadgen.SSEComplete, SSETruncated, SSEStatus,
// SSEReset, SSETimeout and SSEError).
type Stream struct {
	lab.ClientKey  `csv:"clients=streams"`
	StartS         float64        `csv:"start_s,seconds"`
	FirstByteMS    recorder.Maybe `csv:"first_byte_ms,millis"`
	Status         int            `csv:"status"`
	Events         int            `csv:"events"`
	EventsExpected int            `csv:"events_expected"`
	DelayP50MS     recorder.Maybe `csv:"delay_p50_ms,millis"`
	DelayP95MS     recorder.Maybe `csv:"delay_p95_ms,millis"`
	DelayMaxMS     recorder.Maybe `csv:"delay_max_ms,millis"`
	Outcome        string         `csv:"outcome"`
	Error          string         `csv:"error"`
}

func (Stream) Schema() *recorder.Schema[Stream] { return streamSchema }

var streamSchema = recorder.Tagged[Stream](streamFile)

// RunRow is one row of sse-runs.csv: one run of the sse experiment.
// Streams SSE streams of IntervalS for DurationS ran beside the open-loop
// /fast schedule. EventsExpected and Events count the tick events the
// streams should carry and those the client received; StreamsComplete the
// streams that ended with their end event. The delay columns are over
// every event of the run (nearest rank; max the largest), FirstByteMS the
// median over its streams. Slots is the app's capacity (workers x
// threads; empty for an event loop), Workers its worker processes;
// HeldMax is the most streams the app held at once, and WorkersHoldingMax
// the most workers holding at least one stream at once, both from the
// app's own count sampled during the run (empty when none was read). The
// /fast columns are runs.csv's (recorder.SummarizeRun).
type RunRow struct {
	lab.RunKey      `csv:"clients=streams"`
	IntervalS       float64        `csv:"interval_s,seconds"`
	DurationS       float64        `csv:"duration_s,seconds"`
	StartedAt       time.Time      `csv:"started_at"`
	Status          string         `csv:"status"`
	Reason          string         `csv:"reason"`
	EventsExpected  int            `csv:"events_expected"`
	Events          int            `csv:"events"`
	StreamsComplete int            `csv:"streams_complete"`
	DelayP50MS      recorder.Maybe `csv:"delay_p50_ms,millis"`
	DelayP95MS      recorder.Maybe `csv:"delay_p95_ms,millis"`
	DelayMaxMS      recorder.Maybe `csv:"delay_max_ms,millis"`
	FirstByteMS     recorder.Maybe `csv:"first_byte_ms,millis"`
	recorder.Holding
	recorder.FastFields
}

func (RunRow) Schema() *recorder.Schema[RunRow] { return runSchema }

var runSchema = recorder.Tagged[RunRow](runFile)

// SummarizeRun fills run's /fast columns from reqs (as recorder.SummarizeRun
// does) and its event columns from the run's streams and events.
func SummarizeRun(run RunRow, reqs []recorder.Request, streams []Stream, events []Event) RunRow {
	run.SummarizeFast(reqs)
	run.EventsExpected, run.Events, run.StreamsComplete = 0, len(events), 0
	var first []float64
	for _, s := range streams {
		run.EventsExpected += s.EventsExpected
		if s.Outcome == loadgen.SSEComplete {
			run.StreamsComplete++
		}
		first = recorder.AppendValid(first, s.FirstByteMS)
	}
	delays := make([]float64, len(events))
	for i, e := range events {
		delays[i] = e.DelayMS
	}
	run.DelayP50MS, run.DelayP95MS, run.DelayMaxMS = Delays(delays)
	run.FirstByteMS = recorder.Some(recorder.Median(first))
	return run
}

// Delays returns the nearest-rank p50 and p95 and the largest of
// delays, each invalid when there are none.
func Delays(delays []float64) (p50, p95, most recorder.Maybe) {
	return recorder.Some(recorder.NearestRank(delays, 50)), recorder.Some(recorder.NearestRank(delays, 95)), recorder.Some(recorder.NearestRank(delays, 100))
}

// Summary is one condition of sse over its ok runs: the printed
// table's row and the report's. Delays and /fast percentiles are medians
// of the runs' values (DelayMaxMS the largest); events and streams are
// summed; HeldMax and WorkersHoldingMax are the largest.
type Summary struct {
	Route, Server           string
	Streams                 int
	IntervalS, DurationS    float64
	Runs, Excluded          int
	EventsExpected, Events  int
	StreamsComplete         int
	DelayP50MS, DelayP95MS  recorder.Maybe
	DelayMaxMS, FirstByteMS recorder.Maybe
	Workers                 recorder.Maybe
	HeldMax                 recorder.Maybe
	WorkersHoldingMax       recorder.Maybe
	recorder.FastOver
}

// Summarize folds runs into one Summary per condition
// (route, server, streams, interval, duration), in order of first
// appearance; runs that did not end ok count only in Excluded.
func Summarize(runs []RunRow) []Summary {
	type key struct {
		route, server string
		streams       int
		interval, dur float64
	}
	var rows []Summary
	for _, g := range recorder.GroupRuns(runs, func(r RunRow) key { return key{r.Route, r.Server, r.Clients, r.IntervalS, r.DurationS} }) {
		first := g.All[0]
		row := Summary{Route: first.Route, Server: first.Server, Streams: first.Clients, IntervalS: first.IntervalS, DurationS: first.DurationS,
			Runs: len(g.OK), Excluded: g.Excluded(), FastOver: recorder.SummarizeFast(g.OK)}
		var p50, p95, most, firstByte, held, holding []float64
		for _, r := range g.OK {
			row.EventsExpected += r.EventsExpected
			row.Events += r.Events
			row.StreamsComplete += r.StreamsComplete
			row.Workers = r.Workers
			p50, p95, most = recorder.AppendValid(p50, r.DelayP50MS), recorder.AppendValid(p95, r.DelayP95MS), recorder.AppendValid(most, r.DelayMaxMS)
			firstByte = recorder.AppendValid(firstByte, r.FirstByteMS)
			held, holding = recorder.AppendValid(held, r.HeldMax), recorder.AppendValid(holding, r.WorkersHoldingMax)
		}
		row.DelayP50MS, row.DelayP95MS, row.DelayMaxMS = recorder.Some(recorder.Median(p50)), recorder.Some(recorder.Median(p95)), recorder.Some(recorder.NearestRank(most, 100))
		row.FirstByteMS = recorder.Some(recorder.Median(firstByte))
		row.HeldMax, row.WorkersHoldingMax = recorder.Some(recorder.NearestRank(held, 100)), recorder.Some(recorder.NearestRank(holding, 100))
		rows = append(rows, row)
	}
	return rows
}

// streamRows are s as an sse-streams.csv row and its sse-events.csv rows:
// stream (the run's and condition's columns) with s's measurements, times
// relative to t0.
func streamRows(stream Stream, t0 time.Time, expected int, s loadgen.SSEStream) (Stream, []Event) {
	stream.Client, stream.Status, stream.Outcome = s.Client, s.Status, s.Outcome
	stream.Events, stream.EventsExpected = len(s.Events), expected
	if !s.Start.IsZero() {
		stream.StartS = s.Start.Sub(t0).Seconds()
	}
	if s.FirstByte > 0 {
		stream.FirstByteMS = recorder.Some(float64(s.FirstByte.Microseconds()) / 1e3)
	}
	if s.Err != nil {
		stream.Error = s.Err.Error()
	}
	events := make([]Event, len(s.Events))
	delays := make([]float64, len(s.Events))
	for i, e := range s.Events {
		delays[i] = float64(e.Delay().Microseconds()) / 1e3
		events[i] = Event{ClientKey: lab.ClientKey{RunKey: stream.RunKey, Client: s.Client}, Seq: e.Seq, SentS: e.Sent.Sub(t0).Seconds(), ReceivedS: e.Received.Sub(t0).Seconds(), DelayMS: delays[i]}
	}
	stream.DelayP50MS, stream.DelayP95MS, stream.DelayMaxMS = Delays(delays)
	return stream, events
}

// VerdictFields implements recorder.RunRow.
func (RunRow) VerdictFields(r *RunRow) (id, status, reason *string) {
	return &r.RunID, &r.Status, &r.Reason
}
