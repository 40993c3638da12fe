// Command gen writes the slowlab dashboards as JSON into a directory
// (default: the current one, which is dashboards/ under go generate).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/slowlab/slowlab/dashboards"
)

func main() {
	dir := flag.String("dir", ".", "directory to write the dashboard JSON files into")
	flag.Parse()
	if err := dashboards.Generate(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
