package recorder

// SSEEvent is one event of an SSE stream of the sse experiment
// (sse-events.csv), as the client received it. SentS is the server's
// timestamp in the event (its wall clock when it wrote the event) and
// ReceivedS the client's when it had read the whole event, both relative
// to the run's start; DelayMS = received - sent: the event's delivery
// delay (one machine, one clock, loopback).
type SSEEvent struct {
	RunID, Route, Server string
	Streams, Rep         int
	Client, Seq          int
	SentS, ReceivedS     float64
	DelayMS              float64
}

func (SSEEvent) Schema() *Schema[SSEEvent] { return &sseEventSchema }

var sseEventSchema = Schema[SSEEvent]{file: "sse-events.csv", cols: []Column[SSEEvent]{
	Col("run_id", 0, func(r *SSEEvent) any { return &r.RunID }),
	Col("route", 0, func(r *SSEEvent) any { return &r.Route }),
	Col("server", 0, func(r *SSEEvent) any { return &r.Server }),
	Col("streams", 0, func(r *SSEEvent) any { return &r.Streams }),
	Col("rep", 0, func(r *SSEEvent) any { return &r.Rep }),
	Col("client", 0, func(r *SSEEvent) any { return &r.Client }),
	Col("seq", 0, func(r *SSEEvent) any { return &r.Seq }),
	Col("sent_s", usOfS, func(r *SSEEvent) any { return &r.SentS }),
	Col("received_s", usOfS, func(r *SSEEvent) any { return &r.ReceivedS }),
	Col("delay_ms", usOfMS, func(r *SSEEvent) any { return &r.DelayMS }),
}}
