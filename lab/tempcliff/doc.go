// Package tempcliff is the temp-cliff experiment (issue 18): slow readers
// of /large behind a proxy with proxy_buffering on, whose
// proxy_max_temp_file_size (32m, as published) caps the temp file of each
// response. A response that fits is read from the app at once and the app
// is free (app_send_s of milliseconds); one beyond it fills the temp file,
// after which the proxy reads from the app only as fast as the client
// drains, so the app is blocked writing again (app_send_s close to the
// download's time) and a sync server's /fast waits. A condition with
// proxy_max_temp_file_size 0 (memory buffers only) blocks the app like
// buffering off.
//
// It also holds the run shared with temp-disk-full (package tempdisk):
// the same load and measurements, with the proxy's temp dir on a small
// tmpfs in a mount namespace of the proxy's own (Condition.TempTmpfs).
// Its results files are temp-runs.csv (RunRow, one per run, with
// SummarizeRun and Summarize; both experiments' conditions table,
// ConditionsTable, declared once for the CLI and the report) beside
// recorder's large-responses.csv (each download: bytes received, outcome,
// app_send_s), requests.csv (the /fast requests) and
// resource-samples.csv. Its report section (Section) draws app_send_s and
// /fast p95 against the response size, and the downloads; Data is what
// temp-disk-full's section reads too. It does not buffer (package proxy,
// NGINX), mount (stack) or read slowly (loadgen.SlowReader).
package tempcliff
