// Package recorder owns slowlab's results files: the CSV contract of
// DESIGN.md (requests.csv, large-responses.csv, resource-samples.csv,
// runs.csv, conditions.csv), their typed rows, writers and readers, and the
// aggregation of EXPERIMENTS.md section 1 (nearest-rank percentiles, run and
// condition summaries).
//
// It also fills resource-samples.csv: Sampler scrapes /metrics endpoints
// (text format or OpenMetrics, parsed by ParseExposition) on a drift-free
// schedule, QueryRange reads the same series back from the Prometheus HTTP
// API, SamplesFromFamilies maps the exporter's metric contract to one row
// per component, and SummarizeResources turns a run's samples into the
// component columns of runs.csv.
//
// recorder does not measure anything on the host itself: loadgen produces
// Request and LargeResponse values, the exporter reads cgroups, /proc and
// sockets into the metrics resource samples come from (recorder only
// scrapes them), and lab decides when runs start, end or fail and where the
// results directory is. Figures and report.html belong to report.
//
// Every row type has a fixed column order (Header) that is the contract
// readers in other tools rely on; ReadAll rejects any file whose header
// differs. Numbers are written at a fixed precision (milliseconds for
// seconds columns, microseconds for millisecond columns, whole bytes), and a
// value that was not measured is an empty cell, never an invented 0: Maybe
// carries that distinction for optional columns. Writers flush every row, so
// what was measured before a crash or a signal is on disk.
package recorder
