package recorder

// SSEStream is one SSE stream of the sse experiment (sse-streams.csv):
// when its request was sent (StartS, relative to the run's start), how
// long until the response's first byte (FirstByteMS), its status, the
// tick events received of those the stream should carry, their delivery
// delays (nearest-rank p50 and p95, and the largest) and how it ended
// (Outcome, one of SSEOutcomes).
type SSEStream struct {
	RunID, Route, Server   string
	Streams, Rep           int
	Client                 int
	StartS                 float64
	FirstByteMS            Maybe
	Status                 int
	Events, EventsExpected int
	DelayP50MS, DelayP95MS Maybe
	DelayMaxMS             Maybe
	Outcome, Error         string
}

// SSEStream.Outcome values: how a stream ended, as the client saw it.
const (
	SSEComplete  = "complete"  // status 200, the end event, then the end of the body
	SSETruncated = "truncated" // status 200, and the body ended before the end event
	SSEStatus    = "status"    // another status than 200
	SSEReset     = "reset"     // the connection was reset or closed before a response
	SSETimeout   = "timeout"   // the client's timeout, or the run's end, came first
	SSEError     = "error"     // anything else: connect refused, a malformed response
)

// SSEOutcomes lists the outcomes in column order.
var SSEOutcomes = []string{SSEComplete, SSETruncated, SSEStatus, SSEReset, SSETimeout, SSEError}

func (SSEStream) Schema() *Schema[SSEStream] { return &sseStreamSchema }

var sseStreamSchema = Schema[SSEStream]{file: "sse-streams.csv", cols: []Column[SSEStream]{
	Col("run_id", 0, func(r *SSEStream) any { return &r.RunID }),
	Col("route", 0, func(r *SSEStream) any { return &r.Route }),
	Col("server", 0, func(r *SSEStream) any { return &r.Server }),
	Col("streams", 0, func(r *SSEStream) any { return &r.Streams }),
	Col("rep", 0, func(r *SSEStream) any { return &r.Rep }),
	Col("client", 0, func(r *SSEStream) any { return &r.Client }),
	Col("start_s", msOfS, func(r *SSEStream) any { return &r.StartS }),
	Col("first_byte_ms", usOfMS, func(r *SSEStream) any { return &r.FirstByteMS }),
	Col("status", 0, func(r *SSEStream) any { return &r.Status }),
	Col("events", 0, func(r *SSEStream) any { return &r.Events }),
	Col("events_expected", 0, func(r *SSEStream) any { return &r.EventsExpected }),
	Col("delay_p50_ms", usOfMS, func(r *SSEStream) any { return &r.DelayP50MS }),
	Col("delay_p95_ms", usOfMS, func(r *SSEStream) any { return &r.DelayP95MS }),
	Col("delay_max_ms", usOfMS, func(r *SSEStream) any { return &r.DelayMaxMS }),
	Col("outcome", 0, func(r *SSEStream) any { return &r.Outcome }),
	Col("error", 0, func(r *SSEStream) any { return &r.Error }),
}}
