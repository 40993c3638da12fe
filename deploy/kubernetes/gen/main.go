// Command gen writes deploy/kubernetes/prometheusrule.yaml, the
// Prometheus Operator's PrometheusRule made of alerts/slowlab.rules.yml,
// into a directory (default: the current one, which is deploy/kubernetes
// under go generate).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/slowlab/slowlab/deploy/kubernetes"
)

func main() {
	dir := flag.String("dir", ".", "directory to write "+kubernetes.RuleFile+" into")
	flag.Parse()
	b, err := kubernetes.RuleManifest()
	if err == nil {
		err = os.WriteFile(filepath.Join(*dir, kubernetes.RuleFile), b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
