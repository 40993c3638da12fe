package recorder

import "strings"

// Request is one row of requests.csv: one scheduled /fast request. A request
// that failed or timed out still has its row, with Status 0 and Error set.
// Times are relative to the run start. A float that was not measured (NaN)
// is written as an empty cell and an empty cell reads back as NaN.
type Request struct {
	RunID         string  `csv:"run_id"`
	Route         string  `csv:"route"`
	Server        string  `csv:"server"`
	SlowClients   int     `csv:"slow_clients"`
	Rep           int     `csv:"rep"`
	Seq           int     `csv:"seq"`
	ScheduledS    float64 `csv:"scheduled_s,seconds"`
	StartS        float64 `csv:"start_s,seconds"`
	ScheduleLagMS float64 `csv:"schedule_lag_ms,millis"`
	ConnectMS     float64 `csv:"connect_ms,millis"`
	TTFBMS        float64 `csv:"ttfb_ms,millis"`
	LatencyMS     float64 `csv:"latency_ms,millis"`
	Status        int     `csv:"status"`
	Bytes         int64   `csv:"bytes"`
	Error         string  `csv:"error"`
	// Shard is the shard (from 0) of `slowlab loadgen --shard I/N` that
	// sent the request; 0 when one process sent the whole schedule.
	Shard int `csv:"shard"`
	// Protocol is what the client spoke, "HTTP/1.1", "HTTP/2" or
	// "HTTP/3"; empty for a request never sent. Conn is the client's end
	// of the TCP connection it went on ("127.0.0.1:43512": the peer the
	// server's sockets and access log name; over HTTP/3 its UDP socket's),
	// empty when none was had; requests on one kept-alive, HTTP/2 or
	// HTTP/3 connection share it. Stream is the HTTP/2 or HTTP/3 (QUIC)
	// stream ID, 0 over HTTP/1.1.
	Protocol string `csv:"protocol"`
	Conn     string `csv:"conn"`
	Stream   int    `csv:"stream"`
}

// NotSentPrefix starts the error column of a requests.csv row for a
// scheduled request that was never sent (the run was interrupted before it
// was due): such a row has status 0 and no timings.
const NotSentPrefix = "not_sent"

// NotSent reports whether r is a scheduled request that was never sent.
func (r Request) NotSent() bool { return strings.HasPrefix(r.Error, NotSentPrefix) }

func (Request) Schema() *Schema[Request] { return requestSchema }

var requestSchema = Tagged[Request]("requests.csv")
