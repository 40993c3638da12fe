package lab

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// Progress prints a line as each run of a matrix starts, with elapsed
// time and an ETA from the remaining runs' intrinsic durations scaled by
// how much longer than intrinsic the runs so far took.
type Progress struct {
	w         io.Writer
	n         int
	intrinsic func(i int) time.Duration
	began     time.Time
	spentIntr time.Duration
}

// NewProgress returns the progress of n runs whose intrinsic durations
// (what the schedule takes, without starting stacks) intrinsic gives.
func NewProgress(w io.Writer, n int, intrinsic func(int) time.Duration) *Progress {
	if w == nil {
		w = io.Discard
	}
	return &Progress{w: w, n: n, intrinsic: intrinsic, began: time.Now()}
}

// Start prints that run i, id, starts.
func (p *Progress) Start(i int, id string) {
	fmt.Fprintf(p.w, "[%d/%d] %s  elapsed %s, ETA %s\n", i+1, p.n, id, round(time.Since(p.began)), round(p.eta(i)))
}

// Done accounts for run i's end and prints detail under its line.
func (p *Progress) Done(i int, format string, args ...any) {
	p.spentIntr += p.intrinsic(i)
	fmt.Fprintf(p.w, "        "+format+"\n", args...)
}

// Note prints a line under the current run's.
func (p *Progress) Note(format string, args ...any) {
	fmt.Fprintf(p.w, "        "+format+"\n", args...)
}

func (p *Progress) eta(i int) time.Duration {
	var rest time.Duration
	for j := i; j < p.n; j++ {
		rest += p.intrinsic(j)
	}
	if p.spentIntr > 0 {
		rest = time.Duration(float64(rest) * float64(time.Since(p.began)) / float64(p.spentIntr))
	}
	return rest
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }

// Num formats a value that may not have been measured: "-" then.
func Num(m recorder.Maybe, decimals int) string {
	if !m.Valid || math.IsNaN(m.Value) {
		return "-"
	}
	return fmt.Sprintf("%.*f", decimals, m.Value)
}
