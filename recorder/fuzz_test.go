package recorder_test

import (
	"strings"
	"testing"

	"github.com/slowlab/slowlab/recorder"
)

// TestReadEdgeCases covers inputs a short fuzz run may not reach.
func TestReadEdgeCases(t *testing.T) {
	reqHeader := strings.Join(recorder.Header[recorder.Request](), ",") + "\n"
	req := func(seq, latency, errCell string) string {
		return reqHeader + "r1,direct,sync-2,2,1," + seq + ",0.25,0.25,0,0.1,1," + latency + ",200,12," + errCell + ",0,HTTP/1.1,127.0.0.1:43210,0\n"
	}
	runHeader := strings.Join(recorder.Header[recorder.Run](), ",") + "\n"
	run := func(startedAt string) string {
		return runHeader + "r1,direct,sync-2,2,1," + startedAt + ",ok,,72,72,72,72" + strings.Repeat(",", 22) + "\n"
	}
	accepted := []struct {
		name string
		data string
		read func(*testing.T, []byte)
	}{
		{"CR CR LF inside a quoted field", req("0", "1", "\"a\r\r\nb\""), roundTripOnly[recorder.Request]},
		{"CRLF line endings", strings.ReplaceAll(req("0", "1", ""), "\n", "\r\n"), roundTripOnly[recorder.Request]},
		{"invalid UTF-8 in a string", req("0", "1", "\xff\xfe"), roundTripOnly[recorder.Request]},
		{"negative zero", req("0", "-0", ""), roundTripOnly[recorder.Request]},
		{"hex float", req("0", "0x1p-2", ""), roundTripOnly[recorder.Request]},
		{"exponent and plus sign", req("+5", "1.5e3", ""), roundTripOnly[recorder.Request]},
		{"quoted number", req(`"5"`, `"1.5"`, ""), roundTripOnly[recorder.Request]},
		{"more digits than the column keeps", req("0", "1.23456789", ""), roundTripOnly[recorder.Request]},
		{"no final newline", strings.TrimSuffix(req("0", "1", "x"), "\n"), roundTripOnly[recorder.Request]},
		{"blank lines", reqHeader + "\n" + strings.TrimPrefix(req("0", "1", ""), reqHeader) + "\n\n", roundTripOnly[recorder.Request]},
		{"zero time reads as zero", run("0001-01-01T00:00:00Z"), roundTripOnly[recorder.Run]},
		{"offset time reads as UTC", run("2025-03-01T13:00:00+01:00"), roundTripOnly[recorder.Run]},
		{"year 0", run("0000-01-01T00:00:00Z"), roundTripOnly[recorder.Run]},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) { tt.read(t, []byte(tt.data)) })
	}

	rejected := []struct {
		name string
		err  error
		want string
	}{
		{"number out of range", readErr[recorder.Request](strings.NewReader(req("0", "1e400", ""))),
			`requests.csv line 2, column 12 (latency_ms): "1e400": want a finite decimal number: value out of range`},
		{"Inf", readErr[recorder.Request](strings.NewReader(req("0", "+Inf", ""))),
			`requests.csv line 2, column 12 (latency_ms): "+Inf": want a finite decimal number`},
		{"int out of range", readErr[recorder.Request](strings.NewReader(req("99999999999999999999", "1", ""))),
			`requests.csv line 2, column 6 (seq): "99999999999999999999": want an integer: value out of range`},
		{"UTC year before 0", readErr[recorder.Run](strings.NewReader(run("0000-01-01T00:30:00+01:00"))),
			`runs.csv line 2, column 6 (started_at): "0000-01-01T00:30:00+01:00": want an RFC 3339 time: year -1 in UTC`},
		{"byte order mark", readErr[recorder.Request](strings.NewReader("\ufeff" + req("0", "1", ""))),
			`requests.csv: header column 1: want "run_id", got "\ufeffrun_id": header does not match the CSV contract`},
	}
	for _, tt := range rejected {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("%s: error\n got: %v\nwant: %s", tt.name, tt.err, tt.want)
		}
	}
}

func roundTripOnly[T recorder.Row[T]](t *testing.T, data []byte) { checkRoundTrip[T](t, data) }
