// Package lab runs the published experiments end to end: it starts the stack
// under test (the embedded target and proxy as child processes, or Gunicorn
// and NGINX), drives the load generator through the experiment's matrix,
// writes the results directory, and tears every child down on every path,
// including errors and SIGINT.
//
// The long-poll experiment also watches the app's workers: each stack can
// say how many long-polls every worker holds (HeldCounter: app.py's files on
// Gunicorn, the target's gauge on the embedded stack), because a Gunicorn
// worker accepts whether or not it has a free thread, so the number that
// decides whether a probe waits is the busiest worker's, not the total.
//
// The lab owns orchestration: stacks, the run matrix, child processes,
// progress and the printed tables. Measuring is loadgen's, the CSV contract
// and aggregation are recorder's, and serving is target's.
package lab
