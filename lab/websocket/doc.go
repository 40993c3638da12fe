// Package websocket is the home of the websocket experiment (`slowlab
// reproduce websocket`): who holds a WebSocket's connection on each
// server model, directly and through the proxy, what the proxy's idle
// timeout does to a socket nobody uses, with and without pings, and what
// a consumer that reads slowly costs each server's memory, with and
// without its backpressure. It owns the whole experiment: the scenario
// (Config), the runs (on lab.Plan), its results files (Session rows in
// ws-sessions.csv, RunRow rows in ws-runs.csv, declared with recorder's
// schema builder) and their aggregation (SummarizeRun, Summarize), the
// conditions table, declared once and printed by the CLI and drawn in
// the report, and its report section (Section). The apps' /ws endpoints
// (appserver.ParseWSQuery) and the load generator's clients
// (loadgen.WSConsumer, loadgen.WSHolder) are their packages', tested here
// on every app as the experiment runs them.
package websocket
