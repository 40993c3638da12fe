package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/appserver"
)

// fuzzLogLine is maxLogLine while FuzzLogReaders runs: small, so that the
// fuzzer reaches lines over it from the real lines of the seeds (the
// longest, a client timeout, is 240 bytes).
const fuzzLogLine = 300

// FuzzLogReaders: the log readers (LogLines; the proxy client timeouts,
// the workers' timeouts and the app's send log read through it), seeded
// from the logs in testdata/logs, never hand on a line over the bound, cut
// lines as reading the file whole does, and, where no line reaches the
// bound, give what reading the file whole gives; a line over it fails
// naming the file and that line.
func FuzzLogReaders(f *testing.F) {
	logs, err := filepath.Glob(filepath.Join("testdata", "logs", "*"))
	if err != nil || len(logs) == 0 {
		f.Fatalf("seeds: %v %v", logs, err)
	}
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)-len(b)/3])                            // a last line cut short, as a killed worker leaves it
		f.Add(bytes.ReplaceAll(b, []byte("\n"), []byte(" "))) // its lines run together, over the bound
	}
	defer func(n int) { maxLogLine = n }(maxLogLine)
	maxLogLine = fuzzLogLine
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "r-app.log")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		whole := slices.Collect(bytes.Lines(data))
		under := !slices.ContainsFunc(whole, func(l []byte) bool { return len(l) >= fuzzLogLine })
		var lines [][]byte
		err := LogLines(p, func(line []byte) { lines = append(lines, bytes.Clone(line)) })
		if len(lines) > len(whole) || !slices.EqualFunc(lines, whole[:len(lines)], bytes.Equal) {
			t.Fatalf("%d lines, not the first of the %d reading whole gives", len(lines), len(whole))
		}
		if slices.ContainsFunc(lines, func(l []byte) bool { return len(l) > fuzzLogLine }) {
			t.Fatal("a line over the bound handed on")
		}
		switch {
		case under && (err != nil || len(lines) != len(whole)):
			t.Fatalf("every line under the bound: %d of %d lines, %v", len(lines), len(whole), err)
		case err == nil && len(lines) != len(whole):
			t.Fatalf("%d of %d lines, no error", len(lines), len(whole))
		case err != nil && (len(whole[len(lines)]) < fuzzLogLine || err.Error() != fmt.Sprintf("%s line %d: over %d bytes", p, len(lines)+1, fuzzLogLine)):
			t.Fatalf("error %v after %d lines, the next of %d bytes", err, len(lines), len(whole[len(lines)]))
		}

		cts, ctErr := ClientTimeouts([]string{p})
		wts, wtErr := WorkerTimeouts(filepath.Dir(p), "r")
		recs, sendErr := readSendLog(p)
		for _, e := range []error{ctErr, wtErr} {
			if (e != nil) != (err != nil) || e != nil && !strings.Contains(e.Error(), p) {
				t.Fatalf("read error %v, LogLines' %v", e, err)
			}
		}
		if sendErr != nil && !strings.Contains(sendErr.Error(), p) || err != nil && sendErr == nil {
			t.Fatalf("send log error %v, LogLines' %v", sendErr, err)
		}
		if err != nil {
			return
		}
		var wantCTs []ClientTimeout
		var wantWTs []WorkerTimeout
		for _, l := range whole {
			if ct, ok := ParseClientTimeout(l); ok {
				wantCTs = append(wantCTs, ct)
			}
			if wt, ok := ParseWorkerTimeout(l); ok {
				wantWTs = append(wantWTs, wt)
			}
		}
		if !reflect.DeepEqual(cts, wantCTs) || !reflect.DeepEqual(wts, wantWTs) {
			t.Fatalf("client timeouts %v, worker timeouts %v; reading whole gives %v, %v", cts, wts, wantCTs, wantWTs)
		}
		wantRecs, wantBad := sendLogWhole(whole)
		if (sendErr != nil) != wantBad || sendErr == nil && !reflect.DeepEqual(recs, wantRecs) {
			t.Fatalf("send log %v, %v; reading whole gives %v, bad line %t", recs, sendErr, wantRecs, wantBad)
		}
	})
}

// sendLogWhole is the app's send log read whole: its records, and
// whether a line other than a torn last one does not parse.
func sendLogWhole(lines [][]byte) (recs []appserver.SendRecord, bad bool) {
	for _, l := range lines {
		text, ended := bytes.CutSuffix(l, []byte("\n"))
		if len(text) == 0 {
			continue
		}
		var rec appserver.SendRecord
		if err := json.Unmarshal(text, &rec); err != nil {
			if ended {
				return nil, true
			}
			continue
		}
		recs = append(recs, rec)
	}
	return recs, false
}
