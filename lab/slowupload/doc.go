// Package slowupload is the slow-upload experiment: N clients POST M MiB
// to /upload at R KiB/s, writing paced through a small send buffer, while
// the open-loop /fast schedule of slow-client runs beside them. A
// synchronous worker reading a slow request body is as stuck as one
// writing to a slow reader; a proxy that buffers request bodies
// (proxy_request_buffering on, NGINX's default) reads the whole body
// first, in memory up to client_body_buffer_size and in a temp file
// beyond, and hands it to the app at once. The routes are direct and
// through the proxy with request buffering on and off, on sync, gthread
// and the stack's event-loop server; one condition lets an upload outlive
// the app's timeout (Gunicorn's --timeout), whose worker is killed: the
// upload's outcome (a 5xx from the proxy, or a reset) is recorded, not a
// failed run.
//
// It owns the experiment's scenario schema and flags, its run (the
// matrix, each run's stack, load and verdict), its results files (Upload
// rows in uploads.csv, RunRow rows in upload-runs.csv, beside recorder's
// requests.csv, where slow_clients holds the uploaders, and
// resource-samples.csv) with their aggregation, its conditions table,
// declared once for the CLI and the report, and its report section with
// its figures (Section). It does not upload (loadgen.SlowUploader), read bodies (the apps'
// /upload) or buffer them (package proxy, NGINX).
package slowupload
