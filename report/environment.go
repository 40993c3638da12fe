package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// EnvironmentFile is the results file describing the machine and tools.
const EnvironmentFile = recorder.EnvironmentFile

// environmentTable shows the first session as name/value rows and, when
// more than one session wrote the directory (an experiment resumed), how
// many did and when each started. The kernel's network buffer settings,
// where the session recorded them, follow the kernel, one row per sysctl;
// a later session whose settings differ from the first's is named with
// the settings that differ, since they decide how much of a response the
// sockets hold.
func environmentTable(sessions []recorder.Environment) *table {
	e := sessions[0]
	t := &table{Caption: "Environment the results were measured in (" + EnvironmentFile + ")."}
	if len(sessions) > 1 {
		t.Caption = fmt.Sprintf("Environment the results were measured in (%s): the first of its %d sessions.",
			EnvironmentFile, len(sessions))
	}
	add := func(name, value string) {
		c := Text(value)
		if value == "" {
			c = notRecorded
		}
		t.Rows = append(t.Rows, []Cell{Text(name), c})
	}
	add("experiment", e.Experiment)
	add("stack", e.Stack)
	add("started at", startedAt(e.StartedAt))
	if len(sessions) > 1 {
		starts := make([]string, len(sessions))
		for i, s := range sessions {
			starts[i] = startText(s.StartedAt)
		}
		add("sessions", fmt.Sprintf("%d sessions wrote this directory, started at %s", len(sessions), strings.Join(starts, ", ")))
	}
	add("kernel", e.Kernel)
	if e.Net != nil {
		add("network namespace", e.Net.Namespace)
		for _, ns := range netSettings {
			t.Rows = append(t.Rows, []Cell{Text(ns.name), ns.cell(e.Net)})
		}
	}
	if changed := netChanges(sessions); changed != "" {
		add("net settings in later sessions", changed)
	}
	add("arch", e.Arch)
	add("CPUs", positive(e.CPUs))
	add("Go", e.Go)
	add("cgroup version", e.CgroupVersion)
	add("limits", e.Limits)
	for _, n := range slices.Sorted(maps.Keys(e.Versions)) {
		add(n, e.Versions[n])
	}
	add("slowlab SHA-256", e.SlowlabSHA256)
	return t
}

