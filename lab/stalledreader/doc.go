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
// (Outcomes: complete; truncated, a response then EOF before its
// Content-Length; reset, RST or a close before any response; timeout,
// the client's bound; error) and which component ended it (Enders). The
// client cannot see who closed a socket whose window it keeps shut, so
// the ender comes from evidence about that download, never from the rule
// under test (attribute.go):
//   - complete: none;
//   - app_timeout when a WORKER TIMEOUT line of the app's log names the
//     worker that was serving it: Gunicorn's pid:N against the pid in the
//     app's send-log start record for the download's request id (and
//     that worker began nothing after it), the embedded app's peer
//     HOST:PORT against the record's peer_port;
//   - send_timeout when the proxy logged closing it: "client timed out
//     (110: Connection timed out) while sending to client" (NGINX at
//     info, the lab's error_log level; the embedded proxy alike) quoting
//     the download's request line, whose ?download=N names it;
//   - when both, the one logged first (to the second; within one second,
//     unknown); unknown when there is no evidence;
//   - a download the client gave up on (its bound; it may still have been
//     draining what the path held): the component logged before it gave
//     up, else client.
//
// It owns the experiment's scenario schema and flags, its run, its
// results files (Download rows in stalled-downloads.csv, RunRow rows in
// stalled-runs.csv, beside recorder's requests.csv, where slow_clients
// holds the stalled clients, and resource-samples.csv) with their
// aggregation, its conditions table, declared once for the CLI and the
// report, and its report section with its figures (Section). It does not
// read (loadgen.SlowReader), serve (the apps' /large) or time out
// (package proxy's send_timeout, NGINX, Gunicorn, appserver's worker
// timeout).
package stalledreader
