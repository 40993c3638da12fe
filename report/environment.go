package report

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/slowlab/slowlab/recorder"
)

// EnvironmentFile is the results file describing the machine and tools.
const EnvironmentFile = recorder.EnvironmentFile

// readEnvironment reads the sessions of dir/environment.json; it returns
// nil, nil when the file is not there.
func readEnvironment(dir string) ([]recorder.Environment, error) {
	sessions, err := recorder.ReadEnvironment(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return sessions, err
}

// environmentTable shows the first session as name/value rows and, when
// more than one session wrote the directory (an experiment resumed), how
// many did and when each started.
func environmentTable(sessions []recorder.Environment) *table {
	e := sessions[0]
	t := &table{Caption: "Environment the results were measured in (" + EnvironmentFile + ")."}
	if len(sessions) > 1 {
		t.Caption = fmt.Sprintf("Environment the results were measured in (%s): the first of its %d sessions.",
			EnvironmentFile, len(sessions))
	}
	add := func(name, value string) {
		if value == "" {
			t.Rows = append(t.Rows, []cell{text(name), {Text: "–", Title: "not recorded"}})
			return
		}
		t.Rows = append(t.Rows, []cell{text(name), text(value)})
	}
	add("experiment", e.Experiment)
	add("stack", e.Stack)
	add("started at", startedAt(e.StartedAt))
	if len(sessions) > 1 {
		add("sessions", sessionsText(sessions))
	}
	add("kernel", e.Kernel)
	add("arch", e.Arch)
	cpus := ""
	if e.CPUs > 0 {
		cpus = fmt.Sprint(e.CPUs)
	}
	add("CPUs", cpus)
	add("Go", e.Go)
	add("cgroup version", e.CgroupVersion)
	add("limits", e.Limits)
	names := make([]string, 0, len(e.Versions))
	for n := range e.Versions {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
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

// sessionsText says how many sessions wrote the results and when each
// started.
func sessionsText(sessions []recorder.Environment) string {
	starts := make([]string, len(sessions))
	for i, s := range sessions {
		if starts[i] = startedAt(s.StartedAt); starts[i] == "" {
			starts[i] = "start not recorded"
		}
	}
	return fmt.Sprintf("%d sessions wrote this directory, started at %s", len(sessions), strings.Join(starts, ", "))
}
