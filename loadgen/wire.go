package loadgen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// A wire line carries what a load generator child process measured to the
// session that writes its rows, one JSON object per line: the open-loop
// results with their schedule, the slow readers' downloads with their
// sockets and headers, and the events the session acts on as they happen
// (the load's start, a slow reader's connect). Unlike a result line
// (ParseResultLine), it keeps every field a row or a metric is made of.
type WireLine struct {
	Kind string `json:"kind"`
	// Client is the slow reader of a KindConnect or KindDownload line.
	Client int `json:"client,omitempty"`
	// Seq is the scheduled request of a KindSent line.
	Seq int `json:"seq,omitempty"`
	// At is the instant of a KindStart line, Unix ns.
	At       int64         `json:"at,omitempty"`
	Result   *WireResult   `json:"result,omitempty"`
	Download *WireDownload `json:"download,omitempty"`
}

// Kinds of wire line.
const (
	KindStart    = "start"    // At: the load's t0
	KindSent     = "sent"     // Seq: an open-loop request started
	KindFast     = "fast"     // Result: one open-loop request
	KindConnect  = "connect"  // Client: a slow reader connected
	KindSlow     = "slow"     // Result: a slow reader's request, for its metrics
	KindDownload = "download" // Download: a slow reader's download
)

// WireResult is a Result on the wire: times in Unix ns (0 for none),
// durations in ns, the error as its text and ErrorReason.
type WireResult struct {
	Seq                 int    `json:"seq"`
	Worker              int    `json:"worker,omitempty"`
	Scheduled           bool   `json:"scheduled,omitempty"`
	ScheduledAt         int64  `json:"scheduled_at,omitempty"`
	Start               int64  `json:"start,omitempty"`
	ScheduleLag         int64  `json:"lag,omitempty"`
	NewConn             bool   `json:"new_conn,omitempty"`
	Connect             int64  `json:"connect,omitempty"`
	TTFB                int64  `json:"ttfb,omitempty"`
	Latency             int64  `json:"latency,omitempty"`
	Status              int    `json:"status,omitempty"`
	Bytes               int64  `json:"bytes,omitempty"`
	ServerTiming        int64  `json:"server_timing,omitempty"`
	ServerTimingTrailer int64  `json:"server_timing_trailer,omitempty"`
	NotSent             bool   `json:"not_sent,omitempty"`
	Skipped             bool   `json:"skipped,omitempty"`
	TraceID             string `json:"trace_id,omitempty"`
	Reason              string `json:"reason,omitempty"`
	Error               string `json:"error,omitempty"`
}