// startedAt shows a session's start as environment.json spells it; ""
// when it was not recorded.
func startedAt(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// startText is startedAt, or says that the start was not recorded.
func startText(t time.Time) string { return cmp.Or(startedAt(t), "start not recorded") }

// netSetting is one row of the kernel's network buffer settings: its
// sysctl name, what it means (shown on hover), its value as recorded and
// how the value reads in the table.
type netSetting struct {
	name, title string
	value       func(*recorder.NetSettings) string
	show        func(string) string
}

// netSettings are the rows of recorder.NetSettings, send side first.
var netSettings = []netSetting{
	{"net.ipv4.tcp_wmem", "a TCP socket's send buffer, bytes: min, default, and the max the kernel's autotuning may grow it to",
		func(n *recorder.NetSettings) string { return n.TCPWmem }, showTCPMem},
	{"net.core.wmem_max", "the largest send buffer a socket may set with SO_SNDBUF, bytes",
		func(n *recorder.NetSettings) string { return n.WmemMax }, showBytes},
	{"net.ipv4.tcp_notsent_lowat", "the not yet sent bytes above which a TCP socket's send queue takes no more and polls as not writable; 4294967295, the kernel's default, sets no limit",
		func(n *recorder.NetSettings) string { return n.TCPNotsentLowat }, showNotsentLowat},
	{"net.ipv4.tcp_rmem", "a TCP socket's receive buffer, bytes: min, default, and the max the kernel's autotuning may grow it to",
		func(n *recorder.NetSettings) string { return n.TCPRmem }, showTCPMem},
	{"net.core.rmem_max", "the largest receive buffer a socket may set with SO_RCVBUF, bytes",
		func(n *recorder.NetSettings) string { return n.RmemMax }, showBytes},
	{"net.ipv4.tcp_moderate_rcvbuf", "whether the kernel grows a TCP socket's receive buffer (up to tcp_rmem's max) to what the connection needs",
		func(n *recorder.NetSettings) string { return n.TCPModerateRcvbuf }, showOnOff},
	{"loopback MTU", "the MTU of the loopback interface lo, bytes",
		func(n *recorder.NetSettings) string { return positive(n.LoMTU) }, func(v string) string { return v }},
}

// positive writes n, "" (not recorded) unless it is above 0.
func positive(n int) string {
	if n <= 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// NetSettingCols are a column per row of the environment table's kernel
// network settings, headed by its name, each cell as that table shows it
// (what the setting means on hover), "–" where net does not record it.
func NetSettingCols[R any](net func(*R) *recorder.NetSettings) []Column[R] {
	cols := make([]Column[R], len(netSettings))
	for i, ns := range netSettings {
		cols[i] = Col(ns.name, func(r *R) Cell { return ns.cell(net(r)) })
	}
	return cols
}

// notRecorded is the cell of a setting the session did not record.
var notRecorded = Cell{Text: "–", Title: "not recorded"}

// cell is the setting's cell of n: its value as the table shows it, with
// what it means on hover.
func (ns netSetting) cell(n *recorder.NetSettings) Cell {
	if v := ns.value(n); v != "" {
		return Cell{Text: ns.show(v), Title: ns.title}
	}
	return notRecorded
}

// showTCPMem shows tcp_wmem or tcp_rmem as recorded, with its three sizes
// in binary units: "4096 16384 4194304 (min 4 KiB, default 16 KiB, max 4
// MiB)". A value that does not parse is shown as it is.
func showTCPMem(v string) string {
	m, err := recorder.NetSettings{TCPWmem: v}.TCPMem("tcp_wmem")
	if err != nil {
		return v
	}
	return fmt.Sprintf("%s (min %s, default %s, max %s)", v, binaryBytes(m.Min), binaryBytes(m.Default), binaryBytes(m.Max))
}

// showBytes shows a byte count as recorded and in binary units: "4194304
// (4 MiB)". A value that is not a byte count is shown as it is.
func showBytes(v string) string {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return v
	}
	return v + " (" + binaryBytes(n) + ")"
}

// showNotsentLowat shows tcp_notsent_lowat; its default, the largest
// unsigned 32-bit value, sets no limit.
func showNotsentLowat(v string) string {
	if v == "4294967295" {
		return v + " (no limit)"
	}
	return showBytes(v)
}

// showOnOff shows a boolean sysctl: "1 (on)", "0 (off)".
func showOnOff(v string) string {
	switch v {
	case "0":
		return "0 (off)"
	case "1":
		return "1 (on)"
	}
	return v
}

// binaryBytes formats n bytes in the largest binary unit it reaches: an
// exact count as a whole number ("16 KiB"), another to one decimal
// ("976.6 KiB").
func binaryBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i, size := 0, int64(1)
	for i < len(units)-1 && n >= size<<10 {
		i, size = i+1, size<<10
	}
	if n%size == 0 {
		return strconv.FormatInt(n/size, 10) + " " + units[i]
	}
	return strconv.FormatFloat(float64(n)/float64(size), 'f', 1, 64) + " " + units[i]
}

// netChanges names each later session whose network buffer settings are
// not the first session's, with the settings that differ ("session 2,
// started at T: net.ipv4.tcp_wmem 4096 16384 16777216"); "" when every
// session recorded the same settings or none did.
func netChanges(sessions []recorder.Environment) string {
	first := sessions[0].Net
	var parts []string
	for i, s := range sessions[1:] {
		if s.Net == first || s.Net != nil && first != nil && *s.Net == *first {
			continue
		}
		what := "net settings not recorded"
		if s.Net != nil {
			var diff []string
			if first == nil || s.Net.Namespace != first.Namespace {
				diff = append(diff, "network namespace "+cmp.Or(s.Net.Namespace, "not recorded"))
			}
			for _, ns := range netSettings {
				if v := ns.value(s.Net); first == nil || v != ns.value(first) {
					diff = append(diff, ns.name+" "+cmp.Or(v, "not recorded"))
				}
			}
			what = strings.Join(diff, ", ")
		}
		parts = append(parts, fmt.Sprintf("session %d, started at %s: %s", i+2, startText(s.StartedAt), what))
	}
	return strings.Join(parts, "; ")
}
