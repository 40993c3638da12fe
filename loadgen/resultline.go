package loadgen

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A result line carries one Result from a load generator running as a
// child process (`slowlab probe-loop`, in the load generator's own
// cgroup) to the session that writes its rows: the session's memory and
// CPU (sampling, CSV writing) then stay out of the load generator's
// limits. One line per result, space-separated:
//
//	KIND WORKER SEQ START_UNIX_NS CONNECT_NS TTFB_NS LATENCY_NS STATUS BYTES NEW_CONN REASON ERROR
//
// KIND is a word (probe, hold), NEW_CONN 0 or 1, REASON the error's
// ErrorReason ("-" for none) and ERROR the error's text, Go-quoted.

// AppendResultLine appends r as a result line of kind, newline included.
func AppendResultLine(b []byte, kind string, r Result) []byte {
	reason := ErrorReason(r.Err)
	msg := ""
	if r.Err != nil {
		msg = r.Err.Error()
	}
	if reason == "" {
		reason = "-"
	}
	newConn := 0
	if r.NewConn {
		newConn = 1
	}
	b = fmt.Appendf(b, "%s %d %d %d %d %d %d %d %d %d %s ", kind, r.Worker, r.Seq, r.Start.UnixNano(),
		r.Connect, r.TTFB, r.Latency, r.Status, r.Bytes, newConn, reason)
	b = strconv.AppendQuote(b, msg)
	return append(b, '\n')
}

// reasonCause is the error each reason stands for, so that a parsed
// result's error has the ErrorReason the child's had.
var reasonCause = map[string]error{"timeout": context.DeadlineExceeded, "refused": syscall.ECONNREFUSED,
	"reset": syscall.ECONNRESET, "eof": io.EOF, "canceled": context.Canceled, "incomplete": ErrIncomplete,
	"not_sent": ErrNotSent, "late": ErrLate, "header_too_large": ErrHeaderTooLarge, "other": nil}

// remoteError is an error measured in another process: its text, and the
// cause its reason stands for.
type remoteError struct {
	msg   string
	cause error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.cause }

// ParseResultLine reads a result line (without its newline): its kind and
// result, or an error naming what is wrong.
func ParseResultLine(line string) (string, Result, error) {
	var r Result
	head, quoted, ok := cutFields(line, 11)
	if !ok {
		return "", r, fmt.Errorf("result line %q: want 12 fields", trim(line))
	}
	var n [9]int64
	for i, f := range head[1:10] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil || (v < 0 && i != 2) {
			return "", r, fmt.Errorf("result line %q: field %d %q is not a count", trim(line), i+2, f)
		}
		n[i] = v
	}
	msg, err := strconv.Unquote(quoted)
	if err != nil {
		return "", r, fmt.Errorf("result line %q: error text: %w", trim(line), err)
	}
	reason := head[10]
	cause, known := reasonCause[reason]
	switch {
	case reason == "-" && msg != "", reason != "-" && !known:
		return "", r, fmt.Errorf("result line %q: reason %q with error %q", trim(line), reason, msg)
	case n[8] > 1:
		return "", r, fmt.Errorf("result line %q: new_conn %d, want 0 or 1", trim(line), n[8])
	}
	r = Result{Worker: int(n[0]), Seq: int(n[1]), Start: time.Unix(0, n[2]), Connect: time.Duration(n[3]), TTFB: time.Duration(n[4]),
		Latency: time.Duration(n[5]), Status: int(n[6]), Bytes: n[7], NewConn: n[8] == 1}
	if reason != "-" {
		r.Err = &remoteError{msg: msg, cause: cause}
	}
	return head[0], r, nil
}

// cutFields splits the first n space-separated fields off line and
// returns them with the rest.
func cutFields(line string, n int) ([]string, string, bool) {
	out := make([]string, 0, n)
	rest := line
	for range n {
		f, r, ok := strings.Cut(rest, " ")
		if !ok || f == "" {
			return nil, "", false
		}
		out, rest = append(out, f), r
	}
	return out, rest, true
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
