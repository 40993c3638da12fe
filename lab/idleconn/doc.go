// Package idleconn is the idle-connections experiment (issue 17): K
// connections that connect and send nothing (idle) or send a request
// header a byte a second and never finish it (slowloris), held against
// each server model directly and behind a proxy at its defaults
// (proxy-buffering-on, with its client_header_timeout), while /fast runs
// open loop at 8 requests a second as in slow-client. It measures how
// long the server held each connection and how it ended (closed with a
// FIN, reset, or still open when the holder's bound came), /fast's
// latency and errors meanwhile, and the app's and proxy's memory.
//
// It owns the experiment's scenario schema and flags, its runs (the grid,
// raising RLIMIT_NOFILE for the session and its children and restoring
// it, the loopback source addresses the connections come from), and its
// results files (Conn rows in idle-conns.csv, RunRow rows in
// idle-runs.csv, beside recorder's requests.csv and resource-samples.csv)
// and SummarizeRun, its runs table, declared once for the CLI and the
// report, and its report section with the held-time figure (Section);
// the holders are loadgen.IdleHolders. Every
// connection is closed by its holder at the latest Hold after it
// connected, so a run ends within its connects' time plus Hold.
package idleconn
