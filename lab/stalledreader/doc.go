// Package stalledreader is the stalled-reader experiment (issue 18, the
// case behind benoitc/gunicorn#3259, "Workers time out during
// sock.sendall"): clients request /large and then stop reading entirely
// (StallMode: a small receive buffer, the first bytes read, then nothing
// for client.stall, then what is left as fast as it comes, to see what
// the server did meanwhile), or read it at 16 KiB/s throughout
// (SlowMode), while the open-loop /fast schedule of slow-client runs
// beside them. A synchronous worker blocked writing to a reader that
// takes nothing is stuck until something gives: Gunicorn's --timeout
// kills it mid-response (WORKER TIMEOUT in its log, the download cut
// short), or a proxy's send_timeout closes the client (NGINX: no
// progress for send_timeout between two writes), or the client gives up
// (client.give_up bounds every download, so the load is bounded).
//
// Each download is recorded with the bytes it received and how it ended
// (recorder.StalledOutcomes: complete; truncated, a response then EOF
// before its Content-Length; reset, RST or a close before any response;
// timeout, the client's bound; error) and which component ended it
// (recorder.StalledEnders). The client cannot see who closed a socket
// whose window it keeps shut, so the ender is inferred:
//   - complete: none; the client's bound: client;
//   - otherwise app_timeout when the condition sets an app timeout and
//     the run's app log has WORKER TIMEOUT lines, send_timeout when the
//     route is proxied and the download stalled for at least the proxy's
//     send_timeout; when both apply, the one due first (the app's from
//     the request, the proxy's from the stall); unknown when neither.
//
// It owns the experiment's scenario schema and flags, its run and its
// printed table. Its files are recorder's stalled-downloads.csv,
// stalled-runs.csv, requests.csv (the /fast requests; slow_clients holds
// the stalled clients) and resource-samples.csv; its figures are report's
// stalled-reader section. It does not read (loadgen.SlowReader), serve
// (the apps' /large) or time out (package proxy's send_timeout, NGINX,
// Gunicorn, appserver's worker timeout).
package stalledreader
