package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// EnvironmentFile is the results file describing the machine and tools.
const EnvironmentFile = "environment.json"

// environment is what report shows of environment.json. Fields it does not
// know are ignored, so lab can add some without breaking old reports.
type environment struct {
	Experiment    string            `json:"experiment"`
	Stack         string            `json:"stack"`
	StartedAt     string            `json:"started_at"`
	Kernel        string            `json:"kernel"`
	Arch          string            `json:"arch"`
	CPUs          int               `json:"cpus"`
	Go            string            `json:"go"`
	CgroupVersion string            `json:"cgroup_version"`
	Limits        json.RawMessage   `json:"limits"` // a sentence today; an object would do too
	Versions      map[string]string `json:"versions"`
	SlowlabSHA256 string            `json:"slowlab_sha256"`
}

// readEnvironment reads dir/environment.json; it returns nil, nil when
// the file is not there.
func readEnvironment(dir string) (*environment, error) {
	path := filepath.Join(dir, EnvironmentFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var env environment
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &env, nil
}

// table returns the environment as name/value rows.
func (e *environment) table() *table {
	t := &table{Caption: "Environment the results were measured in (" + EnvironmentFile + ")."}
	add := func(name, value string) {
		if value == "" {
			t.Rows = append(t.Rows, []cell{text(name), {Text: "–", Title: "not recorded"}})
			return
		}
		t.Rows = append(t.Rows, []cell{text(name), text(value)})
	}
	add("experiment", e.Experiment)
	add("stack", e.Stack)
	add("started at", e.StartedAt)
	add("kernel", e.Kernel)
	add("arch", e.Arch)
	cpus := ""
	if e.CPUs > 0 {
		cpus = fmt.Sprint(e.CPUs)
	}
	add("CPUs", cpus)
	add("Go", e.Go)
	add("cgroup version", e.CgroupVersion)
	add("limits", limitsText(e.Limits))
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

// limitsText shows limits whether lab wrote them as a string, an object
// of per-component limits, or anything else JSON.
func limitsText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			v, _ := json.Marshal(m[k])
			parts[i] = k + ": " + strings.Trim(string(v), `"`)
		}
		return strings.Join(parts, "; ")
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}
