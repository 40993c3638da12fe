package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Dashboard is one generated dashboard: the file it is committed as and
// the function that builds it.
type Dashboard struct {
	File  string
	Build func() (dashboard.Dashboard, error)
}

// All returns every dashboard this package generates.
func All() []Dashboard {
	return []Dashboard{
		{File: "slowlab-experiment.json", Build: Experiment},
		{File: "slowlab-production.json", Build: Production},
	}
}

// Render returns the JSON of every dashboard keyed by file name, exactly
// as Generate writes it.
func Render() (map[string][]byte, error) {
	out := make(map[string][]byte)
	for _, d := range All() {
		built, err := d.Build()
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", d.File, err)
		}
		b, err := marshal(built)
		if err != nil {
			return nil, fmt.Errorf("marshal %s: %w", d.File, err)
		}
		out[d.File] = b
	}
	return out, nil
}

// Generate writes every dashboard's JSON into dir.
func Generate(dir string) error {
	files, err := Render()
	if err != nil {
		return err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("write dashboard: %w", err)
		}
	}
	return nil
}

// marshal is two-space indented JSON with a final newline and without
// HTML escaping, so PromQL's < and > stay readable in diffs.
func marshal(d dashboard.Dashboard) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
