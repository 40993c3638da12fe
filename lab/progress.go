package lab

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// progress prints one line as each run starts and ends, with elapsed time
// and an ETA from the remaining runs' intrinsic durations scaled by how much
// longer than intrinsic the runs so far took.
type progress struct {
	w         io.Writer
	n         int
	intrinsic func(i int) time.Duration
	began     time.Time
	spentIntr time.Duration
}

func newProgress(w io.Writer, n int, intrinsic func(int) time.Duration) *progress {
	return &progress{w: w, n: n, intrinsic: intrinsic, began: time.Now()}
}

func (p *progress) start(i int, id string) {
	fmt.Fprintf(p.w, "[%d/%d] %s  elapsed %s, ETA %s\n", i+1, p.n, id, round(time.Since(p.began)), round(p.eta(i)))
}

func (p *progress) eta(i int) time.Duration {
	var rest time.Duration
	for j := i; j < p.n; j++ {
		rest += p.intrinsic(j)
	}
	if p.spentIntr > 0 {
		rest = time.Duration(float64(rest) * float64(time.Since(p.began)) / float64(p.spentIntr))
	}
	return rest
}

func (p *progress) done(i int, r recorder.Run) {
	p.spentIntr += p.intrinsic(i)
	status := r.Status
	if r.Reason != "" {
		status += ": " + r.Reason
	}
	fmt.Fprintf(p.w, "        fast %d/%d ok, p50 %s ms, p95 %s ms, max lag %s ms; receive %s s, app_send %s s  [%s]\n",
		r.FastOK, r.FastTotal, num(r.P50MS, 1), num(r.P95MS, 1), num(r.MaxScheduleLagMS, 2), num(r.ClientReceiveS, 2), num(r.AppSendS, 2), status)
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }

func num(m recorder.Maybe, decimals int) string {
	if !m.Valid || math.IsNaN(m.Value) {
		return "-"
	}
	return fmt.Sprintf("%.*f", decimals, m.Value)
}

// PrintConditions writes the conditions table as aligned text.
func PrintConditions(w io.Writer, conds []recorder.Condition) {
	head := []string{"route", "server", "slow", "runs", "p50_ms", "p95_ms", "p95_min-max_ms", "app_send_s", "client_receive_s", "temp_peak_mib"}
	rows := [][]string{head}
	for _, c := range conds {
		rows = append(rows, []string{c.Route, c.Server, fmt.Sprint(c.SlowClients), fmt.Sprint(c.Runs),
			num(c.P50MS, 1), num(c.P95MS, 1), num(c.P95MinMS, 1) + "-" + num(c.P95MaxMS, 1),
			num(c.AppSendS, 2), num(c.ClientReceiveS, 2), num(c.TempPeakMiB, 1)})
	}
	width := make([]int, len(head))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i > 1 {
				b.WriteString(strings.Repeat(" ", width[i]-len(c)) + c)
			} else {
				b.WriteString(c + strings.Repeat(" ", width[i]-len(c)))
			}
			b.WriteString("  ")
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
