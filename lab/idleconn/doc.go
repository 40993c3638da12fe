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
// A session raises RLIMIT_NOFILE for itself and its children (restored
// after) and spreads the connections over loopback source addresses; the
// holders are loadgen.IdleHolders. Every connection is closed by its
// holder at the latest Hold after it connected, so a run ends within its
// connects' time plus Hold.
package idleconn
