package recorder

import (
	"cmp"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// TestSorterSortsInBoundedChunks: rows added in random order come out as
// a stable in-memory sort orders them, across chunk sizes that make one
// run, several, and more than one merge pass (over sortFanIn runs); the
// run files are gone after Close.
func TestSorterSortsInBoundedChunks(t *testing.T) {
	for _, tc := range []struct{ rows, chunk int }{{0, 4}, {10, 100}, {100, 7}, {1000, 3}, {5000, 13}} {
		dir := t.TempDir()
		rng := rand.New(rand.NewPCG(1, uint64(tc.rows)))
		var want []Request
		s := &Sorter[Request]{Dir: dir, Chunk: tc.chunk, Cmp: func(a, b Request) int { return cmp.Compare(a.ScheduledS, b.ScheduledS) }}
		for i := range tc.rows {
			// Few distinct keys, so equal rows are many: Seq records the
			// order they were added in.
			r := Request{RunID: "r", Seq: i, ScheduledS: float64(rng.IntN(50)) / 10, LatencyMS: 1.5}
			want = append(want, r)
			if err := s.Add(r); err != nil {
				t.Fatal(err)
			}
		}
		slices.SortStableFunc(want, s.Cmp)
		var got []Request
		if err := s.Each(func(r Request) error { got = append(got, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d rows, chunk %d: got %d rows", tc.rows, tc.chunk, len(got))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%d rows, chunk %d: row %d is %+v, want %+v", tc.rows, tc.chunk, i, got[i], want[i])
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("%d rows, chunk %d: %d files left after Close", tc.rows, tc.chunk, len(left))
		}
	}
}

// A run that cannot be written is an error from Add, and stays.
func TestSorterSpillError(t *testing.T) {
	s := &Sorter[Request]{Dir: t.TempDir() + "/missing", Chunk: 2, Cmp: func(a, b Request) int { return cmp.Compare(a.Seq, b.Seq) }}
	s.Add(Request{Seq: 1})
	if err := s.Add(Request{Seq: 2}); err == nil {
		t.Fatal("Add spilled into a missing directory without an error")
	}
	if err := s.Each(func(Request) error { return nil }); err == nil {
		t.Error("Each after a failed spill: no error")
	}
}
