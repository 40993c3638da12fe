package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// timeline is when each package's tests ran: from its start event to its
// own pass, fail or skip. It tells whether a suite run with -p N kept its
// N slots busy, or ended with one long package running alone.
type timeline struct {
	start, end map[string]time.Time
}

func newTimeline() *timeline {
	return &timeline{start: map[string]time.Time{}, end: map[string]time.Time{}}
}

// add notes e's time: a package starts at its first event and ends at its
// own verdict. Events without a time (older go test) are passed over.
func (tl *timeline) add(e event) {
	if e.Time.IsZero() || e.Package == "" {
		return
	}
	if _, ok := tl.start[e.Package]; !ok {
		tl.start[e.Package] = e.Time
	}
	if e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
		tl.end[e.Package] = e.Time
	}
}

// lastEnded is how many of the last packages to end printTimeline names.
const lastEnded = 5

// printTimeline says how long the packages' tests ran, first start to
// last end, how much of it how many packages ran at once, and the last
// packages to end with how long each ran.
func (tl *timeline) print(out io.Writer) {
	type mark struct {
		t     time.Time
		delta int
	}
	var marks []mark
	var pkgs []string
	for p, s := range tl.start {
		e, ok := tl.end[p]
		if !ok || e.Before(s) {
			continue // never ended: the failure summary names it
		}
		marks = append(marks, mark{s, +1}, mark{e, -1})
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return
	}
	slices.SortFunc(marks, func(a, b mark) int { return a.t.Compare(b.t) })
	at := map[int]time.Duration{} // packages running at once -> time
	running, most := 0, 0
	for i, m := range marks {
		if i > 0 {
			at[running] += m.t.Sub(marks[i-1].t)
		}
		running += m.delta
		most = max(most, running)
	}
	wall := marks[len(marks)-1].t.Sub(marks[0].t)
	var parts []string
	for n := most; n >= 0; n-- {
		if d := at[n]; d > 0 {
			parts = append(parts, fmt.Sprintf("%d at once %.0f s", n, d.Seconds()))
		}
	}
	fmt.Fprintf(out, "\npackages' tests ran %.0f s, first start to last end: %s\n", wall.Seconds(), strings.Join(parts, ", "))
	slices.SortFunc(pkgs, func(a, b string) int { return tl.end[b].Compare(tl.end[a]) })
	first := marks[0].t
	for _, p := range pkgs[:min(lastEnded, len(pkgs))] {
		fmt.Fprintf(out, "  ended at %5.0f s, ran %5.0f s  %s\n", tl.end[p].Sub(first).Seconds(), tl.end[p].Sub(tl.start[p]).Seconds(),
			strings.TrimPrefix(p, "github.com/slowlab/slowlab/"))
	}
}
