// Package lab runs experiments end to end and holds what they share: the
// experiment registry (Register, Lookup: each experiment is a package,
// lab/slowclient, lab/longpoll, lab/latencygap, that registers itself),
// the scenario format (`slowlab run FILE`, --print-scenario: an
// experiment's configuration is its schema), the shared flags and how a
// session resolves them (Options, RunSession: results directory, stack,
// cgroups and limits, canonical scenario and resume checks), and the
// instruments of a run (Instrument: the exporter on the run's processes,
// resource sampling, the Prometheus targets file, the load generator's own
// cgroup, which this process enters when the load runs in it, or in which
// Instruments.RunLoad runs the load generator as a child, this process
// outside, a kill for memory failing the run as ErrKilledForMemory:
// slow-client's `slowlab slow-load`, long-poll's `slowlab probe-loop`), the
// stack pool, the host CPU guard and progress lines.
//
// What it leaves to others: the system under test is lab/stack's (app
// servers × proxies, each a registered component), child processes and
// their protocol are package child's, cgroups are package cgroup's, the
// network path of latency-gap is lab/netem's; measuring is loadgen's,
// every results file is recorder's, figures are report's.
//
// Adding an experiment: a package lab/NAME with a Config (YAML-tagged
// scenario fields, Flags, Validate, Run) and a Result (Print, AllFailed),
// registered with Register from its init; its results files, each a row
// type in recorder (one file each); its report section in report (one
// file); and one import line in cmd/slowlab/experiments.go. See
// CONTRIBUTING.md for app servers, proxies and exporter collectors.
package lab
