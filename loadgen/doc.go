// Package loadgen generates the experiments' load and measures it from the
// client side: an open-loop pacer whose requests start on schedule whatever
// earlier ones are doing (with the schedule lag measured, so a late generator
// is visible rather than silently closed-loop), slow readers that pace their
// socket reads with a small receive buffer, and per-request timings from
// net/http/httptrace (or, with ClientOptions.Lean, from a minimal HTTP/1.1
// client of its own that measures the same phases at a fraction of the
// cost, for high rates). Every result is also observed into Prometheus metrics
// on a registry the caller owns. Given a TracerProvider (ClientOptions,
// SlowReader), every request is also an OpenTelemetry client span with its
// connection phases as events and a W3C traceparent header, and sampled
// requests' histogram observations carry their trace ID as an exemplar;
// without one, tracing costs nothing. Unless told otherwise (AllowRemote),
// every connection it opens is checked, after name resolution, to go to a
// loopback address.
//
// It does not decide what to run (lab), write CSV files (recorder) or serve
// anything (target).
package loadgen
