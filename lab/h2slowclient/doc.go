// Package h2slowclient is the home of the h2-slow-client experiment
// (`slowlab reproduce h2-slow-client`): slow readers over HTTP/2, slow by
// flow control rather than by their TCP window, through a proxy that
// speaks HTTP/1.1 to the app. It asks how many app workers the slow
// streams of one connection hold against as many connections, whether a
// slow stream delays /fast on its own connection, and how a stream
// stalled with its window closed ends against the proxy's send_timeout.
// Each condition runs over HTTP/2 or HTTP/3 (its protocol, h2 or h3: QUIC
// on a TLS route's port over UDP, slow by QUIC flow control), so the
// same questions are answered for both; a stack whose proxy does not
// serve HTTP/3 skips the h3 conditions.
// It owns the whole experiment: the scenario (Config), the runs (on
// lab.Plan), its results files (Stream rows in h2-streams.csv, RunRow
// rows in h2-runs.csv) and their aggregation (SummarizeRun, Summarize),
// the conditions table, declared once for the CLI and the report, and its
// report section (Section). The HTTP/2 client is loadgen.H2Conn's, the
// HTTP/3 one loadgen.H3Conn's, the routes lab/stack's
// (stack.HTTP2Routes).
package h2slowclient
