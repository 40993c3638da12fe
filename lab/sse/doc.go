// Package sse is the sse experiment: N clients each hold a Server-Sent
// Events stream of GET /events (a tick every interval for a duration,
// each stamped with the server's clock when written) while the open-loop
// /fast schedule of slow-client runs beside them. Each event's delivery
// delay is the client's clock when it had read the event minus the stamp
// (one machine, loopback). The routes are direct, through the proxy with
// proxy_buffering off and on, and pseudo-routes (a deployed route plus
// what the streams ask or the proxy's upstream HTTP version):
// proxy-buffering-on-accel-no (buffering on, the streams asked with
// ?accel=no, so the app answers X-Accel-Buffering: no),
// proxy-buffering-on-http10 (buffering on, proxy_http_version 1.0:
// stack.Deployment.UpstreamHTTP10), proxy-buffering-on-http10-accel-no
// (and ?accel=no) and proxy-buffering-off-http10-accel-yes (buffering
// off, HTTP/1.0, ?accel=yes). The route column of every file names the
// pseudo-route. Servers are sync, gthread and the stack's event-loop
// server. A stream holds its worker for its whole length whatever the
// proxy does, so N streams on sync-N occupy every worker and starve
// /fast: the cost of SSE on a sync server.
//
// NGINX 1.22 with proxy_http_version 1.1 (the lab's) passes each small
// event of a chunked upstream response on as it arrives, buffering on or
// off. With 1.0 (NGINX's default) the app answers close-delimited, and
// with buffering in effect (on, or off with X-Accel-Buffering: yes) NGINX
// holds the stream, header included, until a 16k buffer fills or the
// stream ends; X-Accel-Buffering: no passes each event on again. The
// shape tests assert the held stream and its X-Accel-Buffering: no on
// NGINX and on the embedded proxy, which does the same; the published
// grid also runs the buffering-off X-Accel-Buffering: yes route.
//
// It owns the experiment's scenario schema and flags, its run (the
// matrix, each run's stack, load and verdict), its results files (Event
// rows in sse-events.csv, Stream rows in sse-streams.csv, RunRow rows in
// sse-runs.csv, beside recorder's requests.csv, where slow_clients holds
// the streams, and resource-samples.csv) with their aggregation, its
// conditions table, declared once for the CLI and the report, and its
// report section with its figures (Section). It does not
// stream (the apps' /events), read streams (loadgen.SSEClient) or buffer
// them (package proxy, NGINX).
package sse