// WireDownload is a Download on the wire.
type WireDownload struct {
	Client     int         `json:"client"`
	Start      int64       `json:"start,omitempty"`
	Receive    int64       `json:"receive,omitempty"`
	Status     int         `json:"status,omitempty"`
	Bytes      int64       `json:"bytes,omitempty"`
	Complete   bool        `json:"complete,omitempty"`
	Local      string      `json:"local,omitempty"`
	Header     http.Header `json:"header,omitempty"`
	Stalled    int64       `json:"stalled,omitempty"`
	Resumed    int64       `json:"resumed,omitempty"`
	StallBytes int64       `json:"stall_bytes,omitempty"`
	LastByte   int64       `json:"last_byte,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	Error      string      `json:"error,omitempty"`
}

// AppendWireLine appends l as JSON, newline included.
func AppendWireLine(b []byte, l WireLine) ([]byte, error) {
	j, err := json.Marshal(l)
	if err != nil {
		return b, err
	}
	return append(append(b, j...), '\n'), nil
}

// ParseWireLine reads one wire line (without its newline), or says what is
// wrong with it.
func ParseWireLine(line string) (WireLine, error) {
	var l WireLine
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		return l, fmt.Errorf("wire line %q: %w", trim(line), err)
	}
	var want string
	switch l.Kind {
	case KindStart:
		if l.At <= 0 {
			want = "a start time"
		}
	case KindFast, KindSlow:
		if l.Result == nil {
			want = "a result"
		}
	case KindDownload:
		if l.Download == nil {
			want = "a download"
		}
	case KindConnect, KindSent:
	default:
		return l, fmt.Errorf("wire line %q: unknown kind %q", trim(line), l.Kind)
	}
	if want != "" {
		return l, fmt.Errorf("wire line %q: a %s line without %s", trim(line), l.Kind, want)
	}
	return l, nil
}

// ToWire is r on the wire.
func ToWire(r Result) *WireResult {
	w := &WireResult{Seq: r.Seq, Worker: r.Worker, Scheduled: r.Scheduled, ScheduledAt: unixNS(r.ScheduledAt), Start: unixNS(r.Start),
		ScheduleLag: int64(r.ScheduleLag), NewConn: r.NewConn, Connect: int64(r.Connect), TTFB: int64(r.TTFB), Latency: int64(r.Latency),
		Status: r.Status, Bytes: r.Bytes, ServerTiming: int64(r.ServerTiming), ServerTimingTrailer: int64(r.ServerTimingTrailer),
		NotSent: r.NotSent, Skipped: r.Skipped}
	if r.TraceID.IsValid() {
		w.TraceID = r.TraceID.String()
	}
	w.Reason, w.Error = wireError(r.Err)
	return w
}

// Result is w as measured: its error has w's text and ErrorReason.
func (w *WireResult) Result() (Result, error) {
	r := Result{Seq: w.Seq, Worker: w.Worker, Scheduled: w.Scheduled, ScheduledAt: fromNS(w.ScheduledAt), Start: fromNS(w.Start),
		ScheduleLag: time.Duration(w.ScheduleLag), NewConn: w.NewConn, Connect: time.Duration(w.Connect), TTFB: time.Duration(w.TTFB),
		Latency: time.Duration(w.Latency), Status: w.Status, Bytes: w.Bytes, ServerTiming: time.Duration(w.ServerTiming),
		ServerTimingTrailer: time.Duration(w.ServerTimingTrailer), NotSent: w.NotSent, Skipped: w.Skipped}
	if w.TraceID != "" {
		id, err := trace.TraceIDFromHex(w.TraceID)
		if err != nil {
			return r, fmt.Errorf("request %d: trace ID %q: %w", w.Seq, w.TraceID, err)
		}
		r.TraceID = id
	}
	var err error
	r.Err, err = fromWireError(w.Reason, w.Error)
	return r, err
}

// DownloadToWire is d on the wire.
func DownloadToWire(d Download) *WireDownload {
	w := &WireDownload{Client: d.Client, Start: unixNS(d.Start), Receive: int64(d.Receive), Status: d.Status, Bytes: d.Bytes,
		Complete: d.Complete, Header: d.Header, Stalled: unixNS(d.Stalled), Resumed: unixNS(d.Resumed), StallBytes: d.StallBytes,
		LastByte: unixNS(d.LastByte)}
	if d.Local.IsValid() {
		w.Local = d.Local.String()
	}
	w.Reason, w.Error = wireError(d.Err)
	return w
}

// Download is w as measured.
func (w *WireDownload) Download() (Download, error) {
	d := Download{Client: w.Client, Start: fromNS(w.Start), Receive: time.Duration(w.Receive), Status: w.Status, Bytes: w.Bytes,
		Complete: w.Complete, Header: w.Header, Stalled: fromNS(w.Stalled), Resumed: fromNS(w.Resumed), StallBytes: w.StallBytes,
		LastByte: fromNS(w.LastByte)}
	if w.Local != "" {
		a, err := netip.ParseAddrPort(w.Local)
		if err != nil {
			return d, fmt.Errorf("download %d: local address: %w", w.Client, err)
		}
		d.Local = a
	}
	var err error
	d.Err, err = fromWireError(w.Reason, w.Error)
	return d, err
}

func wireError(err error) (reason, msg string) {
	if err == nil {
		return "", ""
	}
	return ErrorReason(err), err.Error()
}

// fromWireError is the error of a reason and text, so that ErrorReason
// and errors.Is see what they saw in the child.
func fromWireError(reason, msg string) (error, error) {
	if reason == "" {
		if msg != "" {
			return nil, fmt.Errorf("error %q without a reason", msg)
		}
		return nil, nil
	}
	cause, ok := reasonCause[reason]
	if !ok {
		return nil, fmt.Errorf("error %q: unknown reason %q", msg, reason)
	}
	if msg == "" {
		msg = reason
	}
	return &remoteError{msg: msg, cause: cause}, nil
}

func unixNS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNS(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
