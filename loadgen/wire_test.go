package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// wireErrors are errors of every reason, wrapped as the load generator
// wraps them.
var wireErrors = []error{nil, fmt.Errorf("get: %w", context.DeadlineExceeded), syscall.ECONNREFUSED, syscall.ECONNRESET,
	io.ErrUnexpectedEOF, context.Canceled, fmt.Errorf("%w: 3 of 10 bytes", ErrIncomplete), ErrNotSent,
	fmt.Errorf("%w by 2s", ErrLate), errors.New("odd \"text\"\n\twith tabs")}

// sameError: the same text and the same ErrorReason, and errors.Is sees
// the cause the reason stands for.
func sameError(t *testing.T, what string, got, want error) {
	t.Helper()
	if ErrorReason(got) != ErrorReason(want) || (want == nil) != (got == nil) || want != nil && got.Error() != want.Error() {
		t.Errorf("%s: error %v (reason %q), want %v (reason %q)", what, got, ErrorReason(got), want, ErrorReason(want))
	}
	if errors.Is(want, ErrIncomplete) != errors.Is(got, ErrIncomplete) {
		t.Errorf("%s: errors.Is(ErrIncomplete) changed across the wire", what)
	}
}

// A Result and a Download cross from the load generator child to the
// session with every field a row or a metric is made of.
func TestWireRoundTrip(t *testing.T) {
	at := time.Unix(1764770000, 123456789)
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	for i, e := range wireErrors {
		in := Result{Seq: 100 + i, Worker: i, Scheduled: true, ScheduledAt: at, Start: at.Add(time.Millisecond), ScheduleLag: time.Millisecond,
			NewConn: i%2 == 0, Connect: 150 * time.Microsecond, TTFB: 2 * time.Millisecond, Latency: 3 * time.Millisecond, Status: 200,
			Bytes: 3, ServerTiming: 1200 * time.Microsecond, ServerTimingTrailer: 2 * time.Millisecond, NotSent: i == 7, Skipped: i == 8,
			TraceID: tid, Err: e}
		got := roundTrip(t, WireLine{Kind: KindFast, Result: ToWire(in)}).Result
		r, err := got.Result()
		if err != nil {
			t.Fatal(err)
		}
		sameError(t, "result", r.Err, e)
		r.Err, in.Err = nil, nil
		if !reflect.DeepEqual(r, in) {
			t.Errorf("result\n got %+v\nwant %+v", r, in)
		}

		d := Download{Client: i, Start: at, Receive: 2 * time.Second, Status: 200, Bytes: 8 << 20, Complete: e == nil,
			Local: netip.MustParseAddrPort("[::1]:40312"), Header: http.Header{"Content-Length": {"8388608"}},
			Stalled: at.Add(time.Second), Resumed: at.Add(3 * time.Second), StallBytes: 65536, LastByte: at.Add(4 * time.Second), Err: e}
		if i%2 == 1 {
			d.Local, d.Header, d.Stalled, d.Resumed = netip.AddrPort{}, nil, time.Time{}, time.Time{}
		}
		gd, err := roundTrip(t, WireLine{Kind: KindDownload, Client: i, Download: DownloadToWire(d)}).Download.Download()
		if err != nil {
			t.Fatal(err)
		}
		sameError(t, "download", gd.Err, e)
		gd.Err, d.Err = nil, nil
		if !reflect.DeepEqual(gd, d) {
			t.Errorf("download\n got %+v\nwant %+v", gd, d)
		}
	}
}

func roundTrip(t *testing.T, l WireLine) WireLine {
	t.Helper()
	b, err := AppendWireLine(nil, l)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), "\n") != 1 || b[len(b)-1] != '\n' {
		t.Fatalf("line %q: want exactly one newline, at the end", b)
	}
	got, err := ParseWireLine(strings.TrimSuffix(string(b), "\n"))
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return got
}

// A line the session cannot trust is refused, naming what is wrong.
func TestWireRefusesCorruptLines(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{``, "unexpected end"},
		{`{"kind":"start"}`, "without a start time"},
		{`{"kind":"fast"}`, "without a result"},
		{`{"kind":"download","client":1}`, "without a download"},
		{`{"kind":"probe","result":{}}`, `unknown kind "probe"`},
		{`{"kind":"fast","result":{"seq":"7"}}`, "cannot unmarshal"},
	} {
		if l, err := ParseWireLine(tc.line); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %+v, %v; want an error saying %q", tc.line, l, err, tc.want)
		}
	}
	for _, tc := range []struct {
		w    WireResult
		want string
	}{
		{WireResult{Error: "text without reason"}, "without a reason"},
		{WireResult{Reason: "sleepy", Error: "x"}, `unknown reason "sleepy"`},
		{WireResult{TraceID: "xyz"}, "trace ID"},
	} {
		if r, err := tc.w.Result(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %+v, %v; want an error saying %q", tc.w, r, err, tc.want)
		}
	}
	if d, err := (&WireDownload{Client: 2, Local: "127.0.0.1"}).Download(); err == nil || !strings.Contains(err.Error(), "local address") {
		t.Errorf("a local address without a port: %+v, %v", d, err)
	}
}

// Whatever a line holds, parsing it never panics, and a line whose result
// or download reads back encodes to one that reads back the same.
func FuzzParseWireLine(f *testing.F) {
	slowlabtest.SeedFiles(f, "*.wire")
	f.Fuzz(func(t *testing.T, line string) {
		l, err := ParseWireLine(line)
		if err != nil {
			return
		}
		if l.Result != nil {
			r, err := l.Result.Result()
			if err != nil {
				return
			}
			r2, err := ToWire(r).Result()
			if err != nil || r2.Seq != r.Seq || r2.Latency != r.Latency || !r2.Start.Equal(r.Start) || ErrorReason(r2.Err) != ErrorReason(r.Err) {
				t.Fatalf("%q: %+v -> %+v, %v", line, r, r2, err)
			}
		}
		if l.Download != nil {
			d, err := l.Download.Download()
			if err != nil {
				return
			}
			d2, err := DownloadToWire(d).Download()
			if err != nil || d2.Bytes != d.Bytes || d2.Local != d.Local || d2.Complete != d.Complete || ErrorReason(d2.Err) != ErrorReason(d.Err) {
				t.Fatalf("%q: %+v -> %+v, %v", line, d, d2, err)
			}
		}
	})
}
