// Package cgroup owns slowlab's view of Linux control groups, v1, v2 and
// hybrid alike: where each controller's hierarchy is mounted (Detect, from
// the tree itself, so fixtures work), reading a cgroup's CPU, throttling
// and memory figures (Layout.Read, with the file parsers separate from the
// reading), and creating limited cgroups and moving processes into them
// (New, ExecArgv, Self, JoinFromEnv).
//
// The exporter reads through it and the lab writes through it, so both see
// the same layout: a co-mounted v1 hierarchy ("cpu,cpuacct", usually with
// "cpu" and "cpuacct" symlinks to it) is one hierarchy for both. Every
// filesystem root is a parameter, so tests point it at fixture trees under
// testdata/.
//
// It does not decide which limits a component gets (the lab does) nor how
// figures are exposed (the exporter does).
package cgroup
