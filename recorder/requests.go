package recorder

import "strings"

// Request is one row of requests.csv: one scheduled /fast request. A request
// that failed or timed out still has its row, with Status 0 and Error set.
// Times are relative to the run start. A float that was not measured (NaN)
// is written as an empty cell and an empty cell reads back as NaN.
type Request struct {
	RunID, Route, Server                        string
	SlowClients, Rep, Seq                       int
	ScheduledS, StartS                          float64
	ScheduleLagMS, ConnectMS, TTFBMS, LatencyMS float64
	Status                                      int
	Bytes                                       int64
	Error                                       string
	// Shard is the shard (from 0) of `slowlab loadgen --shard I/N` that
	// sent the request; 0 when one process sent the whole schedule.
	Shard int
	// Protocol is what the client spoke, "HTTP/1.1", "HTTP/2" or
	// "HTTP/3"; empty for a request never sent. Conn is the client's end
	// of the TCP connection it went on ("127.0.0.1:43512": the peer the
	// server's sockets and access log name; over HTTP/3 its UDP socket's),
	// empty when none was had; requests on one kept-alive, HTTP/2 or
	// HTTP/3 connection share it. Stream is the HTTP/2 or HTTP/3 (QUIC)
	// stream ID, 0 over HTTP/1.1.
	Protocol, Conn string
	Stream         int
}

// NotSentPrefix starts the error column of a requests.csv row for a
// scheduled request that was never sent (the run was interrupted before it
// was due): such a row has status 0 and no timings.
const NotSentPrefix = "not_sent"

// NotSent reports whether r is a scheduled request that was never sent.
func (r Request) NotSent() bool { return strings.HasPrefix(r.Error, NotSentPrefix) }

func (Request) Schema() *Schema[Request] { return &requestSchema }

var requestSchema = Schema[Request]{file: "requests.csv", cols: []Column[Request]{
	Col("run_id", 0, func(r *Request) any { return &r.RunID }),
	Col("route", 0, func(r *Request) any { return &r.Route }),
	Col("server", 0, func(r *Request) any { return &r.Server }),
	Col("slow_clients", 0, func(r *Request) any { return &r.SlowClients }),
	Col("rep", 0, func(r *Request) any { return &r.Rep }),
	Col("seq", 0, func(r *Request) any { return &r.Seq }),
	Col("scheduled_s", msOfS, func(r *Request) any { return &r.ScheduledS }),
	Col("start_s", msOfS, func(r *Request) any { return &r.StartS }),
	Col("schedule_lag_ms", usOfMS, func(r *Request) any { return &r.ScheduleLagMS }),
	Col("connect_ms", usOfMS, func(r *Request) any { return &r.ConnectMS }),
	Col("ttfb_ms", usOfMS, func(r *Request) any { return &r.TTFBMS }),
	Col("latency_ms", usOfMS, func(r *Request) any { return &r.LatencyMS }),
	Col("status", 0, func(r *Request) any { return &r.Status }),
	Col("bytes", 0, func(r *Request) any { return &r.Bytes }),
	Col("error", 0, func(r *Request) any { return &r.Error }),
	Col("shard", 0, func(r *Request) any { return &r.Shard }),
	Col("protocol", 0, func(r *Request) any { return &r.Protocol }),
	Col("conn", 0, func(r *Request) any { return &r.Conn }),
	Col("stream", 0, func(r *Request) any { return &r.Stream }),
}}
