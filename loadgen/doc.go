// Package loadgen generates the experiments' load and measures it from the
// client side. Its loads:
//
//   - OpenLoop: requests paced by a Pacer (RatePacer) that start on
//     schedule whatever earlier ones are doing, with the schedule lag
//     measured, so a late generator is visible rather than silently
//     closed-loop;
//   - ClosedLoop: a fixed population of workers, each sending its next
//     request when its previous one ends (long-poll's probes);
//   - Holders: N requests kept in flight, each re-issued as it returns
//     (long-poll's holds); IdleHolders: connections held idle or as
//     slowloris, timed until the server closes them (idle-connections);
//   - SlowReader: downloads whose socket reads are paced, with a small
//     receive buffer, or that stall (Download); SlowUploader: uploads sent
//     at a paced rate (Upload); SSEClient: event streams, each event's
//     delivery timed (SSEStream);
//   - H2Conn: one HTTP/2 connection (h2 over TLS or h2c) whose streams
//     are read slowly by flow control, not by the socket: each stream's
//     reader grants the server room (WINDOW_UPDATE) at a paced rate, or
//     stalls with its window closed, the windows as the caller sets them
//     (golang.org/x/net/http2's Framer, where its Transport hides them);
//   - H3Conn: one HTTP/3 connection (QUIC, quic-go) whose streams are
//     read slowly by QUIC flow control: small stream and connection
//     receive windows that do not grow, a body read at a paced rate, or a
//     stall that reads nothing; the same per-stream facts as H2Conn's
//     (H2Result). OpenLoop sends its requests as streams on either.
//
// Each request's timings come from net/http/httptrace (Client), or, with
// ClientOptions.Lean, from a minimal HTTP/1.1 client of its own that
// measures the same phases at a fraction of the cost, for high rates;
// Summary and PrintDownloads summarize them for the terminal. Every result
// is also observed into Prometheus metrics on a registry the caller owns
// (Metrics). Given a TracerProvider (ClientOptions, SlowReader), every
// request is also an OpenTelemetry client span with its connection phases
// as events and a W3C traceparent header, and sampled requests' histogram
// observations carry their trace ID as an exemplar; without one, tracing
// costs nothing. Unless told otherwise (AllowRemote), every connection it
// opens is checked, after name resolution, to go to a loopback address
// (CheckTarget).
//
// A load generator running as a child process in its own cgroup hands
// what it measured to the session on its stdout, a line at a time: result
// lines (resultline.go: AppendResultLine, ParseResultLine; long-poll's
// `slowlab probe-loop`) carry a Result each, and wire lines (wire.go:
// WireLine, AppendWireLine, ParseWireLine; slow-client's `slowlab
// slow-load`) carry every field of a result or a download and the events
// the session acts on as they happen. RequestRow and DownloadRow turn
// what it measured into recorder's rows (an upload's rows are
// lab/slowupload's, an SSE stream's lab/sse's).
//
// It does not decide what to run (lab and its experiments), write results
// files (recorder) or serve anything (appserver and lab/stack).
package loadgen
