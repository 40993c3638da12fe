package h2slowclient

import (
	"bytes"
	"encoding/csv"
	"slices"
	"testing"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// TestReadsBeforeProtocol: h2-runs.csv and h2-streams.csv written before
// the protocol column (HTTP/3 came later) still read, their rows HTTP/2.
func TestReadsBeforeProtocol(t *testing.T) {
	checkOld(t, RunRow{RunKey: lab.RunKey{RunID: "a.rep1"}, Protocol: "h3"}, func(r RunRow) string { return r.Protocol })
	checkOld(t, Stream{ClientKey: lab.ClientKey{RunKey: lab.RunKey{RunID: "a.rep1"}}, Protocol: "h3"}, func(r Stream) string { return r.Protocol })
}

// checkOld writes row, removes its protocol column as a file of the
// earlier layout lacks it, and reads it back.
func checkOld[T recorder.Row[T]](t *testing.T, row T, protocol func(T) string) {
	t.Helper()
	var buf bytes.Buffer
	w, err := recorder.NewWriter[T](&buf)
	if err == nil {
		err = w.Write(row)
	}
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	at := slices.Index(recs[0], "protocol")
	if at < 0 {
		t.Fatalf("%s: no protocol column in %v", recorder.FileName[T](), recs[0])
	}
	var old bytes.Buffer
	cw := csv.NewWriter(&old)
	for _, r := range recs {
		cw.Write(slices.Delete(r, at, at+1))
	}
	cw.Flush()
	rows, err := recorder.ReadAll[T](&old)
	if err != nil || len(rows) != 1 || protocol(rows[0]) != "h2" {
		t.Errorf("%s without protocol: %d rows, %v", recorder.FileName[T](), len(rows), err)
	}
}
