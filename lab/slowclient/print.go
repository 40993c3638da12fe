package slowclient

import (
	"fmt"
	"io"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// Print implements lab.Result: the conditions table, then what sampling
// cost.
func (r *Result) Print(w io.Writer) {
	PrintConditions(w, r.Conditions)
	fmt.Fprintf(w, "\nresource sampling jitter: %s\n", r.SamplingJitter)
}

// PrintConditions writes the conditions table as aligned text.
func PrintConditions(w io.Writer, conds []recorder.Condition) {
	rows := [][]string{{"route", "server", "slow", "runs", "excluded", "p50_ms", "p95_ms", "p95_min-max_ms", "app_send_s", "client_receive_s", "temp_peak_mib", "app_mem_mib", "proxy_mem_mib"}}
	for _, c := range conds {
		rows = append(rows, []string{c.Route, c.Server, fmt.Sprint(c.SlowClients), fmt.Sprint(c.Runs), fmt.Sprint(c.RunsExcluded),
			lab.Num(c.P50MS, 1), lab.Num(c.P95MS, 1), spread(c),
			lab.Num(c.AppSendS, 2), lab.Num(c.ClientReceiveS, 2), lab.Num(c.TempPeakMiB, 1), lab.Num(c.AppMemoryPeakMiB, 1),
			lab.Num(c.ProxyMemoryPeakMiB, 1)})
	}
	lab.PrintTable(w, 2, rows)
}

// spread is the p95 range over the condition's runs, "-" without runs.
func spread(c recorder.Condition) string {
	if c.Runs == 0 {
		return "-"
	}
	return lab.Num(c.P95MinMS, 1) + "-" + lab.Num(c.P95MaxMS, 1)
}
