package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// A result crosses from the load generator's process to the session's
// with every field the rows and metrics use, its error's text and reason.
func TestResultLineRoundTrip(t *testing.T) {
	start := time.Unix(1764770000, 123456789)
	errs := []error{nil, fmt.Errorf("get: %w", context.DeadlineExceeded), syscall.ECONNREFUSED, syscall.ECONNRESET, io.ErrUnexpectedEOF,
		context.Canceled, fmt.Errorf("%w: 3 of 10 bytes", ErrIncomplete), ErrNotSent, ErrLate, fmt.Errorf("get: %w", ErrHeaderTooLarge), errors.New("odd \"text\"\n\twith tabs")}
	for i, e := range errs {
		in := Result{Worker: i, Seq: 100 + i, Start: start, Connect: 150 * time.Microsecond, TTFB: 2 * time.Millisecond,
			Latency: 3 * time.Millisecond, Status: 200, Bytes: 3, NewConn: i%2 == 0, Err: e}
		line := AppendResultLine(nil, "probe", in)
		if strings.Count(string(line), "\n") != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("line %q: want exactly one newline, at the end", line)
		}
		kind, got, err := ParseResultLine(strings.TrimSuffix(string(line), "\n"))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if kind != "probe" || got.Worker != in.Worker || got.Seq != in.Seq || !got.Start.Equal(in.Start) || got.Connect != in.Connect ||
			got.TTFB != in.TTFB || got.Latency != in.Latency || got.Status != in.Status || got.Bytes != in.Bytes || got.NewConn != in.NewConn {
			t.Errorf("%q: got %s %+v", line, kind, got)
		}
		if ErrorReason(got.Err) != ErrorReason(e) || (e != nil && got.Err.Error() != e.Error()) {
			t.Errorf("%q: error %v (reason %q), want %v (reason %q)", line, got.Err, ErrorReason(got.Err), e, ErrorReason(e))
		}
	}
}

func TestResultLineRefusesCorruptLines(t *testing.T) {
	for _, line := range []string{
		"",
		"probe 1 2 3 4 5 6 200 3 1 -",     // no error field
		`probe 1 2 3 4 5 6 200 3 1 - "x`,  // unterminated quote
		`probe 1 2 3 4 5 x 200 3 1 - ""`,  // not a number
		`probe 1 2 3 4 5 -6 200 3 1 - ""`, // negative latency
		`probe 1 2 3 4 5 6 200 3 2 - ""`,  // new_conn 2
		`probe 1 2 3 4 5 6 200 3 1 - "text without reason"`, // error text, no reason
		`probe 1 2 3 4 5 6 200 3 1 sleepy "x"`,              // unknown reason
		`probe  1 2 3 4 5 6 200 3 1 - ""`,                   // empty field
	} {
		if _, r, err := ParseResultLine(line); err == nil {
			t.Errorf("%q parsed as %+v, want an error", line, r)
		}
	}
}

// Whatever a line holds, parsing it never panics, and a line that parses
// encodes back to one that parses to the same result.
func FuzzParseResultLine(f *testing.F) {
	slowlabtest.SeedFiles(f, "*.line")
	f.Fuzz(func(t *testing.T, line string) {
		kind, r, err := ParseResultLine(line)
		if err != nil || strings.ContainsAny(kind, " \n") {
			return
		}
		again := strings.TrimSuffix(string(AppendResultLine(nil, kind, r)), "\n")
		kind2, r2, err := ParseResultLine(again)
		if err != nil || kind2 != kind || r2.Seq != r.Seq || r2.Latency != r.Latency || ErrorReason(r2.Err) != ErrorReason(r.Err) {
			t.Fatalf("%q -> %q -> %v %v", line, again, r2, err)
		}
	})
}
