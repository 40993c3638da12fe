// Package sse is the sse experiment: N clients each hold a Server-Sent
// Events stream of GET /events (a tick every interval for a duration,
// each stamped with the server's clock when written) while the open-loop
// /fast schedule of slow-client runs beside them. Each event's delivery
// delay is the client's clock when it had read the event minus the stamp
// (one machine, loopback). The routes are direct, through the proxy with
// proxy_buffering off and on, and on with the app's X-Accel-Buffering: no
// (the pseudo-route proxy-buffering-on-accel-no: the buffering-on
// deployment, the stream asked with ?accel=no); servers are sync,
// gthread and the stack's event-loop server. A stream holds its worker
// for its whole length whatever the proxy does, so N streams on sync-N
// occupy every worker and starve /fast: the cost of SSE on a sync server.
//
// NGINX 1.22 with proxy_http_version 1.1 (the lab's) passes each small
// event of a chunked upstream response on as it arrives, buffering on or
// off (measured; see the README), so the routes differ little in delivery
// delay; the embedded proxy does the same.
//
// It owns the experiment's scenario schema and flags, its run (the
// matrix, each run's stack, load and verdict) and its printed table. Its
// files are recorder's sse-events.csv, sse-streams.csv, sse-runs.csv,
// requests.csv (the /fast requests; slow_clients holds the streams) and
// resource-samples.csv; its figures are report's sse section. It does not
// stream (the apps' /events), read streams (loadgen.SSEClient) or buffer
// them (package proxy, NGINX).
package sse
