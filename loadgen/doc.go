// Package loadgen generates the experiments' load and measures it from the
// client side: an open-loop pacer whose requests start on schedule whatever
// earlier ones are doing (with the schedule lag measured, so a late generator
// is visible rather than silently closed-loop), slow readers that pace their
// socket reads with a small receive buffer, and per-request timings from
// net/http/httptrace. Every result is also observed into Prometheus metrics
// on a registry the caller owns.
//
// It does not decide what to run (lab), write CSV files (recorder) or serve
// anything (target).
package loadgen
