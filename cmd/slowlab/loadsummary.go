package main

import (
	"encoding/json"
	"io"

	"github.com/slowlab/slowlab/loadgen"
)

// loadgenSummaryVersion is the version of `slowlab loadgen --json`'s
// object (its schema_version), read by the rule of internal/schema.
const loadgenSummaryVersion = "1.0"

// loadgenSummary is `slowlab loadgen --json`'s standard output: the
// summary's figures, the struct the text summary is printed from
// (loadgen.Figures), and the slow readers' downloads.
type loadgenSummary struct {
	SchemaVersion string `json:"schema_version"`
	loadgen.Figures
	SlowReaders []loadgen.DownloadFigure `json:"slow_readers"`
}

// printSummary writes the end-of-run summary on stdout: text, or with
// --json one JSON object.
func (r *loadgenRun) printSummary(stdout io.Writer, sum *loadgen.Summary, downloads []loadgen.Download) error {
	if !r.f.json {
		sum.Print(stdout)
		loadgen.PrintDownloads(stdout, downloads)
		return nil
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(loadgenSummary{SchemaVersion: loadgenSummaryVersion, Figures: sum.Figures(), SlowReaders: loadgen.DownloadFigures(downloads)})
}
