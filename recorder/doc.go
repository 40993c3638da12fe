// Package recorder owns slowlab's results files and their CSV contract:
// every file an experiment writes, one row type each, with its writers and
// readers. The files, by the experiments that write them:
//
//   - shared: requests.csv (each request the load generator made) and
//     resource-samples.csv (each component's resources over a run), which
//     most experiments write beside their own files;
//   - shared by the experiments whose slow clients download /large:
//     large-responses.csv, runs.csv, conditions.csv, hops.csv (where a slow
//     download's bytes are, hop by hop);
//
// and environment.json, which keeps one Environment per session that
// wrote the results directory (ReplaceFile writes such a file whole, in
// one step a reader cannot see half done), and manifest.json, what wrote
// the directory and its files with their formats' versions
// (WriteManifest). Their schema_version is read by internal/schema's
// rule. It also owns the aggregation the
// experiments share (NearestRank and Median percentiles, SummarizeRun,
// SummarizeConditions, SummarizeResources, DurationHist) and KeepRuns,
// which keeps the rows of the runs --resume keeps.
//
// Each row type declares its file name and columns in its own file
// (requests.go, runs.go, ...), each column once as a csv tag on its
// field (Tagged, TaggedSpans; NewSchema and Col where the columns are
// not fields, as runs.csv's per-component ones), and implements Row,
// which is all the generic CreateFile, AppendFile, NewWriter, ReadAll
// and ReadFile need. Every experiment's package declares its own rows
// the same way (embedding FastFields and Holding for the shared run
// columns) and tests them with package recordertest, which owns the row
// contract's checks (RandomRow, DiffRows, RoundTripCSV, CoverageGap,
// FuzzSeeds, Layout): nothing in recorder exists only for tests.
//
// It also fills resource-samples.csv: Sampler scrapes /metrics endpoints
// (text format or OpenMetrics, parsed by ParseExposition) on a drift-free
// schedule, QueryRange reads the same series back from the Prometheus HTTP
// API for one run (a Selector that selects no run_id is refused with
// ErrNoSelector), SamplesFromFamilies maps the exporter's metric contract to one row
// per component, and SummarizeResources turns a run's samples into the
// component columns of runs.csv.
//
// recorder does not measure anything on the host itself: loadgen produces
// Request and LargeResponse values, the exporter reads cgroups, /proc and
// sockets into the metrics resource samples come from (recorder only
// scrapes them), and lab decides when runs start, end or fail, where the
// results directory is, and gathers what a session's Environment says.
// Figures and report.html belong to report.
//
// Every row type has a fixed column order (Header) that is the contract
// readers in other tools rely on; ReadAll rejects any file whose header
// differs. Numbers are written at a fixed precision (milliseconds for
// seconds columns, microseconds for millisecond columns, whole bytes), and a
// value that was not measured is an empty cell, never an invented 0: Maybe
// carries that distinction for optional columns. Writers flush every row, so
// what was measured before a crash or a signal is on disk; the one row a
// killed writer can cut short, the last, is left out by Reader (noted
// once per file, NoteCutRows) and cut off by AppendFile.
package recorder
