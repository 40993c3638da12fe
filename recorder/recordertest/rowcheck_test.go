package recordertest

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// slipRow's schema has a copy-paste slip: its second column holds the
// first one's field, so Bytes has no column.
type slipRow struct {
	RunID string
	Held  recorder.Maybe
	Bytes int64
}

var slipSchema = recorder.NewSchema("slip-rows.csv",
	recorder.Col("run_id", 0, func(r *slipRow) any { return &r.RunID }),
	recorder.Col("held_s", recorder.DecimalsSeconds, func(r *slipRow) any { return &r.Held }),
	recorder.Col("bytes", recorder.DecimalsWhole, func(r *slipRow) any { return &r.Held }))

func (slipRow) Schema() *recorder.Schema[slipRow] { return slipSchema }

// shortRow's schema leaves a field out.
type shortRow struct {
	RunID string
	Bytes int64
}

var shortSchema = recorder.NewSchema("short-rows.csv",
	recorder.Col("run_id", 0, func(r *shortRow) any { return &r.RunID }))

func (shortRow) Schema() *recorder.Schema[shortRow] { return shortSchema }

// TestCoverageGapFindsSlips: the slips Coverage guards against are found
// and named; recorder's own row types have none.
func TestCoverageGapFindsSlips(t *testing.T) {
	if gap := CoverageGap[slipRow](); gap != "slip-rows.csv: field slipRow.Bytes has no column" {
		t.Errorf("a field held twice: %q", gap)
	}
	if gap := CoverageGap[shortRow](); gap != "short-rows.csv: struct has 2 fields, schema has 1 columns" {
		t.Errorf("a field left out: %q", gap)
	}
	if gap := CoverageGap[recorder.Run](); gap != "" {
		t.Errorf("runs.csv: %s", gap)
	}
}

// TestDiffRowsNamesTheColumn corrupts each column of a random row in turn:
// DiffRows names that column, and finds nothing in the row left alone.
func TestDiffRowsNamesTheColumn(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	want := []recorder.Request{RandomRow[recorder.Request](rng, true), RandomRow[recorder.Request](rng, true)}
	if d := DiffRows(want, want, 0); d != "" {
		t.Fatalf("rows differ from themselves: %s", d)
	}
	for _, c := range columns[recorder.Request]() {
		got := append([]recorder.Request(nil), want...)
		switch p := c.Field(&got[1]).(type) {
		case *string:
			*p += "x"
		case *int:
			*p++
		case *int64:
			*p++
		case *float64:
			*p += 1
		case *recorder.Maybe:
			p.Value++
		case *bool:
			*p = !*p
		case *time.Time:
			*p = p.Add(time.Second)
		}
		if d := DiffRows(want, got, 1); !strings.HasPrefix(d, "row 1 column "+c.Name()+":") {
			t.Errorf("%s corrupted: DiffRows says %q", c.Name(), d)
		}
	}
}

// TestRoundTripCSVRefusesBadInput: input the reader refuses is an error
// naming the reader, not a round trip.
func TestRoundTripCSVRefusesBadInput(t *testing.T) {
	data := strings.Join(recorder.Header[recorder.Run](), ",") + "\nr1,direct,sync-2,two\n"
	if _, err := RoundTripCSV[recorder.Run]([]byte(data)); err == nil || !strings.HasPrefix(err.Error(), "ReadAll: ") {
		t.Errorf("a short row: %v", err)
	}
}
